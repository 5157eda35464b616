//! `failover-agent`: the command line. Everything it runs lives in the
//! library (`failover_agent`); this file only reads argv.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{ArgAction, CommandFactory, Parser, Subcommand, ValueEnum};
use failover_agent::{
    completion_script, log, origin_command, parse_duration, render_manual, render_status, run,
    runtime, watchdog_period, Client, Config, OriginMode, OriginOrder, Token, Url, DEFAULT_PATH,
};

const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("FAILOVER_AGENT_REVISION"),
    ")"
);

/// Gates this node's Cloudflare Tunnel connector (cloudflared): stops it
/// when the node's app is down, its uplink is lost or the maintenance flag
/// is set, and starts it again once the node can serve. With a tunnel per
/// node (recommended) the Worker moves traffic between the nodes' tunnels;
/// in a shared tunnel the agent pair keeps exactly one connector serving.
#[derive(Parser)]
#[command(
    name = "failover-agent",
    version = VERSION,
    about,
    long_about = None,
    after_help = "Log lines go to stderr, to the journal under systemd, at journald's \
                  priorities: error, warning, notice, info (the default: decisions and \
                  transitions), debug (every check). The config's log_level sets the level; \
                  each -v logs one level more, each -q one less (errors always)."
)]
struct Cli {
    /// The agent's config file (TOML)
    #[arg(
        short,
        long,
        global = true,
        value_name = "PATH",
        default_value = DEFAULT_PATH
    )]
    config: PathBuf,
    /// Log one level more than log_level (repeatable: -vv); -v from info
    /// is debug, every check
    #[arg(short, long, global = true, action = ArgAction::Count, conflicts_with = "quiet")]
    verbose: u8,
    /// Log one level less than log_level (repeatable): -q notices and
    /// worse, -qq warnings, -qqq errors only
    #[arg(short, long, global = true, action = ArgAction::Count)]
    quiet: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the agent (under systemd: Type=notify, WatchdogSec)
    Run,
    /// Validate the config and print the effective settings, one `key =
    /// value` a line (never the token); exit 2 on an error, which names the
    /// key
    CheckConfig {
        /// Do not try egress.url (ExecStartPre at boot, before the network)
        #[arg(long)]
        no_probe: bool,
    },
    /// Show the local agent's state, read from its /health (no token needed)
    Status {
        /// Print the raw /health JSON instead
        #[arg(long)]
        json: bool,
    },
    /// on: never start the connector here, and stop it (handing the tunnel
    /// over first in a shared tunnel); off: resume. Then asks the running
    /// agent whether it sees the change: exit 1 when it does not (or, for
    /// on, when no agent answers)
    Maintenance {
        #[arg(value_enum)]
        state: OnOff,
    },
    /// Set an origin's override at the Worker, or show them all: drain (no
    /// new requests but pinned ones), disable (only when every other origin
    /// is down), force-up (served whatever its health), auto (health
    /// decides). Needs [worker] url and admin_token_file in the config
    Origin {
        #[arg(value_enum)]
        mode: OriginArg,
        /// The origin's name in the Worker's ORIGINS (not with show)
        #[arg(
            value_name = "NAME",
            required_if_eq_any([("mode", "drain"), ("mode", "disable"), ("mode", "force-up"), ("mode", "auto")])
        )]
        name: Option<String>,
        /// Back to auto by itself after this long (the override's ttl_s),
        /// e.g. 30m
        #[arg(long = "for", value_name = "DURATION", value_parser = duration_arg)]
        for_: Option<Duration>,
        /// With drain: requests pinned to the origin keep going to it this
        /// long (drain_s), e.g. 5m
        #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
        drain: Option<Duration>,
    },
    /// Print a completion script for a shell
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `failover-agent manpage > failover-agent.1`
    Manpage,
}

#[derive(Clone, Copy, ValueEnum)]
enum OnOff {
    On,
    Off,
}

/// `failover-agent origin`'s first word.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OriginArg {
    Drain,
    Disable,
    ForceUp,
    Auto,
    Show,
}

