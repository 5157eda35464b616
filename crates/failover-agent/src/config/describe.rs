//! The effective settings as `check-config` prints them: one `key = value`
//! a line, aligned, defaults filled in, in the file's own grammar (strings
//! quoted, durations as `"1m30s"`, sections as dotted keys), so the output
//! is itself a config that parses to the same settings. Optional settings
//! left unset are `#` comments. The token is never read here, only the
//! path of its file.

use std::fmt::Write as _;

use failover_core::node::Topology;

use super::duration::format_ms;
use super::Config;
use crate::connector::ControlConfig;
use crate::notify::UrlFrom;

/// A value as TOML writes it.
enum Shown {
    Text(String),
    Number(u64),
    Duration(u64),
    /// Already TOML (an inline array of tables).
    Raw(String),
    Unset,
    /// Set, and never printed (a webhook URL): a `#` comment says so.
    Hidden,
}

impl Config {
    /// One line per setting, `key = value`, the `=` signs aligned.
    pub fn describe(&self) -> String {
        let rows = self.rows();
        let width = rows.iter().map(|(key, _)| key.len()).max().unwrap_or(0);
        let mut out = String::new();
        for (key, value) in rows {
            let _ = match value {
                Shown::Text(text) => writeln!(out, "{key:width$} = {}", quoted(&text)),
                Shown::Number(n) => writeln!(out, "{key:width$} = {n}"),
                Shown::Duration(ms) => writeln!(out, "{key:width$} = \"{}\"", format_ms(ms)),
                Shown::Raw(toml) => writeln!(out, "{key:width$} = {toml}"),
                Shown::Unset => writeln!(out, "# {key} (not set)"),
                Shown::Hidden => writeln!(
                    out,
                    "# {key} is set in the config and not shown: it is its receiver's password"
                ),
            };
        }
        out
    }

    fn rows(&self) -> Vec<(String, Shown)> {
        self.static_rows()
            .into_iter()
            .map(|(key, shown)| (key.to_string(), shown))
            .chain(self.notify_rows())
            .collect()
    }

    /// `[notify]` as one inline array of tables (a valid value for one or
    /// several destinations), with a `#` line for each URL written in the
    /// config, which is never printed.
    fn notify_rows(&self) -> Vec<(String, Shown)> {
        if self.notify.is_empty() {
            return vec![("notify".to_string(), Shown::Unset)];
        }
        let mut hidden = Vec::new();
        let tables: Vec<String> = self
            .notify
            .iter()
            .enumerate()
            .map(|(i, target)| {
                let mut fields = vec![format!("format = {}", quoted(target.format.as_str()))];
                match &target.url {
                    UrlFrom::Inline(_) => hidden.push(if self.notify.len() == 1 {
                        "notify.url".to_string()
                    } else {
                        format!("notify[{i}].url")
                    }),
                    UrlFrom::File(path) => fields.push(format!(
                        "url_file = {}",
                        quoted(&path.display().to_string())
                    )),
                }
                if let Some(path) = &target.secret_file {
                    fields.push(format!(
                        "secret_file = {}",
                        quoted(&path.display().to_string())
                    ));
                }
                format!("{{ {} }}", fields.join(", "))
            })
            .collect();
        let mut rows = vec![(
            "notify".to_string(),
            Shown::Raw(format!("[{}]", tables.join(", "))),
        )];
        rows.extend(hidden.into_iter().map(|key| (key, Shown::Hidden)));
        rows
    }

    fn static_rows(&self) -> Vec<(&'static str, Shown)> {
        use Shown::{Duration, Number, Text, Unset};
        let text = |s: &dyn ToString| Text(s.to_string());
        let topology = self.role.topology();
        let mut rows = vec![
            ("topology", Text(topology.as_str().to_string())),
            ("name", Text(self.name.clone())),
        ];
        if topology == Topology::SharedTunnel {
            rows.push(("role", Text(self.role.as_str().to_string())));
        }
        rows.extend([
            ("listen", text(&self.listen)),
            ("token_file", text(&self.token_file.display())),
            ("maintenance_flag", text(&self.maintenance_flag.display())),
            ("state_dir", text(&self.state_dir.display())),
            ("log_level", Text(self.log_level.name().to_string())),
            ("poll_interval", Duration(self.timing.poll_interval_ms)),
            ("takeover_after", Number(self.timing.takeover_after.into())),
            (
                "standdown_after",
                Number(self.timing.standdown_after.into()),
            ),
            (
                "failback_interval",
                Duration(self.timing.failback_interval_ms),
            ),
            ("failback_after", Number(self.timing.failback_after.into())),
            ("probe_timeout", Duration(millis(self.probe_timeout))),
            ("connector.ready_url", text(&self.connector_ready_url)),
            ("connector.metrics_url", text(&self.connector_metrics_url)),
        ]);
        match &self.control {
            ControlConfig::Systemd { unit } => rows.extend([
                ("connector.control", Text("systemd".into())),
                ("connector.unit", Text(unit.clone())),
            ]),
            ControlConfig::Command {
                start,
                stop,
                status,
            } => rows.extend([
                ("connector.control", Text("command".into())),
                ("connector.start_command", Text(start.clone())),
                ("connector.stop_command", Text(stop.clone())),
                ("connector.status_command", Text(status.clone())),
            ]),
            ControlConfig::Docker { container, host } => rows.extend([
                ("connector.control", Text("docker".into())),
                ("connector.container", Text(container.clone())),
                ("connector.docker_host", text(host)),
            ]),
        }
        rows.push((
            "connector.command_timeout",
            Duration(millis(self.command_timeout)),
        ));
        if topology == Topology::SharedTunnel {
            let optional = |url: &Option<crate::url::Url>| url.as_ref().map_or(Unset, |u| text(u));
            rows.push(("peer.agent_url", optional(&self.peer_agent_url)));
            rows.push((
                "peer.connector_ready_url",
                optional(&self.peer_connector_ready_url),
            ));
        }
        rows.push(("egress.url", text(&self.egress_url)));
        rows.push((
            "egress.tcp",
            self.egress_tcp.as_ref().map_or(Unset, |t| text(t)),
        ));
        match &self.app {
            Some(app) => rows.extend([
                ("app.health_url", text(&app.health_url)),
                ("app.interval", Duration(app.timing.interval_ms)),
                ("app.fall", Number(app.timing.fall.into())),
                ("app.rise", Number(app.timing.rise.into())),
            ]),
            None => rows.push(("app", Unset)),
        }
        match &self.worker {
            Some(w) => {
                rows.extend([
                    ("worker.url", text(&w.url)),
                    ("worker.status_path", Text(w.status_path.clone())),
                    (
                        "worker.admin_token_file",
                        text(&w.admin_token_file.display()),
                    ),
                    (
                        "worker.origin",
                        w.origin.as_ref().map_or(Unset, |o| Text(o.clone())),
                    ),
                    (
                        "worker.node",
                        w.node.as_ref().map_or(Unset, |n| Text(n.clone())),
                    ),
                    ("worker.drain", Duration(w.drain_ms)),
                    ("worker.quiet_for", Duration(w.quiet_for_ms)),
                    ("worker.drain_timeout", Duration(w.drain_timeout_ms)),
                ]);
            }
            None => rows.push(("worker", Unset)),
        }
        rows
    }
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A TOML basic string: quotes, backslashes and control characters escaped.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::PER_NODE;

