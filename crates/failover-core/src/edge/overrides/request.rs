//! An operator's change, as `POST {STATUS_PATH}/origins/{name}` carries it:
//! `{"mode": "drain", "ttl_s": 3600, "drain_s": 300}`. Parsed strictly and
//! bounded, so that a typo (`"ttl": 3600`, an override that would never
//! expire) or a hostile body is a 400 naming the field, never a surprise
//! in routing. The isolate parses it to answer at once; the checker parses
//! the same text again before it stores anything, with the same function.

use std::time::Duration;

use serde_json::Value;

use super::{Mode, Override};
use crate::edge::config::WorkerConfig;
use crate::edge::time::after;

/// The largest body read: a change is under 100 bytes.
pub const MAX_BODY_BYTES: usize = 4096;
/// The longest `ttl_s`: 30 days. Longer is "until I change it": leave
/// `ttl_s` out.
pub const MAX_TTL_S: u64 = 30 * 86_400;
/// The longest `drain_s`: a day.
pub const MAX_DRAIN_S: u64 = 86_400;
/// `drain_s` left out: five minutes for pinned sessions to finish.
pub const DEFAULT_DRAIN_S: u64 = 300;

const FIELDS: [&str; 3] = ["mode", "ttl_s", "drain_s"];

/// An operator's change, validated, not yet stored (no instants yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    /// What is asked.
    pub mode: Mode,
    /// Back to `auto` after this long; None: until changed.
    pub ttl: Option<Duration>,
    /// `drain` only: how long pinned requests keep going.
    pub drain: Duration,
}

/// What was wrong with a change: the field (`origin`, `mode`, `ttl_s`,
/// `drain_s`, or `body` for the whole) and the problem, for a 400.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadInput {
    /// The field at fault.
    pub field: &'static str,
    /// What is wrong and what is accepted, in one line.
    pub problem: String,
}

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.problem)
    }
}

fn bad(field: &'static str, problem: impl Into<String>) -> BadInput {
    BadInput {
        field,
        problem: problem.into(),
    }
}

impl Change {
    /// The override this change stores when the checker applies it at
    /// `now_ms`. `auto` keeps no expiry and no drain.
    pub fn at(&self, now_ms: u64) -> Override {
        let auto = self.mode == Mode::Auto;
        Override {
            mode: self.mode,
            set_at_ms: now_ms,
            expires_at_ms: self.ttl.filter(|_| !auto).map(|ttl| after(now_ms, ttl)),
            drain: if self.mode == Mode::Drain {
                self.drain
            } else {
                Duration::ZERO
            },
        }
    }
}

/// The index of the origin a path names; a 400 naming `origin` for one
/// the config does not have (listing those it has: the operator typed it).
pub fn origin_index(config: &WorkerConfig, name: &str) -> Result<usize, BadInput> {
    config
        .origins
        .iter()
        .position(|o| o.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = config.origins.iter().map(|o| o.name.as_str()).collect();
            // The name is the operator's own typing, shown back bounded.
            let shown: String = name.chars().take(64).collect();
            bad(
                "origin",
                format!(
                    "no origin is named {shown:?}; expected one of {}",
                    known.join(", ")
                ),
            )
        })
}

/// The names of the origins on `node`, in every site, in priority order;
/// why not, when no origin names that node.
pub fn node_origins<'c>(config: &'c WorkerConfig, node: &str) -> Result<Vec<&'c str>, BadInput> {
    let on: Vec<&str> = config
        .origins
        .iter()
        .filter(|o| o.node.as_deref() == Some(node))
        .map(|o| o.name.as_str())
        .collect();
    if !on.is_empty() {
        return Ok(on);
    }
    let mut known: Vec<&str> = config
        .origins
        .iter()
        .filter_map(|o| o.node.as_deref())
        .collect();
    known.sort_unstable();
    known.dedup();
    let shown: String = node.chars().take(64).collect();
    let expected = if known.is_empty() {
        "no origin names a node (give origins a `node`)".to_string()
    } else {
        format!("expected one of {}", known.join(", "))
    };
    Err(bad(
        "node",
        format!("no origin is on node {shown:?}; {expected}"),
    ))
}

/// Parses a change from the request body's text (at most
/// [`MAX_BODY_BYTES`]: the shell refuses a longer one before reading it).
pub fn parse_change(body: &str) -> Result<Change, BadInput> {
    let example = r#"expected a JSON object like {"mode": "drain", "ttl_s": 3600, "drain_s": 300}"#;
    if body.len() > MAX_BODY_BYTES {
        return Err(bad("body", format!("is over {MAX_BODY_BYTES} bytes")));
    }
    let value: Value =
        serde_json::from_str(body).map_err(|_| bad("body", format!("is not JSON; {example}")))?;
    let Value::Object(fields) = value else {
        return Err(bad("body", example));
    };
    if let Some(unknown) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        let shown: String = unknown.chars().take(64).collect();
        return Err(bad(
            "body",
            format!("unknown field {shown:?}; expected mode, ttl_s, drain_s"),
        ));
    }
    let mode = match fields.get("mode") {
        Some(Value::String(word)) => Mode::parse(word),
        _ => None,
    }
    .ok_or_else(|| {
        bad(
            "mode",
            "expected \"drain\", \"disable\", \"force-up\" or \"auto\"",
        )
    })?;
    let ttl = seconds(fields.get("ttl_s"), "ttl_s", 1, MAX_TTL_S)?.map(Duration::from_secs);
    let drain = seconds(fields.get("drain_s"), "drain_s", 0, MAX_DRAIN_S)?
        .map_or(Duration::from_secs(DEFAULT_DRAIN_S), Duration::from_secs);
    Ok(Change { mode, ttl, drain })
}