/// `--for 30m`, `--drain 1m30s`: the config's duration forms.
fn duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Run) {
        quiet_on_closed_pipe();
    }
    let shift = i16::from(cli.verbose) - i16::from(cli.quiet);
    // Before the config is read, its errors are logged at the flags' level.
    log::set_threshold(log::Level::Info.shifted(shift));
    let with_level = |config: &Config| log::set_threshold(config.log_level.shifted(shift));
    match cli.command {
        Command::Run => match load(&cli.config) {
            Ok((config, token)) => {
                with_level(&config);
                run(config, token)
            }
            Err(code) => code,
        },
        Command::CheckConfig { no_probe } => match load(&cli.config) {
            Ok((config, _token)) => check_config(&cli.config, &config, !no_probe),
            Err(code) => code,
        },
        Command::Status { json } => match settings(&cli.config) {
            Ok(config) => status(&config, json),
            Err(code) => code,
        },
        Command::Maintenance { state } => match settings(&cli.config) {
            Ok(config) => maintenance(&config, matches!(state, OnOff::On)),
            Err(code) => code,
        },
        Command::Origin {
            mode,
            name,
            for_,
            drain,
        } => {
            let order = match (mode, name) {
                (OriginArg::Show, Some(_)) | (OriginArg::Show, None)
                    if for_.is_some() || drain.is_some() =>
                {
                    usage_error("origin show takes no --for or --drain")
                }
                (OriginArg::Show, Some(name)) => usage_error(&format!(
                    "origin show takes no name (got {name:?}); it lists every override"
                )),
                (OriginArg::Show, None) => OriginOrder::Show,
                (mode, name) => {
                    if drain.is_some() && mode != OriginArg::Drain {
                        usage_error("--drain goes with origin drain only");
                    }
                    OriginOrder::Set {
                        mode: match mode {
                            OriginArg::Drain => OriginMode::Drain,
                            OriginArg::Disable => OriginMode::Disable,
                            OriginArg::ForceUp => OriginMode::ForceUp,
                            _ => OriginMode::Auto,
                        },
                        name: name.unwrap_or_default(),
                        ttl: for_,
                        drain,
                    }
                }
            };
            match settings(&cli.config) {
                Ok(config) => origin_command(&config, &order),
                Err(code) => code,
            }
        }
        Command::Completions { shell } => {
            match completion_script(shell, &mut Cli::command(), "failover-agent") {
                Ok(script) => {
                    print!("{script}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("failover-agent: cannot write the {shell} completion: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Manpage => match render_manual(Cli::command(), &mut std::io::stdout()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("failover-agent: cannot write the man page: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

/// A command line clap accepted but that means nothing: its usage error,
/// exit status 2.
fn usage_error(message: &str) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::ArgumentConflict, message)
        .exit()
}

/// A command whose output goes to `| head` or `| grep -q` ends quietly when
/// the reader goes away, as other command-line tools do, instead of
/// panicking on the write (Rust ignores SIGPIPE). Not for `run`: the daemon
/// must see EPIPE on a closed socket, not die of it.
fn quiet_on_closed_pipe() {
    // SAFETY: called once at start-up, before any thread exists; SIG_DFL is
    // a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The whole config with its token and, under systemd's watchdog, the check
/// that every step fits it. Exit status 2 on an error.
fn load(path: &Path) -> Result<(Config, Token), ExitCode> {
    let loaded = Config::load(path).and_then(|(config, token)| {
        config
            .fits_watchdog(watchdog_period())
            .map(|()| (config, token))
    });
    loaded.map_err(|e| {
        log::error(&e.to_string());
        ExitCode::from(2)
    })
}

/// The settings without the token: an operator's `status` and
/// `maintenance` need not read the root-only token file.
fn settings(path: &Path) -> Result<Config, ExitCode> {
    Config::load_settings(path).map_err(|e| {
        log::error(&e.to_string());
        ExitCode::from(2)
    })
}

/// The effective settings, as TOML (the lines are `key = value`, the rest
/// `#` comments), then one try of egress.url.
fn check_config(path: &Path, config: &Config, probe: bool) -> ExitCode {
    println!("# {}: valid; the effective settings:", path.display());
    print!("{}", config.describe());
    if let Some(warning) = failover_agent::maintenance_flag_unreadable(&config.maintenance_flag) {
        println!("# warning: {warning}");
    }
    for line in failover_agent::check_control(config) {
        println!("# {line}");
    }
    if probe {
        probe_egress(config);
    }
    ExitCode::SUCCESS
}

/// One try of egress.url, reported but never fatal (the network may not be
/// up yet): a redirect would fail every egress check silently otherwise.
fn probe_egress(config: &Config) {
    let url = &config.egress_url;
    let result = runtime().and_then(|rt| {
        rt.block_on(async { Ok(Client::new()?.get(url, config.probe_timeout).await?) })
    });
    match result {
        Ok(r) if (200..300).contains(&r.status) => {
            println!("# egress.url {url}: HTTP {} (good)", r.status)
        }
        Ok(r) if (300..400).contains(&r.status) => println!(
            "# warning: egress.url {url} redirects (HTTP {} to {}): every egress check will \
             fail; give the URL it redirects to, one that answers 2xx itself",
            r.status,
            r.location
                .as_deref()
                .map_or_else(|| "no Location".to_string(), log::quoted)
        ),
        Ok(r) => println!(
            "# warning: egress.url {url} answered HTTP {}: egress checks fail until it answers 2xx",
            r.status
        ),
        Err(e) => println!("# warning: egress.url {url} not reachable now: {e}"),
    }
}

/// The local agent's address: `listen`, on loopback when it listens on
/// every address.
fn local_agent(config: &Config) -> std::net::SocketAddr {
    let mut target = config.listen;
    if target.ip().is_unspecified() {
        target.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    target
}

/// The local agent's `/health`, as it answers.
fn local_health(
    target: std::net::SocketAddr,
) -> Result<failover_agent::Response, failover_agent::Error> {
    runtime().and_then(|rt| {
        rt.block_on(async {
            let url = Url::parse(&format!("http://{target}/health"))?;
            Ok(Client::new()?.get(&url, Duration::from_secs(5)).await?)
        })
    })
}

fn status(config: &Config, json: bool) -> ExitCode {
    let target = local_agent(config);
    let result = local_health(target);
    match result {
        Ok(r) if r.status == 200 && json => {
            println!("{}", String::from_utf8_lossy(&r.body));
            ExitCode::SUCCESS
        }
        Ok(r) if r.status == 200 => match serde_json::from_slice(&r.body) {
            Ok(health) => {
                println!("{}", render_status(&health, &target.to_string()));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("failover-agent: /health at {target} is not JSON: {e}");
                ExitCode::FAILURE
            }
        },
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

/// `maintenance on|off`: changes the flag, then asks the running agent
/// whether it sees the change (`/health`'s `maintenance_flag_set`, its own
/// look at this moment): an agent that looks for the flag elsewhere (another
/// config) or cannot look at it fails the command, since the node would go
/// on as before. No agent answering: `on` fails too (nothing stops the
/// connector now; an agent started later honours the flag), `off` only
/// warns (nothing is held back by a flag that is gone).
fn maintenance(config: &Config, on: bool) -> ExitCode {
    let flag = &config.maintenance_flag;
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
    if let Err(e) = result {
        eprintln!("failover-agent: cannot change {}: {e}", flag.display());
        return ExitCode::FAILURE;
    }
    let target = local_agent(config);
    let seen = match local_health(target) {
        Ok(r) if r.status == 200 => serde_json::from_slice::<serde_json::Value>(&r.body)
            .ok()
            .and_then(|health| health.get("maintenance_flag_set")?.as_bool())
            .ok_or_else(|| {
                format!(
                    "the agent at {target} does not say whether it sees the flag (HTTP 200 \
                     without maintenance_flag_set: an agent older than this command?)"
                )
            }),
        Ok(r) => Err(format!(
            "the agent at {target} answered /health with HTTP {}",
            r.status
        )),
        Err(e) => Err(format!("no agent answers at {target} ({e})")),
    };
    match seen {
        Ok(sees) if sees == on && on => {
            println!(
                "maintenance on ({}): the running agent sees the flag; within one poll it \
                 stops the local connector (in a shared tunnel, once the peer's is ready) and \
                 will not start it",
                flag.display()
            );
            ExitCode::SUCCESS
        }
        Ok(sees) if sees == on => {
            println!(
                "maintenance off ({}): the running agent sees no flag; the connector starts \
                 again after its good egress checks (about two fail-back periods)",
                flag.display()
            );
            ExitCode::SUCCESS
        }
        Ok(_) if on => {
            eprintln!(
                "failover-agent: the running agent at {target} does not see the flag at {} \
                 (written): it looks for it elsewhere (is it running with another config than \
                 this command's?) or cannot look there; this node goes on serving",
                flag.display()
            );
            ExitCode::FAILURE
        }
        Ok(_) => {
            eprintln!(
                "failover-agent: the running agent at {target} still sees a maintenance flag \
                 with {} removed: it looks for it elsewhere (is it running with another config \
                 than this command's?) or cannot tell (a flag it cannot look at counts as set; \
                 `journalctl -u failover-agent`); this node stays out of service",
                flag.display()
            );
            ExitCode::FAILURE
        }
        Err(why) if on => {
            eprintln!(
                "failover-agent: maintenance flag written ({}), but {why}: nothing stops the \
                 local connector now; an agent started later will not start it",
                flag.display()
            );
            ExitCode::FAILURE
        }
        Err(why) => {
            eprintln!(
                "failover-agent: warning: maintenance flag removed ({}), but {why}: the \
                 connector starts only once an agent runs",
                flag.display()
            );
            ExitCode::SUCCESS
        }
    }
}
