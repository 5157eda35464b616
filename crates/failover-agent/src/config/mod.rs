//! The TOML config, parsed once into typed values. Every error names the key,
//! the bad value and what would be accepted; nothing is bound or started
//! before the whole file is valid.
//!
//! - `duration`: `"1m30s"` and friends, both ways.
//! - `suggest`: where a TOML syntax error is (line, column) and which known
//!   key a misspelt one was meant to be.
//! - `describe`: the effective settings, one `key = value` a line
//!   (`check-config`).
//! - `sandbox`: where the packaged unit hides files from the agent.

mod describe;
mod duration;
mod notify;
mod sandbox;
mod secret_file;
mod suggest;
mod worker;

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use failover_core::node::{AppTiming, Role, Timing, Topology};
use toml::{Table, Value};

use crate::connector::{self, ControlConfig, DockerHost};
use crate::log::Level;
use crate::url::Url;
pub(crate) use duration::format_ms;
use duration::parse_ms;

/// A duration as the config and the command line write it (`"1m30s"`,
/// `"30s"`, `"500ms"`, `"2h"`, or a bare number of seconds), 10 ms to 24 h.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let ms = match text.parse::<u64>() {
        Ok(secs) => secs.checked_mul(1000).ok_or("too long")?,
        Err(_) => parse_ms(text).map_err(|e| e.to_string())?,
    };
    if !(10..=MAX_DURATION_MS).contains(&ms) {
        return Err("out of range: from 10ms to 24h".to_string());
    }
    Ok(Duration::from_millis(ms))
}

pub const DEFAULT_PATH: &str = "/etc/failover-agent/config.toml";
/// Shared tunnel: the peer agent must reach the API.
pub(crate) const DEFAULT_LISTEN: &str = "0.0.0.0:8790";
/// Tunnel per node: no peer calls this agent; only the operator's `status`
/// and local scrapes, so nothing off the host may reach it unless asked.
pub(crate) const DEFAULT_LISTEN_PER_NODE: &str = "127.0.0.1:8790";
/// Shorter tokens are refused: the token keys the peers' HMAC and guards
/// `POST /failover/*` from anyone who can reach `listen`.
pub(crate) const MIN_TOKEN_CHARS: usize = 16;
pub(crate) const DEFAULT_FLAG: &str = "/var/lib/failover-agent/maintenance";
/// The unit's `StateDirectory=`: the one place the sandboxed agent writes.
pub(crate) const DEFAULT_STATE_DIR: &str = "/var/lib/failover-agent";
pub(crate) const DEFAULT_UNIT: &str = "cloudflared.service";
pub(crate) const DEFAULT_EGRESS_URL: &str = "https://www.cloudflare.com/cdn-cgi/trace";

/// The longest duration any setting takes: a longer one is a typo, and
/// the sums and doublings of the timeouts must not overflow.
const MAX_DURATION_MS: u64 = 24 * 3_600_000;

#[derive(Debug)]
pub struct ConfigError {
    /// The setting (`connector.unit`), `(file)` for the file as a whole,
    /// `(syntax)` for a TOML syntax error.
    pub key: String,
    pub reason: String,
    /// The config file, once [`Config::load_settings`] knows it.
    pub file: Option<PathBuf>,
    /// Line and column (from 1) of a TOML syntax error.
    pub at: Option<(usize, usize)>,
}

impl ConfigError {
    fn in_file(mut self, path: &Path) -> ConfigError {
        self.file = Some(path.to_path_buf());
        self
    }
}

/// `config error: FILE:LINE:COLUMN: reason` for a syntax error (the form
/// editors jump to), `config error: FILE: `key`: reason` otherwise.
impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("config error: ")?;
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if let Some((line, column)) = self.at {
                write!(f, ":{line}:{column}")?;
            }
            f.write_str(": ")?;
        } else if let Some((line, column)) = self.at {
            write!(f, "line {line}, column {column}: ")?;
        }
        if self.at.is_none() {
            write!(f, "`{}`: ", self.key)?;
        }
        f.write_str(&self.reason)
    }
}

fn err(key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.to_string(),
        reason: reason.into(),
        file: None,
        at: None,
    }
}

/// The `[app]` section: the local service the connector serves.
#[derive(Clone, Debug)]
pub struct AppConfig {
    pub health_url: Url,
    pub timing: AppTiming,
}

