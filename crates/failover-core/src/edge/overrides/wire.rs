//! How overrides travel: in the checker's answer (with its verdicts), in the
//! location's cache entry that spares the other isolates a request to the
//! checker (`edge::consult`), and in the checker's own storage. One line
//! (it rides in a response header), entries split by `;`, parsed without
//! serde:
//!
//! `1796153464000; primary up 1796153400000 1796153460000; @primary drain 1796153464000 1796157064000 300`
//!
//! The first entry is when the checker answered (ms); a verdict entry is
//! `name` and `shared::SharedVerdict`'s wire format; an override entry is
//! `@name mode set_at_ms expires_at_ms|- drain_s`. Origin names never start
//! with `@` or hold `;` or spaces (config::origins), so the two cannot be
//! confused, and a malformed or unknown entry is skipped, not fatal: an
//! isolate of the next release reads this one's lines, and the other way.

use std::time::Duration;

use super::{Mode, Override, Overrides};
use crate::edge::config::WorkerConfig;
use crate::edge::shared::SharedVerdict;

/// The header the checker's answer to an override change carries the new
/// snapshot in (src/operator/overrides.rs writes it; src/admin.rs, in the
/// isolate, puts it in the location's cache).
pub const SNAPSHOT_HEADER: &str = "x-tunnel-failover-snapshot";

/// What the checker tells the isolates, as of one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// When the checker answered, ms on its clock: the location's copy is
    /// stale one `HEALTH_INTERVAL_MS` later (`consult::is_stale`).
    pub as_of_ms: u64,
    /// Its verdicts, by origin name.
    pub verdicts: Vec<(String, SharedVerdict)>,
    /// Its overrides, by origin name (only those ever set).
    pub overrides: Vec<(String, Override)>,
}

impl Snapshot {
    /// The checker's verdicts and overrides, by name, for `config`'s origins.
    pub fn of(
        config: &WorkerConfig,
        as_of_ms: u64,
        verdicts: impl IntoIterator<Item = (usize, SharedVerdict)>,
        overrides: &Overrides,
    ) -> Snapshot {
        let name = |i: usize| config.origins.get(i).map(|o| o.name.clone());
        Snapshot {
            as_of_ms,
            verdicts: verdicts
                .into_iter()
                .filter_map(|(i, v)| Some((name(i)?, v)))
                .collect(),
            overrides: (0..overrides.len())
                .filter_map(|i| Some((name(i)?, *overrides.get(i)?)))
                .collect(),
        }
    }

    /// The one-line wire format.
    pub fn encode(&self) -> String {
        let mut out = self.as_of_ms.to_string();
        for (name, v) in &self.verdicts {
            out.push_str("; ");
            out.push_str(name);
            out.push(' ');
            out.push_str(&v.encode());
        }
        for (name, o) in &self.overrides {
            out.push_str("; ");
            out.push_str(&encode_override(name, o));
        }
        out
    }

    /// None unless the first entry is an instant; bad entries are skipped.
    pub fn decode(text: &str) -> Option<Snapshot> {
        let mut entries = text.split(';').map(str::trim);
        let as_of_ms = entries.next()?.parse().ok()?;
        let mut snapshot = Snapshot {
            as_of_ms,
            verdicts: Vec::new(),
            overrides: Vec::new(),
        };
        for entry in entries {
            if let Some(o) = decode_override(entry) {
                snapshot.overrides.push(o);
            } else if let Some((name, rest)) = entry.split_once(' ') {
                if let Some(v) = SharedVerdict::decode(rest) {
                    snapshot.verdicts.push((name.to_string(), v));
                }
            }
        }
        Some(snapshot)
    }

    /// Its overrides as a table for `config` (by index; names the config
    /// does not have are dropped: the config changed since).
    pub fn overrides_for(&self, config: &WorkerConfig) -> Overrides {
        by_index(config, &self.overrides)
    }
}

fn by_index(config: &WorkerConfig, named: &[(String, Override)]) -> Overrides {
    let mut table = Overrides::none(config.origins.len());
    for (name, o) in named {
        if let Some(i) = config.origins.iter().position(|c| &c.name == name) {
            table.set(i, *o);
        }
    }
    table
}

