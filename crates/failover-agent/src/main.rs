//! `failover-agent`: keeps one Cloudflare Tunnel connector of an
//! active/standby pair serving. Decisions come from `failover_core::node`;
//! this binary probes, serves the HTTP API and runs the connector.
//!
//! Layout: [`config`] (the TOML, validated), [`monitor`] (the loop feeding
//! the machine), [`api`] (HTTP endpoints), [`metrics`], [`connector`]
//! (systemd / command control), [`client`] and [`url`] (outbound HTTP with
//! deadlines), [`readiness`] (reading cloudflared's `/ready`), [`state`]
//! (what loop and API share), [`sd_notify`], [`log`].

mod api;
mod client;
mod config;
mod connector;
mod log;
mod metrics;
mod monitor;
mod readiness;
mod sd_notify;
mod state;
mod url;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use config::Config;

const USAGE: &str =
    "usage: failover-agent [--config PATH] <run | check-config | status | maintenance on|off>
  run            run the agent (systemd: Type=notify)
  check-config   validate the config and exit
  status         print the local agent's /health
  maintenance    on: never start the connector here (and stop it); off: resume
default config: /etc/failover-agent/config.toml";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut config_path = PathBuf::from(config::DEFAULT_PATH);
    let mut words = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--config" | "-c" => match it.next() {
                Some(path) => config_path = PathBuf::from(path),
                None => return usage("--config needs a path"),
            },
            "--help" | "-h" | "help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => words.push(other),
        }
    }
    let loaded = Config::load(&config_path).and_then(|config| {
        config
            .fits_watchdog(sd_notify::watchdog_period())
            .map(|()| config)
    });
    let config = match loaded {
        Ok(config) => config,
        Err(e) => {
            log::error(&e.to_string());
            return ExitCode::from(2);
        }
    };
    match words.as_slice() {
        ["run"] => run(config),
        ["check-config"] => {
            println!(
                "config ok: role={} listen={} peer={} connector={} poll_interval={}ms takeover_after={} \
                 standdown_after={} failback_interval={}ms failback_after={} maintenance_flag={} token_file={}",
                config.role.as_str(),
                config.listen,
                config.peer_agent_url,
                connector::from_config(&config.control, config.command_timeout).describe(),
                config.timing.poll_interval_ms,
                config.timing.takeover_after,
                config.timing.standdown_after,
                config.timing.failback_interval_ms,
                config.timing.failback_after,
                config.maintenance_flag.display(),
                config.token_file.display()
            );
            ExitCode::SUCCESS
        }
        ["status"] => status(&config),
        ["maintenance", "on"] => maintenance(&config.maintenance_flag, true),
        ["maintenance", "off"] => maintenance(&config.maintenance_flag, false),
        [] => usage("missing command"),
        other => usage(&format!("unknown command {:?}", other.join(" "))),
    }
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("failover-agent: {problem}\n{USAGE}");
    ExitCode::from(2)
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

fn run(config: Config) -> ExitCode {
    let result = runtime().and_then(|rt| rt.block_on(serve(config)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log::error(&e);
            ExitCode::FAILURE
        }
    }
}

async fn serve(config: Config) -> Result<(), String> {
    let client = client::Client::new()?;
    let control = connector::from_config(&config.control, config.command_timeout);
    let listener =
        api::bind(config.listen).map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    log::info(&format!(
        "listening on {} as {}; connector via {}; poll every {} ms (take over after {} misses), \
         fail back after {} good egress checks {} ms apart",
        config.listen,
        config.role.as_str(),
        control.describe(),
        config.timing.poll_interval_ms,
        config.timing.takeover_after,
        config.timing.failback_after,
        config.timing.failback_interval_ms
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
        () = shutdown_signal() => {
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

fn status(config: &Config) -> ExitCode {
    let mut target = config.listen;
    if target.ip().is_unspecified() {
        target.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let result = runtime().and_then(|rt| {
        rt.block_on(async {
            let url = url::Url::parse(&format!("http://{target}/health"))?;
            client::Client::new()?
                .get(&url, Duration::from_secs(5))
                .await
        })
    });
    match result {
        Ok(r) if r.status == 200 => {
            println!("{}", String::from_utf8_lossy(&r.body));
            ExitCode::SUCCESS
        }
        Ok(r) => {
            eprintln!("failover-agent: /health answered HTTP {}", r.status);
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("failover-agent: agent at {target} not reachable: {e}");
            ExitCode::FAILURE
        }
    }
}

fn maintenance(flag: &Path, on: bool) -> ExitCode {
    let result = if on {
        let created = match flag.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir),
            _ => Ok(()),
        };
        created.and_then(|()| {
            std::fs::write(flag, b"maintenance: this node does not serve the tunnel\n")
        })
    } else {
        match std::fs::remove_file(flag) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    };
    match result {
        Ok(()) if on => {
            println!(
                "maintenance on ({}): within one poll the agent stops the local connector and will not start it",
                flag.display()
            );
            ExitCode::SUCCESS
        }
        Ok(()) => {
            println!(
                "maintenance off ({}): a primary fails back after its good egress checks (about two fail-back periods)",
                flag.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("failover-agent: cannot change {}: {e}", flag.display());
            ExitCode::FAILURE
        }
    }
}