/// The shared secret from `token_file`: it keys the peers' HMAC and is an
/// operator's bearer token. Kept out of [`Config`] (which `status` and
/// `maintenance` load without it) and out of `Debug` output.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// A token given in code (tests); [`Config::load`] reads and checks the
    /// file's.
    pub fn new(secret: impl Into<String>) -> Token {
        Token(secret.into())
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    /// `Role::Node` in the tunnel-per-node topology (the role gives the
    /// topology: [`Role::topology`]).
    pub role: Role,
    pub listen: SocketAddr,
    pub token_file: PathBuf,
    pub maintenance_flag: PathBuf,
    /// `state_dir`: where the agent keeps what outlives it (the decision
    /// history).
    pub state_dir: PathBuf,
    pub timing: Timing,
    /// Bound on every outbound call: a hung peer costs at most this.
    pub probe_timeout: Duration,
    pub command_timeout: Duration,
    /// The LOCAL cloudflared's `/ready` (its metrics endpoint).
    pub connector_ready_url: Url,
    pub control: ControlConfig,
    /// The peer agent (shared tunnel); `/connector/ready`, `/failover/stop`
    /// and `/failover/handover` live there.
    pub peer_agent_url: Option<Url>,
    /// Optional: the peer cloudflared's `/ready`, reachable directly.
    pub peer_connector_ready_url: Option<Url>,
    pub egress_url: Url,
    pub egress_tcp: Option<String>,
    pub app: Option<AppConfig>,
    /// The least severe line the agent logs (`-v`/`-q` move it).
    pub log_level: Level,
    /// `name`: this node in notifications and the history (its host name
    /// by default).
    pub name: String,
    /// `[notify]` / `[[notify]]`: where decisions are told; the files they
    /// name are read by [`Config::load`] and when the agent starts.
    pub(crate) notify: Vec<crate::notify::Target>,
    /// `[worker]`: the Worker's admin API (drain before a planned stop,
    /// `failover-agent origin`).
    pub(crate) worker: Option<crate::worker::Settings>,
    /// `connector.metrics_url`: the local cloudflared's Prometheus
    /// metrics (requests in flight, for the drain); by default
    /// `ready_url`'s host and port with `/metrics`.
    pub(crate) connector_metrics_url: Url,
}

impl Config {
    /// The longest step of a monitor turn between two watchdog pings: a
    /// connector command or the wait for one the API runs, or asking the peer
    /// to stand down (the peer's stop plus the way there).
    pub fn longest_step(&self) -> Duration {
        (self.command_timeout + self.probe_timeout).max(self.probe_timeout * 2)
    }

    /// Under systemd's watchdog (`half` is half of `WatchdogSec=`), every
    /// step must fit in half the watchdog period, or a slow but healthy
    /// turn gets the agent killed exactly when systemd is slow.
    pub fn fits_watchdog(&self, half: Option<Duration>) -> Result<(), ConfigError> {
        let Some(half) = half else {
            return Ok(());
        };
        let step = self.longest_step();
        if step > half {
            return Err(err(
                "connector.command_timeout",
                format!(
                    "command_timeout + probe_timeout ({} ms) must fit in half of the unit's \
                     WatchdogSec ({} ms): lower them or raise WatchdogSec",
                    step.as_millis(),
                    half.as_millis()
                ),
            ));
        }
        Ok(())
    }

    /// Reads and parses the file, then the secret files it names (the
    /// token, `[notify]`'s): what `run` and `check-config` need.
    pub fn load(path: &Path) -> Result<(Config, Token), ConfigError> {
        let config = Config::load_settings(path)?;
        let token = read_token(&config.token_file)?;
        config.notify_destinations().map_err(|e| e.in_file(path))?;
        config.worker_token().map_err(|e| e.in_file(path))?;
        Ok((config, token))
    }

    /// `[worker]`'s admin token, its file read; `None` without `[worker]`.
    pub(crate) fn worker_token(&self) -> Result<Option<crate::notify::Hidden>, ConfigError> {
        self.worker
            .as_ref()
            .map(|w| worker::read_token(&w.admin_token_file))
            .transpose()
    }

    /// `[notify]`'s destinations, their files read: refused as a config
    /// error (naming the key, never the value) when one cannot be used.
    pub(crate) fn notify_destinations(
        &self,
    ) -> Result<Vec<crate::notify::Destination>, ConfigError> {
        notify::destinations(&self.notify)
    }

