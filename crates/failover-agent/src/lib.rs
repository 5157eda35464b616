//! The failover agent: gates this node's Cloudflare Tunnel connector on its
//! app, its uplink and the maintenance flag, and in a shared tunnel keeps
//! exactly one connector of the pair serving. Decisions come from
//! `failover_core::node`; this crate probes, serves the HTTP API and runs the
//! connector. `main.rs` is only the command line.
//!
//! Layout (every module private; what the binary and the tests use is
//! re-exported below):
//! - `config`: the TOML, validated, and the [`Token`] read beside it.
//! - `monitor`: the driver; sleeps until the core's next due check, runs it,
//!   feeds the result back.
//! - `actions`: the one executor of the core's answers, for the monitor's
//!   decisions and the API's orders alike.
//! - `api`: the HTTP endpoints; `connection_slots`: who may hold one of its
//!   connections (per address, some kept for the peer); `protocol`: the
//!   paths, orders and answers the two agents share (a leaf: `api` and
//!   `peer` both import it).
//! - `peer`: calls to the peer agent; `peer_role`: the peer's role checked
//!   against ours once it answers; `signed_order`: who may give an order
//!   (an operator's bearer token or the peer's HMAC); `refusals`: refused
//!   orders, one log line a minute.
//! - `state`: what the monitor and the API share; `metrics`: `/metrics`.
//! - `maintenance_flag`: whether the flag is set; one that cannot be looked
//!   at counts as set.
//! - `connector`: systemd / docker / command control; `client` and `url`: outbound
//!   HTTP with deadlines; `readiness`: reading cloudflared's `/ready`.
//! - `notify`: `[notify]`'s webhooks, a bounded outbox per destination
//!   emptied in the background; `announce`: a carried-out decision made
//!   into the core's event, queued there and kept in `history` (the last
//!   20, in `state_dir`, for `/health` and `status`).
//! - `worker`: the Worker's admin API (`[worker]`); `edge_drain`: a
//!   planned stop drains this node at the Worker first, a fail-back gives
//!   it back.
//! - `status_text` (`status` for a person), `build`, `sd_notify`, `log` (one
//!   line each, control characters escaped, a threshold: `log_level`,
//!   `-v`/`-q`).
//! - `manual` (the man page) and `completion` (shell scripts): generated
//!   from the binary's command line, which `main.rs` passes in.
//!
//! Errors: what the agent acts on is a typed enum in the module that raises
//! it ([`ProbeError`], [`ControlError`], [`ConfigError`], the API's refusals)
//! and nothing branches on an error's text. Where a person is the only
//! reader (the agent cannot start, a task ended), the error is boxed:
//! [`Error`], as in mini-redis.

mod actions;
mod announce;
mod api;
mod build;
mod client;
mod completion;
mod config;
mod connection_slots;
mod connector;
mod edge_drain;
mod history;
pub mod log;
mod maintenance_flag;
mod manual;
mod metrics;
mod monitor;
mod notify;
mod origin_command;
mod peer;
mod peer_role;
mod protocol;
mod readiness;
mod refusals;
mod sd_notify;
mod signed_order;
mod state;
mod status_text;
mod url;
mod worker;

pub use api::bind;
pub use client::{Client, ProbeError, Response};
pub use completion::script as completion_script;
pub use config::{parse_duration, Config, ConfigError, Token, DEFAULT_PATH};
pub use connector::{ConnectorControl, ControlConfig, ControlError, DockerHost, Pending};
pub use maintenance_flag::unreadable as maintenance_flag_unreadable;
pub use manual::{render as render_manual, SECTIONS as MANUAL_SECTIONS};
pub use origin_command::{origin_command, OriginMode, OriginOrder};
pub use sd_notify::watchdog_period;
pub use signed_order::{sign as sign_order, NONCE_LEN, SCHEME as ORDER_SCHEME};
pub use status_text::render as render_status;
pub use url::Url;

/// An error only a person reads: it ends the agent, or a command.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

use std::process::ExitCode;
use std::sync::Arc;

/// The agent's runtime: one thread is plenty, and keeps the API, the
/// monitor and the connector commands in one order of events.
pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}").into())
}

/// `failover-agent run`: serves until a signal; the exit status says how
/// it ended.
pub fn run(config: Config, token: Token) -> ExitCode {
    let result = runtime().and_then(|rt| rt.block_on(serve(config, token)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log::error(&e.to_string());
            ExitCode::FAILURE
        }
    }
}

/// Binds `listen` and runs until SIGTERM or Ctrl-C.
async fn serve(config: Config, token: Token) -> Result<(), Error> {
    let listener =
        api::bind(config.listen).map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    serve_on(config, token, listener, shutdown_signal()).await
}

