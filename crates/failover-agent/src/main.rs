//! `failover-agent`: the command line. Everything it runs lives in the
//! library (`failover_agent`); this file only reads argv.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use failover_agent::config::{self, Config};
use failover_agent::{client, connector, log, run, runtime, sd_notify, url};

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
                "config ok: topology={} role={} listen={} peer={} connector={} poll_interval={}ms \
                 takeover_after={} standdown_after={} failback_interval={}ms failback_after={} \
                 maintenance_flag={} token_file={} app={}",
                config.topology.as_str(),
                config.role.as_str(),
                config.listen,
                config
                    .peer_agent_url
                    .as_ref()
                    .map_or("none".to_string(), ToString::to_string),
                connector::from_config(&config.control, config.command_timeout).describe(),
                config.timing.poll_interval_ms,
                config.timing.takeover_after,
                config.timing.standdown_after,
                config.timing.failback_interval_ms,
                config.timing.failback_after,
                config.maintenance_flag.display(),
                config.token_file.display(),
                config.app.as_ref().map_or("none".to_string(), |a| format!(
                    "{} every {}ms fall={} rise={}",
                    a.health_url, a.timing.interval_ms, a.timing.fall, a.timing.rise
                ))
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
