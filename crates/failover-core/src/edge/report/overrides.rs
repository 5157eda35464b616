//! An operator's overrides as the status document carries them (`overrides`:
//! per origin `{mode, set_at, expires_at}`), read for the page, the text and
//! the headline. An origin that is drained or disabled takes no new traffic
//! whatever its health; one forced up takes traffic whatever its health,
//! which the page says loudly, since that is how a dead origin keeps
//! getting requests.
//!
//! Read leniently, as everything the renderers read: `overrides` may be an
//! object keyed by origin name or an array of objects naming their
//! `origin`; a time may be ms since the epoch or already text (RFC 3339);
//! an entry without a mode, or with `auto`, is no override.

use serde_json::Value;

use super::when::{self, Precision};

/// What the override does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `drain`: no new traffic; what is pinned to it finishes.
    Drain,
    /// `disable`: no traffic at all.
    Disable,
    /// `force-up`: traffic whatever its health.
    ForceUp,
    /// A mode this build does not know, shown as it is written.
    Other(String),
}

impl Mode {
    fn parse(text: &str) -> Mode {
        match text {
            "drain" => Mode::Drain,
            "disable" => Mode::Disable,
            "force-up" => Mode::ForceUp,
            other => Mode::Other(other.to_string()),
        }
    }

    /// The mode's own word, as the document spells it.
    pub fn as_str(&self) -> &str {
        match self {
            Mode::Drain => "drain",
            Mode::Disable => "disable",
            Mode::ForceUp => "force-up",
            Mode::Other(text) => text,
        }
    }

    /// Whether the origin is kept from new traffic by it.
    pub fn holds_back(&self) -> bool {
        matches!(self, Mode::Drain | Mode::Disable)
    }

    /// What it means for traffic, in words.
    fn meaning(&self) -> &'static str {
        match self {
            Mode::Drain => "drained: no new traffic",
            Mode::Disable => "disabled: no traffic",
            Mode::ForceUp => "FORCED UP: gets traffic whatever its health",
            Mode::Other(_) => "an override this page does not know",
        }
    }
}

/// A time as the document gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stamp {
    Ms(u64),
    Text(String),
    Absent,
}

impl Stamp {
    fn read(entry: &Value, key: &str) -> Stamp {
        let ms_key = format!("{key}_ms");
        match (&entry[key], &entry[ms_key.as_str()]) {
            (Value::Number(n), _) | (_, Value::Number(n)) => n
                .as_u64()
                .map_or_else(|| Stamp::Text(when::unknown()), Stamp::Ms),
            (Value::String(s), _) => Stamp::Text(s.clone()),
            _ => Stamp::Absent,
        }
    }

    fn show(&self, now_ms: Option<u64>) -> Option<String> {
        match self {
            Stamp::Ms(ms) => Some(when::moment(*ms, now_ms, Precision::Minutes)),
            Stamp::Text(text) => Some(text.clone()),
            Stamp::Absent => None,
        }
    }
}

/// One origin's override.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    /// The origin's name.
    pub origin: String,
    /// What it does.
    pub mode: Mode,
    set_at: Stamp,
    expires_at: Stamp,
}

impl Override {
    /// When it was set, ms since the epoch, when the document says so.
    pub fn set_at_ms(&self) -> Option<u64> {
        match self.set_at {
            Stamp::Ms(ms) => Some(ms),
            _ => None,
        }
    }

    /// One line: `replica: FORCED UP: gets traffic whatever its health (set
    /// 19:21 UTC, until 20:21 UTC)`.
    pub fn describe(&self, now_ms: Option<u64>) -> String {
        let mut line = format!("{}: {}", self.origin, self.mode.meaning());
        if let Mode::Other(word) = &self.mode {
            line.push_str(&format!(" ({word})"));
        }
        let set = self.set_at.show(now_ms).map(|t| format!("set {t}"));
        let until = match self.expires_at.show(now_ms) {
            Some(t) => format!("until {t}"),
            None => "until cleared".to_string(),
        };
        let times: Vec<String> = set.into_iter().chain([until]).collect();
        line.push_str(&format!(" ({})", times.join(", ")));
        line
    }
}

/// Every override in the document, in the document's order; none when it
/// has no `overrides`.
pub fn read(doc: &Value) -> Vec<Override> {
    let entries: Vec<(String, &Value)> = match &doc["overrides"] {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(list) => list
            .iter()
            .map(|v| {
                let name = v["origin"].as_str().or_else(|| v["name"].as_str());
                (name.map_or_else(when::unknown, str::to_string), v)
            })
            .collect(),
        _ => Vec::new(),
    };
    entries
        .into_iter()
        .filter_map(|(origin, entry)| {
            let mode = match &entry["mode"] {
                // `auto` is how the Worker's document says "no override"
                // (overrides::api::by_name lists every origin).
                Value::String(mode) if mode == "auto" => return None,
                Value::String(mode) => Mode::parse(mode),
                Value::Null => return None,
                _ => Mode::Other(when::unknown()),
            };
            Some(Override {
                origin,
                mode,
                set_at: Stamp::read(entry, "set_at"),
                expires_at: Stamp::read(entry, "expires_at"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: u64 = 1_785_585_605_123; // 2026-08-01 12:00:05 UTC

    #[test]
    fn both_shapes_and_both_kinds_of_time_read_alike() {
        let keyed = json!({"overrides": {
            "primary": {"mode": "drain", "set_at": NOW - 60_000, "expires_at": null},
            "replica": {"mode": "force-up", "set_at": "2026-08-01T11:00:00Z", "expires_at": NOW + 3_600_000},
            "backup": {"mode": null},
        }});
        let listed = json!({"overrides": [
            {"origin": "primary", "mode": "drain", "set_at_ms": NOW - 60_000},
            {"name": "replica", "mode": "force-up", "set_at": "2026-08-01T11:00:00Z", "expires_at_ms": NOW + 3_600_000},
        ]});
        for doc in [keyed, listed] {
            let list = read(&doc);
            let lines: Vec<String> = list.iter().map(|o| o.describe(Some(NOW))).collect();
            assert_eq!(
                lines,
                [
                    "primary: drained: no new traffic (set 11:59 UTC, until cleared)",
                    "replica: FORCED UP: gets traffic whatever its health (set 2026-08-01T11:00:00Z, until 13:00 UTC)",
                ],
                "{doc}"
            );
            assert!(list[0].mode.holds_back());
            assert_eq!(list[0].set_at_ms(), Some(NOW - 60_000));
            assert_eq!(list[1].mode, Mode::ForceUp);
            assert_eq!(list[1].set_at_ms(), None);
        }
    }

    #[test]
    fn anything_odd_reads_as_unknown_never_as_a_panic() {
        for doc in [
            json!(null),
            json!({"overrides": 5}),
            json!({"overrides": "x"}),
        ] {
            assert!(read(&doc).is_empty(), "{doc}");
        }
        let odd = read(&json!({"overrides": [
            7,
            {"mode": "disable", "set_at": -1, "expires_at": 1.5},
            {"origin": "a", "mode": 3},
            {"origin": "b", "mode": "pause"},
        ]}));
        let lines: Vec<String> = odd.iter().map(|o| o.describe(Some(NOW))).collect();
        assert_eq!(
            lines,
            [
                "?: disabled: no traffic (set ?, until ?)",
                "a: an override this page does not know (?) (until cleared)",
                "b: an override this page does not know (pause) (until cleared)",
            ]
        );
        assert!(!odd[2].mode.holds_back());
        assert_eq!(odd[2].mode.as_str(), "pause");
    }
}