/// Runs the agent on a bound listener until `shutdown` completes (tests
/// pass a listener on port 0 and a channel of their own).
pub async fn serve_on(
    config: Config,
    token: Token,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), Error> {
    let control = connector::from_config(
        &config.control,
        config.command_timeout,
        config.probe_timeout,
    );
    serve_with(config, token, control, listener, shutdown).await
}

/// [`serve_on`] with a connector controller of the caller's: tests run the
/// agent in process, on paused time, with a controller that runs no
/// process.
pub async fn serve_with(
    config: Config,
    token: Token,
    control: Box<dyn ConnectorControl>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), Error> {
    let client = client::Client::new()?;
    let destinations = config.notify_destinations().map_err(|e| e.to_string())?;
    let worker_token = config.worker_token().map_err(|e| e.to_string())?;
    log::info(&format!(
        "failover-agent {} ({}) listening on {} as {} ({}); connector via {}; poll every {} ms \
         (take over after {} misses), fail back after {} good egress checks {} ms apart{}",
        build::VERSION,
        build::REVISION,
        config.listen,
        config.role.as_str(),
        config.role.topology().as_str(),
        control.describe(),
        config.timing.poll_interval_ms,
        config.timing.takeover_after,
        config.timing.failback_after,
        config.timing.failback_interval_ms,
        config.app.as_ref().map_or(String::new(), |a| format!(
            "; app {} every {} ms (down after {}, up after {})",
            a.health_url, a.timing.interval_ms, a.timing.fall, a.timing.rise
        ))
    ));
    let notifying = if destinations.is_empty() {
        "no [notify]".to_string()
    } else {
        let formats: Vec<&str> = destinations.iter().map(|d| d.format.as_str()).collect();
        format!("decisions told to {} ([notify])", formats.join(", "))
    };
    log::info(&notifying);
    let shared = Arc::new(state::Shared::new(
        config,
        token,
        client,
        control,
        destinations,
        worker_token,
    ));
    shared.outbox.spawn(&shared.client);
    let mut api = tokio::spawn(api::serve(listener, Arc::clone(&shared)));
    let mut monitor = tokio::spawn(monitor::run(Arc::clone(&shared)));
    // Shared tunnel: the peer's role against ours, once it answers. It
    // decides nothing; it ends on its own and is never waited for.
    if let Some(peer_agent) = shared.config.peer_agent_url.clone() {
        let shared = Arc::clone(&shared);
        tokio::spawn(async move { peer_role::check(&shared, &peer_agent).await });
    }
    sd_notify::notify("READY=1");
    // Both tasks run forever; one that ends (a panic) leaves an agent that
    // answers /health but decides nothing, or decides without an API: exit
    // non-zero and let systemd restart it whole.
    let ended = |task: &str, result: Result<(), tokio::task::JoinError>| match result {
        Err(e) => format!("the {task} task failed: {e}; exiting so the agent is restarted"),
        Ok(()) => format!("the {task} task ended; exiting so the agent is restarted"),
    };
    let result: Result<(), Error> = tokio::select! {
        () = shutdown => {
            // The connector is left as it is: restarting the agent must not
            // drop the tunnel.
            log::info("stopping on signal; the connector is left as it is");
            Ok(())
        }
        r = &mut api => Err(ended("API", r).into()),
        r = &mut monitor => Err(ended("monitor", r).into()),
    };
    sd_notify::notify("STOPPING=1");
    api.abort();
    monitor.abort();
    // Nothing decides any more; what was decided may still be told.
    let queued = shared.outbox.counts().queued;
    if queued > 0 {
        let grace = notify::STOP_GRACE;
        log::info(&format!(
            "{queued} notification(s) queued: waiting up to {} s for their receivers",
            grace.as_secs()
        ));
        match shared.outbox.finish(grace).await {
            0 => log::info("every queued notification delivered (or refused) before stopping"),
            left => log::warn(&format!(
                "{left} notification(s) left undelivered on stopping ({}): their receivers did \
                 not take them within {} s; the history in state_dir keeps the decisions",
                shared.outbox.waiting(),
                grace.as_secs()
            )),
        }
    }
    result
}

/// `check-config`'s look at the connector's controller, one finding a
/// line (warnings start with `warning: `): with `control = "docker"`, the
/// container as the Engine reports it; nothing for the others.
pub fn check_control(config: &Config) -> Vec<String> {
    let connector::ControlConfig::Docker { container, host } = &config.control else {
        return Vec::new();
    };
    match runtime() {
        Ok(rt) => rt.block_on(connector::check_docker(
            container,
            host,
            config.probe_timeout,
        )),
        Err(e) => vec![format!("warning: {e}")],
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