    /// Reads and parses the file, leaving the token unread: what `status`
    /// and `maintenance` need, run by an operator who may not read the
    /// root-only token file.
    pub fn load_settings(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| err("--config", format!("cannot read {}: {e}", path.display())))?;
        let config = Config::parse(&text).map_err(|e| e.in_file(path))?;
        config.private_enough(path).map_err(|e| e.in_file(path))?;
        Ok(config)
    }

    /// A webhook URL written in the file is a password written in the
    /// file: refused while anyone on the host may read it (the package
    /// installs the config 0640 in a 0750 directory).
    fn private_enough(&self, path: &Path) -> Result<(), ConfigError> {
        use std::os::unix::fs::PermissionsExt;
        let inline = self
            .notify
            .iter()
            .position(|t| matches!(t.url, crate::notify::UrlFrom::Inline(_)));
        let Some(index) = inline else {
            return Ok(());
        };
        let mode = std::fs::metadata(path)
            .map(|m| m.permissions().mode())
            .unwrap_or(0);
        if mode & 0o004 == 0 {
            return Ok(());
        }
        let key = if self.notify.len() == 1 {
            "notify.url".to_string()
        } else {
            format!("notify[{index}].url")
        };
        Err(err(
            &key,
            format!(
                "is in a config everyone on the host may read (mode {:04o}), and a webhook URL is \
                 its receiver's password; chmod 640 the config, or move the URL to url_file \
                 (mode 0600)",
                mode & 0o7777
            ),
        ))
    }

    /// The file's text to typed values; touches nothing outside it.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let root: Table = text.parse().map_err(|e: toml::de::Error| ConfigError {
            key: "(syntax)".to_string(),
            reason: format!("not valid TOML: {}", e.message().trim_end()),
            file: None,
            at: e.span().map(|span| suggest::line_column(text, span.start)),
        })?;
        let top = Section::new("", &root);
        top.only(&[
            "topology",
            "role",
            "listen",
            "token_file",
            "maintenance_flag",
            "state_dir",
            "poll_interval",
            "takeover_after",
            "standdown_after",
            "failback_interval",
            "failback_after",
            "probe_timeout",
            "connector",
            "peer",
            "egress",
            "app",
            "log_level",
            "name",
            "notify",
            "worker",
        ])?;
        let log_level = match top.string("log_level")? {
            None => Level::Info,
            Some(text) => Level::parse(&text).ok_or_else(|| {
                err(
                    "log_level",
                    format!(
                        "{text:?} is not a level; use one of {} (journald's priorities: each \
                         logs itself and everything more severe)",
                        Level::NAMES
                            .iter()
                            .map(|n| format!("{n:?}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?,
        };
        let topology = match top.string("topology")?.as_deref() {
            None | Some("shared-tunnel") => Topology::SharedTunnel,
            Some("tunnel-per-node") => Topology::TunnelPerNode,
            Some(other) => {
                return Err(err(
                    "topology",
                    format!(
                        "{other:?} is not a topology; use \"shared-tunnel\" (two nodes, one \
                         tunnel) or \"tunnel-per-node\" (each node its own tunnel behind the Worker)"
                    ),
                ))
            }
        };
        let role =
            match (topology, top.string("role")?.as_deref()) {
                (Topology::SharedTunnel, Some("primary")) => Role::Primary,
                (Topology::SharedTunnel, Some("standby")) => Role::Standby,
                (Topology::SharedTunnel, Some(other)) => {
                    return Err(err(
                        "role",
                        format!("{other:?} is not a role; use \"primary\" or \"standby\""),
                    ))
                }
                (Topology::SharedTunnel, None) => {
                    return Err(err(
                        "role",
                        "missing; with topology = \"shared-tunnel\" use \"primary\" or \"standby\"",
                    ))
                }
                (Topology::TunnelPerNode, None) => Role::Node,
                (Topology::TunnelPerNode, Some(_)) => return Err(err(
                    "role",
                    "means nothing with topology = \"tunnel-per-node\" (each node gates its own \
                     connector, no node is primary); remove it",
                )),
            };
        let listen_text = top.string("listen")?.unwrap_or_else(|| match topology {
            Topology::SharedTunnel => DEFAULT_LISTEN.to_string(),
            Topology::TunnelPerNode => DEFAULT_LISTEN_PER_NODE.to_string(),
        });
        let listen = listen_text.parse::<SocketAddr>().map_err(|_| {
            err(
                "listen",
                format!("{listen_text:?} is not an address like \"0.0.0.0:8790\""),
            )
        })?;
        let token_file =
            top.required_path("token_file", "a file holding the shared bearer token")?;
        let maintenance_flag = top.path_the_unit_sees(
            "maintenance_flag",
            DEFAULT_FLAG,
            "`maintenance on` would set a flag the running agent never sees; use a path under \
             /var/lib/failover-agent",
        )?;
        let state_dir = top.path_the_unit_sees(
            "state_dir",
            DEFAULT_STATE_DIR,
            "what it keeps there would not outlive a restart; use /var/lib/failover-agent (the \
             unit's StateDirectory)",
        )?;
        let defaults = Timing::default();
        let timing = Timing {
            poll_interval_ms: top
                .duration_ms("poll_interval")?
                .unwrap_or(defaults.poll_interval_ms),
            takeover_after: top
                .count("takeover_after")?
                .unwrap_or(defaults.takeover_after),
            standdown_after: top
                .count("standdown_after")?
                .unwrap_or(defaults.standdown_after),
            failback_interval_ms: top
                .duration_ms("failback_interval")?
                .unwrap_or(defaults.failback_interval_ms),
            failback_after: top
                .count("failback_after")?
                .unwrap_or(defaults.failback_after),
        };
        let probe_timeout_ms = top.duration_ms("probe_timeout")?.unwrap_or(5_000);
        let shortest = timing.poll_interval_ms.min(timing.failback_interval_ms);
        if probe_timeout_ms >= shortest {
            return Err(err(
                "probe_timeout",
                format!(
                    "{probe_timeout_ms} ms must be shorter than poll_interval and failback_interval \
                     ({shortest} ms), or a hung peer would stall the monitor past one poll"
                ),
            ));
        }

        let connector = top.section("connector")?;
        connector.only(&[
            "ready_url",
            "metrics_url",
            "control",
            "unit",
            "start_command",
            "stop_command",
            "status_command",
            "command_timeout",
            "container",
            "docker_host",
        ])?;
        let connector_ready_url = connector.required_url(
            "ready_url",
            "the local cloudflared /ready, e.g. \"http://127.0.0.1:20241/ready\"",
        )?;
        let connector_metrics_url = match connector.url("metrics_url")? {
            Some(url) => url,
            None => Url {
                path: "/metrics".to_string(),
                ..connector_ready_url.clone()
            },
        };
        let control_name = connector.string("control")?;
        if control_name.as_deref() != Some("docker") {
            for key in ["container", "docker_host"] {
                if connector.get(key).is_some() {
                    return Err(err(
                        &connector.key(key),
                        "means nothing without control = \"docker\"; set that, or remove it",
                    ));
                }
            }
        }
        let control = match control_name.as_deref() {
            None | Some("systemd") => ControlConfig::Systemd {
                unit: connector
                    .string("unit")?
                    .unwrap_or_else(|| DEFAULT_UNIT.to_string()),
            },
            Some("command") => ControlConfig::Command {
                start: connector.required_string(
                    "start_command",
                    "the shell command that starts the connector",
                )?,
                stop: connector.required_string(
                    "stop_command",
                    "the shell command that stops the connector",
                )?,
                status: connector.required_string(
                    "status_command",
                    "the shell command that exits 0 while the connector runs",
                )?,
            },
            Some("docker") => ControlConfig::Docker {
                container: connector
                    .string("container")?
                    .ok_or_else(|| {
                        connector.missing(
                            "container",
                            "the cloudflared container's name or id, e.g. \"cloudflared\" \
                             (required with control = \"docker\")",
                        )
                    })
                    .and_then(|name| {
                        connector::check_container(&name)
                            .map_err(|why| err("connector.container", why))
                    })?,
                host: DockerHost::parse(
                    &connector
                        .string("docker_host")?
                        .unwrap_or_else(|| connector::DEFAULT_DOCKER_HOST.to_string()),
                )
                .map_err(|why| err("connector.docker_host", why))?,
            },
            Some(other) => {
                return Err(err(
                    "connector.control",
                    format!(
                        "{other:?} is not a controller; use \"systemd\", \"docker\" or \
                         \"command\""
                    ),
                ))
            }
        };
        let command_timeout_ms = connector.duration_ms("command_timeout")?.unwrap_or(30_000);

        let peer = top.section("peer")?;
        let (peer_agent_url, peer_connector_ready_url) = match topology {
            Topology::SharedTunnel => {
                peer.only(&["agent_url", "connector_ready_url"])?;
                let agent_url = peer.required_url(
                    "agent_url",
                    "the peer agent, e.g. \"http://10.0.0.2:8790\" (required with topology = \
                     \"shared-tunnel\")",
                )?;
                (Some(agent_url), peer.url("connector_ready_url")?)
            }
            Topology::TunnelPerNode => {
                if peer.is_present() {
                    return Err(err(
                        "peer",
                        "means nothing with topology = \"tunnel-per-node\" (the Worker, not a \
                         peer agent, moves traffic between the tunnels); remove the [peer] section",
                    ));
                }
                (None, None)
            }
        };

        let app = top.section("app")?;
        let app = if app.is_present() {
            app.only(&["health_url", "fall", "rise", "interval"])?;
            let health_url = app.required_url(
                "health_url",
                "the local service's health URL, e.g. \"http://127.0.0.1:80/health\"",
            )?;
            let interval_ms = app
                .duration_ms("interval")?
                .unwrap_or(timing.poll_interval_ms);
            if probe_timeout_ms >= interval_ms {
                return Err(err(
                    "app.interval",
                    format!(
                        "{interval_ms} ms must be longer than probe_timeout ({probe_timeout_ms} ms), \
                         or a hung app would stall the checks"
                    ),
                ));
            }
            Some(AppConfig {
                health_url,
                timing: AppTiming {
                    interval_ms,
                    rise: app.count("rise")?.unwrap_or(AppTiming::DEFAULT_RISE),
                    fall: app.count("fall")?.unwrap_or(AppTiming::DEFAULT_FALL),
                },
            })
        } else {
            None
        };

        let egress = top.section("egress")?;
        egress.only(&["url", "tcp"])?;
        let egress_url = match egress.url("url")? {
            Some(url) => url,
            None => Url::parse(DEFAULT_EGRESS_URL).map_err(|e| err("egress.url", e))?,
        };
        let egress_tcp = egress.string("tcp")?;
        if let Some(tcp) = &egress_tcp {
            // A host (an IPv6 one in brackets) and a port of 1-65535: ":7844"
            // or "host:0" would fail every egress check, so that a primary
            // never starts its connector.
            let well_formed = tcp.rsplit_once(':').is_some_and(|(host, port)| {
                let host = host
                    .strip_prefix('[')
                    .and_then(|h| h.strip_suffix(']'))
                    .unwrap_or(host);
                !host.is_empty()
                    && !host.contains(|c: char| c.is_whitespace() || c == '/')
                    && port.parse::<u16>().is_ok_and(|p| p > 0)
            });
            if !well_formed {
                return Err(err(
                    "egress.tcp",
                    format!("{tcp:?} is not host:port, e.g. \"region1.v2.argotunnel.com:7844\""),
                ));
            }
        }

        let name = match top.string("name")? {
            Some(name) => check_name(&name).map_err(|why| err("name", why))?,
            None => host_name(),
        };
        let notify = notify::parse(root.get("notify"))?;
        let worker = worker::parse(&top.section("worker")?, topology)?;

        Ok(Config {
            role,
            listen,
            token_file,
            maintenance_flag,
            state_dir,
            timing,
            probe_timeout: Duration::from_millis(probe_timeout_ms),
            command_timeout: Duration::from_millis(command_timeout_ms),
            connector_ready_url,
            control,
            peer_agent_url,
            peer_connector_ready_url,
            egress_url,
            egress_tcp,
            app,
            log_level,
            name,
            notify,
            worker,
            connector_metrics_url,
        })
    }
}

/// A node or origin name: what a person reads in a message and the
/// Worker's `ORIGINS` accepts (letters, digits, `-`, `_`, `.`; 1 to 64).
pub(crate) fn check_name(name: &str) -> Result<String, String> {
    // "." and ".." would be resolved away in the admin API's paths
    // (`origins/{name}`, `nodes/{node}`), as the Worker refuses them.
    let good = !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if good {
        Ok(name.to_string())
    } else {
        Err(format!(
            "{name:?} is not a name: 1 to 64 letters, digits, '-', '_' or '.'"
        ))
    }
}

/// The host's name (`gethostname`), as a node name; "node" if it has none
/// the rules accept.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at
    // most that many bytes and we stop at the first NUL or the end.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let len = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let text = String::from_utf8_lossy(&buf[..len]);
    let first = text.split('.').next().unwrap_or("");
    match (rc, check_name(first)) {
        (0, Ok(name)) => name,
        _ => "node".to_string(),
    }
}

/// The token, refused when others may read it or it is too short to key
/// an HMAC worth the name.
fn read_token(token_file: &Path) -> Result<Token, ConfigError> {
    let use_ = secret_file::Use {
        readers_can: "can order this node's connector stopped",
        min_chars: MIN_TOKEN_CHARS,
        why_long: "(it keys the peers' signed orders)",
    };
    secret_file::read("token_file", token_file, &use_).map(Token)
}

/// One table of the file, with its dotted prefix for error messages.
struct Section<'a> {
    prefix: String,
    table: Option<&'a Table>,
}

impl<'a> Section<'a> {
    fn new(prefix: &str, table: &'a Table) -> Self {
        Section {
            prefix: prefix.to_string(),
            table: Some(table),
        }
    }

    fn key(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.prefix)
        }
    }

    fn is_present(&self) -> bool {
        self.table.is_some()
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.table.and_then(|t| t.get(name))
    }

    /// Unknown keys are errors: a typo must not silently fall back to a
    /// default.
    fn only(&self, known: &[&str]) -> Result<(), ConfigError> {
        for name in self.table.into_iter().flat_map(|t| t.keys()) {
            if !known.contains(&name.as_str()) {
                let hint = suggest::nearest(name, known)
                    .map_or(String::new(), |near| format!("did you mean `{near}`? "));
                return Err(err(
                    &self.key(name),
                    format!("unknown key; {hint}known here: {}", known.join(", ")),
                ));
            }
        }
        Ok(())
    }

    fn section(&self, name: &str) -> Result<Section<'a>, ConfigError> {
        match self.get(name) {
            None => Ok(Section {
                prefix: self.key(name),
                table: None,
            }),
            Some(Value::Table(t)) => Ok(Section {
                prefix: self.key(name),
                table: Some(t),
            }),
            Some(_) => Err(err(
                &self.key(name),
                "must be a table, e.g. [".to_string() + name + "]",
            )),
        }
    }

    fn string(&self, name: &str) -> Result<Option<String>, ConfigError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(err(
                &self.key(name),
                format!("{} is not a string", shown(other)),
            )),
        }
    }

    fn required_string(&self, name: &str, what: &str) -> Result<String, ConfigError> {
        match self.string(name)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            _ => Err(self.missing(
                name,
                &format!("{what} (required with control = \"command\")"),
            )),
        }
    }

    /// `name` is required here and absent: `what` says what it is.
    fn missing(&self, name: &str, what: &str) -> ConfigError {
        err(&self.key(name), format!("missing; {what}"))
    }

    fn required_url(&self, name: &str, what: &str) -> Result<Url, ConfigError> {
        self.url(name)?.ok_or_else(|| self.missing(name, what))
    }

    fn required_path(&self, name: &str, what: &str) -> Result<PathBuf, ConfigError> {
        let path = self.string(name)?.ok_or_else(|| self.missing(name, what))?;
        Ok(PathBuf::from(path))
    }

    /// A path the agent must see under the packaged unit's sandbox
    /// (`default` when absent): absolute, and not in a directory the unit
    /// hides, as written or through a symlink; `otherwise` says what goes
    /// wrong if it is hidden.
    fn path_the_unit_sees(
        &self,
        name: &str,
        default: &str,
        otherwise: &str,
    ) -> Result<PathBuf, ConfigError> {
        let path = PathBuf::from(self.string(name)?.unwrap_or_else(|| default.to_string()));
        if !path.is_absolute() {
            return Err(err(
                &self.key(name),
                format!(
                    "{:?} is a relative path: the daemon would resolve it from its own working \
                     directory (/ under systemd), and `failover-agent maintenance` and the other \
                     commands from the shell they run in, so they would not look at the same \
                     file; give an absolute path, e.g. {default}",
                    path.display().to_string()
                ),
            ));
        }
        match sandbox::hidden_from_the_unit(&path) {
            None => Ok(path),
            Some(hidden) => Err(err(
                &self.key(name),
                format!(
                    "{} is under {hidden} (as written, or through a symlink), which the \
                     packaged unit hides from the agent (PrivateTmp=yes, ProtectHome=yes): \
                     {otherwise}",
                    path.display()
                ),
            )),
        }
    }

    fn count(&self, name: &str) -> Result<Option<u32>, ConfigError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Integer(n)) if (1..=1000).contains(n) => Ok(Some(*n as u32)),
            Some(other) => Err(err(
                &self.key(name),
                format!("{} is not a count from 1 to 1000", shown(other)),
            )),
        }
    }

    /// `"30s"`, `"1m30s"`, `"500ms"`, `"2h"`, or a bare number of seconds
    /// (an integer or a string): from 10 ms to 24 h.
    fn duration_ms(&self, name: &str) -> Result<Option<u64>, ConfigError> {
        let bad = |shown: String, why: String| {
            err(
                &self.key(name),
                format!(
                    "{shown} is not a duration ({why}); use a number with units largest first, \
                     each once: \"500ms\", \"30s\", \"2m\", \"1m30s\", \"2h\", or a bare \
                     number of seconds; from 10ms to 24h"
                ),
            )
        };
        let ms = match self.get(name) {
            None => return Ok(None),
            Some(Value::Integer(n)) => match u64::try_from(*n) {
                Err(_) => return Err(bad(n.to_string(), "negative".into())),
                Ok(n) => n
                    .checked_mul(1000)
                    .ok_or_else(|| bad(n.to_string(), "too long".into()))?,
            },
            Some(Value::String(s)) => {
                parse_ms(s).map_err(|why| bad(format!("{s:?}"), why.to_string()))?
            }
            Some(other) => return Err(bad(shown(other), "not a string or a number".into())),
        };
        if ms < 10 {
            return Err(bad(duration::format_ms(ms), "shorter than 10ms".into()));
        }
        if ms > MAX_DURATION_MS {
            return Err(bad(duration::format_ms(ms), "longer than 24h".into()));
        }
        Ok(Some(ms))
    }

    fn url(&self, name: &str) -> Result<Option<Url>, ConfigError> {
        match self.string(name)? {
            None => Ok(None),
            Some(text) => Url::parse(&text)
                .map(Some)
                .map_err(|e| err(&self.key(name), e)),
        }
    }
}

