//! The failover agent: gates this node's Cloudflare Tunnel connector on its
//! app, its uplink and the maintenance flag, and in a shared tunnel keeps
//! exactly one connector of the pair serving. Decisions come from
//! `failover_core::node`; this crate probes, serves the HTTP API and runs the
//! connector. `main.rs` is only the command line.
//!
//! Layout: [`config`] (the TOML, validated), [`monitor`] (the driver that
//! runs the checks the core schedules), [`api`] (HTTP endpoints),
//! [`metrics`], [`connector`] (systemd / command control), [`peer`] (calls
//! to the peer agent), [`client`] and [`url`] (outbound HTTP with deadlines),
//! [`readiness`] (reading cloudflared's `/ready`), [`state`] (what loop and
//! API share, and how decisions are carried out), [`status_text`] (`status`
//! for a person), [`signed_order`] (who may give an order: an operator's
//! bearer token or the peer's HMAC), [`refusals`] (refused orders, one log
//! line a minute), [`build`], [`sd_notify`], [`log`] (one line each, control
//! characters escaped).

pub mod api;
pub mod build;
pub mod client;
pub mod config;
pub mod connector;
pub mod log;
pub mod metrics;
pub mod monitor;
pub mod peer;
pub mod readiness;
pub mod refusals;
pub mod sd_notify;
pub mod signed_order;
pub mod state;
pub mod status_text;
pub mod url;

use std::process::ExitCode;
use std::sync::Arc;

use config::Config;

pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

pub fn run(config: Config) -> ExitCode {
    let result = runtime().and_then(|rt| rt.block_on(serve(config)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log::error(&e);
            ExitCode::FAILURE
        }
    }
}

/// Binds `listen` and runs until SIGTERM or Ctrl-C.
pub async fn serve(config: Config) -> Result<(), String> {
    let listener =
        api::bind(config.listen).map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    serve_on(config, listener, shutdown_signal()).await
}

/// Runs the agent on a bound listener until `shutdown` completes (tests
/// pass a listener on port 0 and a channel of their own).
pub async fn serve_on(
    config: Config,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), String> {
    let client = client::Client::new()?;
    let control = connector::from_config(&config.control, config.command_timeout);
    log::info(&format!(
        "failover-agent {} ({}) listening on {} as {} ({}); connector via {}; poll every {} ms \
         (take over after {} misses), fail back after {} good egress checks {} ms apart{}",
        build::VERSION,
        build::REVISION,
        config.listen,
        config.role.as_str(),
        config.topology.as_str(),
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
    let shared = Arc::new(state::Shared::new(config, client, control));
    let mut api = tokio::spawn(api::serve(listener, Arc::clone(&shared)));
    let mut monitor = tokio::spawn(monitor::run(Arc::clone(&shared)));
    sd_notify::notify("READY=1");
    // Both tasks run forever; one that ends (a panic) leaves an agent that
    // answers /health but decides nothing, or decides without an API: exit
    // non-zero and let systemd restart it whole.
    let ended = |task: &str, result: Result<(), tokio::task::JoinError>| match result {
        Err(e) => format!("the {task} task failed: {e}; exiting so the agent is restarted"),
        Ok(()) => format!("the {task} task ended; exiting so the agent is restarted"),
    };
    let result = tokio::select! {
        () = shutdown => {
            // The connector is left as it is: restarting the agent must not
            // drop the tunnel.
            log::info("stopping on signal; the connector is left as it is");
            Ok(())
        }
        r = &mut api => Err(ended("API", r)),
        r = &mut monitor => Err(ended("monitor", r)),
    };
    sd_notify::notify("STOPPING=1");
    api.abort();
    monitor.abort();
    result
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