/// `@name mode set_at_ms expires_at_ms|- drain_s`.
fn encode_override(name: &str, o: &Override) -> String {
    let expires = o
        .expires_at_ms
        .map_or_else(|| "-".to_string(), |at| at.to_string());
    format!(
        "@{name} {} {} {expires} {}",
        o.mode.as_str(),
        o.set_at_ms,
        o.drain.as_secs()
    )
}

fn decode_override(entry: &str) -> Option<(String, Override)> {
    let mut parts = entry.strip_prefix('@')?.split_ascii_whitespace();
    let name = parts.next()?;
    let mode = Mode::parse(parts.next()?)?;
    let set_at_ms = parts.next()?.parse().ok()?;
    let expires_at_ms = match parts.next()? {
        "-" => None,
        at => Some(at.parse().ok()?),
    };
    let drain = Duration::from_secs(parts.next()?.parse().ok()?);
    parts.next().is_none().then(|| {
        (
            name.to_string(),
            Override {
                mode,
                set_at_ms,
                expires_at_ms,
                drain,
            },
        )
    })
}

/// The checker's storage of its overrides: the override entries alone.
pub fn encode_overrides(config: &WorkerConfig, overrides: &Overrides) -> String {
    Snapshot::of(config, 0, [], overrides)
        .overrides
        .iter()
        .map(|(name, o)| encode_override(name, o))
        .collect::<Vec<_>>()
        .join("; ")
}

/// [`encode_overrides`] read back for `config`; bad entries are skipped.
pub fn decode_overrides(config: &WorkerConfig, text: &str) -> Overrides {
    let named: Vec<(String, Override)> = text
        .split(';')
        .filter_map(|e| decode_override(e.trim()))
        .collect();
    by_index(config, &named)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streak::Verdict;

    fn config() -> WorkerConfig {
        WorkerConfig::from_vars(|k| {
            (k == "ORIGINS").then(|| {
                r#"[{"name":"primary","url":"https://a.example"},{"name":"replica","url":"https://b.example"}]"#
                    .to_string()
            })
        })
        .unwrap()
    }

    fn drain() -> Override {
        Override {
            mode: Mode::Drain,
            set_at_ms: 1_796_153_464_000,
            expires_at_ms: Some(1_796_157_064_000),
            drain: Duration::from_secs(300),
        }
    }

    #[test]
    fn round_trip() {
        let c = config();
        let mut table = Overrides::none(2);
        table.set(0, drain());
        table.set(
            1,
            Override {
                mode: Mode::ForceUp,
                set_at_ms: 5,
                expires_at_ms: None,
                drain: Duration::ZERO,
            },
        );
        let up = SharedVerdict {
            verdict: Verdict::Up,
            since_ms: 1,
            confirmed_ms: 2,
        };
        let s = Snapshot::of(&c, 1_796_153_465_000, [(0, up), (9, up)], &table);
        let text = s.encode();
        assert_eq!(
            text,
            "1796153465000; primary up 1 2; @primary drain 1796153464000 1796157064000 300; @replica force-up 5 - 0"
        );
        assert!(!text.contains('\n'), "one line: it rides in a header");
        assert_eq!(Snapshot::decode(&text), Some(s.clone()));
        assert_eq!(s.overrides_for(&c), table);
        let stored = encode_overrides(&c, &table);
        assert_eq!(decode_overrides(&c, &stored), table);
        assert_eq!(decode_overrides(&c, ""), Overrides::none(2));
    }

    #[test]
    fn garbage_is_skipped_or_refused() {
        for bad in ["", "x; primary up 1 2", "-1", "<html>"] {
            assert_eq!(Snapshot::decode(bad), None, "{bad:?}");
        }
        let s = Snapshot::decode(
            "7; primary up 1 2 3; @primary sideways 1 - 0; @primary drain 1 x 0; @replica disable 1 - 0 9; \
             @ghost disable 1 - 0; future-kind of entry; replica down 3 4",
        )
        .unwrap();
        assert_eq!(s.as_of_ms, 7);
        assert_eq!(s.verdicts.len(), 1, "{s:?}");
        assert_eq!(s.overrides.len(), 1, "only @ghost is well formed: {s:?}");
        assert_eq!(
            s.overrides_for(&config()),
            Overrides::none(2),
            "ghost is no origin of ours"
        );
    }
}