/// A value as the operator wrote it, near enough for an error message.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Integer(n) => n.to_string(),
        Value::Float(x) => x.to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::Datetime(_) => "a date".into(),
        Value::Array(_) => "an array".into(),
        Value::Table(_) => "a table".into(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const SHARED: &str = r#"
role = "primary"
token_file = "/etc/failover-agent/token"
[connector]
ready_url = "http://127.0.0.1:20241/ready"
[peer]
agent_url = "http://10.0.0.2:8790"
"#;

    /// The smallest tunnel-per-node config (also read by describe.rs).
    pub(crate) const PER_NODE: &str = r#"
topology = "tunnel-per-node"
token_file = "/etc/failover-agent/token"
[connector]
ready_url = "http://127.0.0.1:20241/ready"
"#;

    #[test]
    fn good_configs_parse_with_their_defaults() {
        let c = Config::parse(SHARED).expect("shared");
        assert_eq!(
            (c.role.topology(), c.role),
            (Topology::SharedTunnel, Role::Primary)
        );
        assert!(c.app.is_none() && c.peer_agent_url.is_some());
        let c = Config::parse(PER_NODE).expect("per node");
        assert_eq!(
            (c.role.topology(), c.role),
            (Topology::TunnelPerNode, Role::Node)
        );
        assert!(c.peer_agent_url.is_none());
        // cloudflared serves /metrics beside /ready.
        assert_eq!(
            c.connector_metrics_url.to_string(),
            "http://127.0.0.1:20241/metrics"
        );
        // No peer calls a tunnel-per-node agent: loopback unless asked.
        assert_eq!(c.listen.to_string(), "127.0.0.1:8790");
        assert_eq!(
            Config::parse(SHARED).expect("shared").listen.to_string(),
            "0.0.0.0:8790"
        );
        let open = format!("listen = \"0.0.0.0:9000\"\n{PER_NODE}");
        assert_eq!(
            Config::parse(&open).expect("listen").listen.to_string(),
            "0.0.0.0:9000"
        );
        let text = format!("{PER_NODE}[app]\nhealth_url = \"http://127.0.0.1:80/health\"\n");
        let app = Config::parse(&text).expect("app").app.expect("[app]");
        assert_eq!(
            app.timing,
            AppTiming {
                interval_ms: Timing::default().poll_interval_ms,
                rise: 2,
                fall: 3
            }
        );
        assert_eq!(app.health_url.port, 80);
    }

    /// Each bad config fails naming its key; the phrase says why.
    #[test]
    fn bad_configs_name_the_key() {
        let app = |extra: &str| format!("{PER_NODE}[app]\n{extra}\n");
        let notify = |extra: &str| format!("{PER_NODE}[notify]\n{extra}\n");
        let worker = |extra: &str| format!("{PER_NODE}[worker]\n{extra}\n");
        let mut table: Vec<(String, &str, &str)> = vec![
            (SHARED.replace("role = \"primary\"", ""), "role", "missing"),
            (SHARED.replace("primary", "leader"), "role", "not a role"),
            (
                format!("role = \"primary\"\n{PER_NODE}"),
                "role",
                "means nothing",
            ),
            (
                format!("{PER_NODE}[peer]\nagent_url = \"http://10.0.0.2:8790\"\n"),
                "peer",
                "means nothing",
            ),
            (
                SHARED.replace("[peer]\nagent_url = \"http://10.0.0.2:8790\"", ""),
                "peer.agent_url",
                "missing",
            ),
            (
                format!("topology = \"mesh\"\n{SHARED}"),
                "topology",
                "not a topology",
            ),
            (app("fall = 3"), "app.health_url", "missing"),
            (
                app("health_url = \"http://127.0.0.1 :80/health\""),
                "app.health_url",
                "whitespace",
            ),
            (
                app("health_url = \"ftp://127.0.0.1/health\""),
                "app.health_url",
                "scheme",
            ),
            (
                app("health_url = \"http://127.0.0.1/health\"\nfall = 0"),
                "app.fall",
                "count from 1",
            ),
            (
                app("health_url = \"http://127.0.0.1/health\"\nrise = -1"),
                "app.rise",
                "count from 1",
            ),
            (
                app("health_url = \"http://127.0.0.1/health\"\ninterval = \"1s\""),
                "app.interval",
                "longer than probe_timeout",
            ),
            (
                app("health_url = \"http://127.0.0.1/health\"\nport = 80"),
                "app.port",
                "unknown key",
            ),
            (format!("app = 3\n{PER_NODE}"), "app", "must be a table"),
            (worker("admin_token_file = \"/t\"\norigin = \"h\""), "worker.url", "missing"),
            (
                worker("url = \"http://www.example.com\"\nadmin_token_file = \"/t\"\norigin = \"h\""),
                "worker.url",
                "clear text",
            ),
            (
                format!("{PER_NODE}[egress]\ntcp = \":7844\"\n"),
                "egress.tcp",
                "not host:port",
            ),
            (
                format!("{PER_NODE}[egress]\ntcp = \"[::1]:0\"\n"),
                "egress.tcp",
                "not host:port",
            ),
            (
                format!("{PER_NODE}[egress]\ntcp = \"edge.example\"\n"),
                "egress.tcp",
                "not host:port",
            ),
            (
                worker("url = \"https://w.example/x\"\nadmin_token_file = \"/t\"\norigin = \"h\""),
                "worker.url",
                "has a path",
            ),
            (worker("url = \"https://w.example\"\norigin = \"h\""), "worker.admin_token_file", "missing"),
            (worker("url = \"https://w.example\"\nadmin_token_file = \"/t\""), "worker.origin", "missing"),
            (
                worker("url = \"https://w.example\"\nadmin_token_file = \"/t\"\norigin = \"a b\""),
                "worker.origin",
                "not a name",
            ),
            (
                format!("{SHARED}[worker]\nurl = \"https://w.example\"\nadmin_token_file = \"/t\"\norigin = \"h\"\n"),
                "worker.origin",
                "means nothing",
            ),
            (
                format!("{SHARED}[worker]\nurl = \"https://w.example\"\nadmin_token_file = \"/t\"\nnode = \"h\"\n"),
                "worker.node",
                "means nothing",
            ),
            (
                worker("url = \"https://w.example\"\nadmin_token_file = \"/t\"\norigin = \"h\"\nnode = \"h\""),
                "worker.node",
                "both set",
            ),
            (
                worker("url = \"https://w.example\"\nadmin_token_file = \"/t\"\nnode = \"my node\""),
                "worker.node",
                "not a name",
            ),
            (
                worker("url = \"https://w.example\"\nadmin_token_file = \"/t\"\nnode = \"..\""),
                "worker.node",
                "not a name",
            ),
            (
                worker("url = \"https://w.example\"\nadmin_token_file = \"/t\"\norigin = \".\""),
                "worker.origin",
                "not a name",
            ),
            (
                worker("url = \"https://w.example\"\nadmin_token_file = \"/t\"\norigin = \"h\"\nstatus_path = \"/\""),
                "worker.status_path",
                "STATUS_PATH exactly",
            ),
            (
                worker("url = \"https://w.example\"\nadmin_token_file = \"/t\"\norigin = \"h\"\nstatus_path = \"/s?x=1\""),
                "worker.status_path",
                "STATUS_PATH exactly",
            ),
            (
                worker("url = \"https://w.example\"\nadmin_token_file = \"/t\"\norigin = \"h\"\nquiet_for = \"1m\"\ndrain_timeout = \"30s\""),
                "worker.drain_timeout",
                "longer than quiet_for",
            ),
            (
                worker("url = \"https://w.example\"\nadmin_token_file = \"/t\"\norigin = \"h\"\ndrain_time = \"1m\""),
                "worker.drain_time",
                "did you mean `drain_timeout`",
            ),
            (
                PER_NODE.replace("ready_url", "metrics_url = \"ftp://x\"\nready_url"),
                "connector.metrics_url",
                "scheme",
            ),
            (
                format!("state_dir = \"/tmp/agent\"\n{PER_NODE}"),
                "state_dir",
                "hides from the agent",
            ),
            (
                format!("name = \"my node\"\n{PER_NODE}"),
                "name",
                "not a name",
            ),
            (notify("url = \"https://h/x\"\nformat = \"teams\""), "notify.format", "not a format"),
            (notify("format = \"slack\""), "notify.url", "missing"),
            (
                notify("url = \"https://h/x\"\nurl_file = \"/etc/u\""),
                "notify.url_file",
                "set with url",
            ),
            (
                notify("url = \"https://h/x\"\nformat = \"slack\"\nsecret_file = \"/etc/k\""),
                "notify.secret_file",
                "only \"json\" is signed",
            ),
            (notify("url = \"https://h/x\"\nformats = \"json\""), "notify.formats", "did you mean `format`"),
            (format!("notify = 3\n{PER_NODE}"), "notify", "not a table"),
            (format!("notify = [1]\n{PER_NODE}"), "notify[0]", "not a table"),
            (
                format!("{PER_NODE}[[notify]]\nurl = \"https://h/x\"\n[[notify]]\nurl = \"ftp://h/SECRET\"\n"),
                "notify[1].url",
                "not shown",
            ),
            (
                format!("{PER_NODE}{}", "[[notify]]\nurl = \"https://h/x\"\n".repeat(9)),
                "notify",
                "at most 8",
            ),
        ];
        let docker = |extra: &str| format!("{PER_NODE}control = \"docker\"\n{extra}\n");
        table.extend([
            (docker(""), "connector.container", "missing"),
            (
                docker("container = \"/cloudflared\""),
                "connector.container",
                "leading '/'",
            ),
            (
                docker("container = \"../x\""),
                "connector.container",
                "not a container",
            ),
            (
                docker("container = \"cf\"\ndocker_host = \"/var/run/docker.sock\""),
                "connector.docker_host",
                "unix:///var/run/docker.sock",
            ),
            (
                docker("container = \"cf\"\ndocker_host = \"tcp://proxy\""),
                "connector.docker_host",
                "tcp://host:port",
            ),
            (
                format!("{PER_NODE}container = \"cf\"\n"),
                "connector.container",
                "without control = \"docker\"",
            ),
            (
                format!("{PER_NODE}control = \"podman\"\n"),
                "connector.control",
                "\"docker\"",
            ),
        ]);
        let flag = |path: &str| format!("maintenance_flag = {path:?}\n{PER_NODE}");
        // A path the runtime rewrites before the Worker compares it: the
        // admin token would go to whatever answers there.
        for path in ["/a/../b", "/a/./b", "//a", "/a%2e", "/a b", "/a/"] {
            table.push((
                worker(&format!(
                    "url = \"https://w.example\"\nadmin_token_file = \"/t\"\norigin = \"h\"\nstatus_path = {path:?}"
                )),
                "worker.status_path",
                "STATUS_PATH exactly",
            ));
        }
        for path in [
            "/tmp/maintenance",
            "/var/tmp/failover/maintenance",
            "/home/ops/maintenance",
            "/root/maintenance",
            "/var/lib/../../tmp/maintenance",
            "/./tmp/maintenance",
        ] {
            table.push((flag(path), "maintenance_flag", "hides from the agent"));
        }
        // The daemon (cwd / under systemd) and `maintenance on` (the
        // operator's shell) would look at two different files.
        for path in [
            "maintenance",
            "./maintenance",
            "var/lib/failover-agent/maintenance",
            "",
        ] {
            table.push((flag(path), "maintenance_flag", "relative path"));
        }
        table.push((
            format!("state_dir = \"state\"\n{PER_NODE}"),
            "state_dir",
            "relative path",
        ));
        for (text, key, phrase) in table {
            match Config::parse(&text) {
                Ok(_) => panic!("accepted, expected an error on `{key}`:\n{text}"),
                Err(e) => {
                    assert_eq!(e.key, key, "{e}\n{text}");
                    assert!(e.reason.contains(phrase), "{e} lacks {phrase:?}");
                    assert!(!e.to_string().contains("SECRET"), "{e}");
                }
            }
        }
    }

    #[test]
    fn a_flag_outside_the_hidden_directories_is_accepted() {
        for path in [
            "/var/lib/failover-agent/maintenance",
            "/srv/tmp/maintenance",
            "/homes/maintenance",
            "/dev/shm/maintenance",
        ] {
            let text = format!("maintenance_flag = {path:?}\n{PER_NODE}");
            assert!(Config::parse(&text).is_ok(), "{path}");
        }
    }
}
