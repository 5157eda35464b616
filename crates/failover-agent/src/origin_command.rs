//! `failover-agent origin drain|disable|force-up|auto <name> [--for 30m]
//! [--drain 5m]` and `origin show`: an operator's override at the Worker,
//! through its admin API (`[worker] url`, `admin_token_file`), without a
//! redeploy. The answer is printed for a person; the token never is.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;

use crate::client::Client;
use crate::config::Config;
use crate::worker::{Admin, Mode};

/// What the operator asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OriginOrder {
    /// Set `name`'s override. `ttl`: `--for` (`ttl_s`, back to `auto` by
    /// itself after it); `drain`: `--drain` (`drain_s`, only with `drain`).
    Set {
        mode: OriginMode,
        name: String,
        ttl: Option<Duration>,
        drain: Option<Duration>,
    },
    /// Print every override.
    Show,
}

/// The contract's modes, for the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginMode {
    /// No new requests without an affinity pin; pinned ones for `--drain`.
    Drain,
    /// Used only when every other origin is down.
    Disable,
    /// Served regardless of health.
    ForceUp,
    /// Health decides again.
    Auto,
}

impl OriginMode {
    fn mode(self) -> Mode {
        match self {
            OriginMode::Drain => Mode::Drain,
            OriginMode::Disable => Mode::Disable,
            OriginMode::ForceUp => Mode::ForceUp,
            OriginMode::Auto => Mode::Auto,
        }
    }
}

/// Runs the order against the Worker; exit status 0 when the Worker took
/// it, 1 when it did not or could not be reached, 2 on a config error.
pub fn origin_command(config: &Config, order: &OriginOrder) -> ExitCode {
    let Some(settings) = config.worker.as_ref() else {
        eprintln!(
            "failover-agent: config error: `worker`: missing; `failover-agent origin` needs \
             [worker] with url and admin_token_file"
        );
        return ExitCode::from(2);
    };
    let token = match config.worker_token() {
        Ok(Some(token)) => token,
        Ok(None) => return ExitCode::from(2),
        Err(e) => {
            eprintln!("failover-agent: {e}");
            return ExitCode::from(2);
        }
    };
    if let OriginOrder::Set { name, .. } = order {
        if let Err(why) = crate::config::check_name(name) {
            eprintln!("failover-agent: origin: {why}");
            return ExitCode::from(2);
        }
    }
    let result = crate::runtime().and_then(|rt| {
        rt.block_on(async {
            let client = Client::new()?;
            let admin = Admin {
                client: &client,
                settings,
                token: &token.0,
                // A person waits for this one: longer than a probe.
                timeout: config.probe_timeout.max(Duration::from_secs(10)),
            };
            let answer = match order {
                OriginOrder::Show => admin.overrides().await,
                OriginOrder::Set {
                    mode,
                    name,
                    ttl,
                    drain,
                } => {
                    let secs = |d: &Duration| d.as_millis().div_ceil(1000) as u64;
                    admin
                        .set(
                            name,
                            mode.mode(),
                            ttl.as_ref().map(secs),
                            drain.as_ref().map(secs),
                        )
                        .await
                }
            };
            Ok::<_, crate::Error>(answer)
        })
    });
    let what = match order {
        OriginOrder::Show => format!("{}{}/origins", settings.url, &settings.status_path[1..]),
        OriginOrder::Set { mode, name, .. } => {
            format!("origin {name}: {}", mode.mode().as_str())
        }
    };
    match result {
        Ok(Ok(answer)) => {
            match order {
                OriginOrder::Show => println!("{}", show(&answer)),
                OriginOrder::Set { name, .. } => println!("{}", one(name, override_of(&answer))),
            }
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => {
            eprintln!("failover-agent: {what}: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("failover-agent: {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The override in an answer: the answer itself, or its `override` field.
fn override_of(answer: &Value) -> &Value {
    answer.get("override").unwrap_or(answer)
}

/// One origin's override on a line: mode, since, until, whether in effect.
fn one(name: &str, o: &Value) -> String {
    let field = |key: &str| match o.get(key) {
        Some(Value::String(s)) => Some(plain(s)),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let mut line = format!(
        "origin {name}: {}",
        field("mode").unwrap_or_else(|| "?".to_string())
    );
    if let Some(set) = field("set_at") {
        line += &format!(", set {set}");
    }
    match field("expires_at") {
        Some(until) => line += &format!(", expires {until}"),
        None => line += ", no expiry",
    }
    match o.get("in_effect").and_then(Value::as_bool) {
        Some(true) => line += " (in effect)",
        Some(false) => line += " (not in effect yet)",
        None => {}
    }
    line
}

/// Text the Worker chose, as it is when it is a short word or time, quoted
/// (one line, bounded) otherwise.
fn plain(text: &str) -> String {
    if !text.is_empty() && text.len() <= 64 && text.chars().all(|c| c.is_ascii_graphic()) {
        text.to_string()
    } else {
        crate::log::quoted(text)
    }
}

fn show(answer: &Value) -> String {
    let Some(all) = answer.get("overrides").and_then(Value::as_object) else {
        return format!("the Worker answered without \"overrides\": {answer}");
    };
    if all.is_empty() {
        return "no override: every origin follows its health (auto)".to_string();
    }
    all.iter()
        .map(|(name, o)| one(&plain(name), o))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn overrides_read_as_lines_and_odd_answers_do_not_panic() {
        let answer = json!({"overrides": {
            "home": {"mode": "drain", "set_at": "2026-12-01T19:00:00Z", "expires_at": "2026-12-01T20:00:00Z", "in_effect": true},
            "vps": {"mode": "disable", "set_at": 1_796_153_464_000u64, "in_effect": false},
        }});
        assert_eq!(
            show(&answer),
            "origin home: drain, set 2026-12-01T19:00:00Z, expires 2026-12-01T20:00:00Z (in effect)\n\
             origin vps: disable, set 1796153464000, no expiry (not in effect yet)"
        );
        assert!(show(&json!({"overrides": {}})).starts_with("no override"));
        assert!(show(&json!([1, 2])).contains("without \"overrides\""));
        assert_eq!(one("x", &json!(null)), "origin x: ?, no expiry");
        assert_eq!(
            one("x", override_of(&json!({"override": {"mode": "force-up"}}))),
            "origin x: force-up, no expiry"
        );
        // Text the Worker chose is quoted: one line, bounded.
        let line = one("x", &json!({"mode": "drain\n<3>forged"}));
        assert!(!line.contains('\n'), "{line}");
    }
}