    const FULL: &str = r#"
role = "standby"
token_file = "/etc/failover-agent/token"
poll_interval = "1m30s"
log_level = "debug"
[connector]
ready_url = "http://127.0.0.1:20241/ready"
control = "command"
start_command = "systemctl start \"cloudflared\"\tnow"
stop_command = "pkill -x cloudflared"
status_command = "pgrep -x cloudflared"
[peer]
agent_url = "http://[fd00::2]:8790"
[egress]
tcp = "region1.v2.argotunnel.com:7844"
[app]
health_url = "http://127.0.0.1:80/health"

[worker]
url = "https://www.example.com"
admin_token_file = "/etc/failover-agent/worker-token"

[[notify]]
url_file = "/etc/failover-agent/slack-url"
format = "slack"

[[notify]]
url_file = "/etc/failover-agent/hook-url"
secret_file = "/etc/failover-agent/hook-secret"
"#;

    /// A node with its own tunnel and the Worker in front.
    const PER_NODE_WORKER: &str = r#"
topology = "tunnel-per-node"
token_file = "/etc/failover-agent/token"
[connector]
ready_url = "http://127.0.0.1:20241/ready"
metrics_url = "http://127.0.0.1:20242/metrics"
[worker]
url = "https://www.example.com:8443"
status_path = "/ops/status"
admin_token_file = "/etc/failover-agent/worker-token"
origin = "home"
quiet_for = "10s"
"#;

    /// The output is a config: parsed again, it describes itself the same.
    #[test]
    fn the_description_reads_back_as_the_same_settings() {
        let docker = format!(
            "{PER_NODE}control = \"docker\"\ncontainer = \"stack-cloudflared-1\"\n\
             docker_host = \"tcp://[fd00::1]:2375\"\n"
        );
        for text in [FULL, PER_NODE, PER_NODE_WORKER, docker.as_str()] {
            let config = Config::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let described = config.describe();
            let again = Config::parse(&described).unwrap_or_else(|e| panic!("{e}\n{described}"));
            assert_eq!(again.describe(), described);
        }
    }

    /// A URL written in the config is never printed; the output says so.
    #[test]
    fn a_webhook_url_is_not_shown() {
        let text = format!("{PER_NODE}[notify]\nurl = \"https://h/SECRET\"\nformat = \"ntfy\"\n");
        let described = Config::parse(&text).map(|c| c.describe()).unwrap();
        assert!(!described.contains("SECRET"), "{described}");
        assert!(
            described.contains("notify = [{ format = \"ntfy\" }]")
                || described.contains("= [{ format = \"ntfy\" }]"),
            "{described}"
        );
        assert!(
            described.contains("# notify.url is set in the config and not shown"),
            "{described}"
        );
    }

    #[test]
    fn one_aligned_key_a_line() {
        let described = Config::parse(PER_NODE)
            .map(|c| c.describe())
            .unwrap_or_default();
        let lines: Vec<&str> = described.lines().collect();
        assert!(
            lines.contains(&"topology                  = \"tunnel-per-node\""),
            "{described}"
        );
        assert!(
            lines.contains(&"poll_interval             = \"30s\""),
            "{described}"
        );
        assert!(lines.contains(&"# egress.tcp (not set)"), "{described}");
        assert!(
            !described.contains("role"),
            "no role per node:\n{described}"
        );
        let columns: Vec<usize> = lines
            .iter()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.find(" = ").unwrap_or(0))
            .collect();
        assert!(
            columns.iter().all(|c| *c == columns[0] && *c > 0),
            "{described}"
        );
    }
}