/// A whole number of seconds in `min..=max`; absent or null is None.
fn seconds(
    value: Option<&Value>,
    field: &'static str,
    min: u64,
    max: u64,
) -> Result<Option<u64>, BadInput> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|s| (min..=max).contains(s))
            .map(Some)
            .ok_or_else(|| {
                bad(
                    field,
                    format!("expected a whole number of seconds from {min} to {max}"),
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_changes() {
        let table: &[(&str, Mode, Option<u64>, u64)] = &[
            (
                r#"{"mode":"drain","ttl_s":3600,"drain_s":300}"#,
                Mode::Drain,
                Some(3600),
                300,
            ),
            (r#"{"mode":"drain"}"#, Mode::Drain, None, DEFAULT_DRAIN_S),
            (r#"{"mode":"drain","drain_s":0}"#, Mode::Drain, None, 0),
            (
                r#"{"mode":"disable","ttl_s":1}"#,
                Mode::Disable,
                Some(1),
                DEFAULT_DRAIN_S,
            ),
            (
                r#"{"mode":"force-up","ttl_s":2592000}"#,
                Mode::ForceUp,
                Some(MAX_TTL_S),
                DEFAULT_DRAIN_S,
            ),
            (
                r#"{"mode":"auto","ttl_s":null}"#,
                Mode::Auto,
                None,
                DEFAULT_DRAIN_S,
            ),
            (
                " {\"mode\" : \"auto\"}\n",
                Mode::Auto,
                None,
                DEFAULT_DRAIN_S,
            ),
        ];
        for (body, mode, ttl, drain) in table {
            let c = parse_change(body).unwrap_or_else(|e| panic!("{body}: {e}"));
            assert_eq!(c.mode, *mode, "{body}");
            assert_eq!(c.ttl, ttl.map(Duration::from_secs), "{body}");
            assert_eq!(c.drain, Duration::from_secs(*drain), "{body}");
        }
    }

    /// Every bad body names the field at fault.
    #[test]
    fn hostile_bodies_name_the_field() {
        let huge = format!(
            r#"{{"mode":"drain","pad":"{}"}}"#,
            "x".repeat(MAX_BODY_BYTES)
        );
        let table: &[(&str, &str)] = &[
            ("", "body"),
            ("mode=drain", "body"),
            ("[\"drain\"]", "body"),
            ("\"drain\"", "body"),
            ("null", "body"),
            ("{", "body"),
            (r#"{"mode":"drain","ttl":3600}"#, "body"),
            (r#"{"Mode":"drain"}"#, "body"),
            (&huge, "body"),
            ("{}", "mode"),
            (r#"{"mode":"Drain"}"#, "mode"),
            (r#"{"mode":"up"}"#, "mode"),
            (r#"{"mode":null}"#, "mode"),
            (r#"{"mode":1}"#, "mode"),
            (r#"{"mode":["drain"]}"#, "mode"),
            (r#"{"mode":"drain","ttl_s":0}"#, "ttl_s"),
            (r#"{"mode":"drain","ttl_s":-5}"#, "ttl_s"),
            (r#"{"mode":"drain","ttl_s":2592001}"#, "ttl_s"),
            (r#"{"mode":"drain","ttl_s":1e30}"#, "ttl_s"),
            (
                r#"{"mode":"drain","ttl_s":99999999999999999999999}"#,
                "ttl_s",
            ),
            (r#"{"mode":"drain","ttl_s":1.5}"#, "ttl_s"),
            (r#"{"mode":"drain","ttl_s":"3600"}"#, "ttl_s"),
            (r#"{"mode":"drain","ttl_s":true}"#, "ttl_s"),
            (r#"{"mode":"drain","drain_s":-1}"#, "drain_s"),
            (r#"{"mode":"drain","drain_s":86401}"#, "drain_s"),
            (r#"{"mode":"drain","drain_s":{}}"#, "drain_s"),
        ];
        for (body, field) in table {
            let err = parse_change(body).expect_err(body);
            assert_eq!(err.field, *field, "{body}: {err}");
            assert!(err.to_string().starts_with(&format!("{field}: ")), "{err}");
            assert!(err.problem.len() < 200, "one short line: {err}");
        }
    }

    #[test]
    fn a_change_stored_at_an_instant() {
        let drain = parse_change(r#"{"mode":"drain","ttl_s":60,"drain_s":5}"#).unwrap();
        let o = drain.at(1_000);
        assert_eq!(
            (o.set_at_ms, o.expires_at_ms, o.drain),
            (1_000, Some(61_000), Duration::from_secs(5))
        );
        let disable = parse_change(r#"{"mode":"disable","drain_s":5}"#)
            .unwrap()
            .at(7);
        assert_eq!(
            (disable.expires_at_ms, disable.drain),
            (None, Duration::ZERO),
            "drain_s is drain's"
        );
        let auto = parse_change(r#"{"mode":"auto","ttl_s":60}"#).unwrap().at(7);
        assert_eq!(auto.expires_at_ms, None, "auto never expires into anything");
    }

    #[test]
    fn unknown_origins_are_named_back_bounded() {
        let c = WorkerConfig::from_vars(|k| {
            (k == "ORIGINS").then(|| {
                r#"[{"name":"primary","url":"https://a.example"},{"name":"replica","url":"https://b.example"}]"#
                    .to_string()
            })
        })
        .unwrap();
        assert_eq!(origin_index(&c, "replica"), Ok(1));
        let err = origin_index(&c, "Primary").unwrap_err();
        assert_eq!(err.field, "origin");
        assert!(err.problem.contains("primary, replica"), "{err}");
        let err = origin_index(&c, &"x".repeat(10_000)).unwrap_err();
        assert!(err.problem.len() < 200, "{err}");
    }
}
