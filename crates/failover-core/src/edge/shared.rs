//! Verdicts shared between isolates: through the colo's cache (one isolate's
//! discovery spares the others a timeout) and from the global health checker
//! (a Durable Object). A shared verdict is a hint with a timestamp, never
//! trusted over fresher local evidence (see `HealthMap::adopt`).
//!
//! Wire format, chosen to be parsed without serde on the request path:
//! one verdict is `down 1796024281610 1796024311610` (state, since when,
//! last confirmed; ms since the epoch); a map from the global checker is one
//! `name state since confirmed` line per origin.

use crate::edge::config::Origin;
use std::time::Duration;

use crate::edge::fnv::{fmix64, fnv1a64, FNV64_OFFSET};
use crate::edge::time::{after, millis};
use crate::streak::Verdict;

/// The Cache API key of an origin's colo verdict. Isolates of every Worker
/// in a zone share `caches.default`, so the key carries a hash of what the
/// verdict is about, not just the origin's name: `primary` in a staging
/// Worker and `primary` in production are different origins and never
/// read each other's verdicts. Two Workers that define an origin exactly
/// alike (URL, health path and expectation, Access client id) do share,
/// rightly: their probes would see the same thing.
pub fn colo_key(origin: &Origin) -> String {
    let mut h = fnv1a64(FNV64_OFFSET, b"tunnel-failover colo v1\0");
    let access_id = origin.access.as_ref().map_or("", |t| t.client_id.as_str());
    let expect = origin.health_expect.describe();
    for part in [
        origin.name.as_str(),
        origin.base.as_str(),
        origin.health_path.as_str(),
        expect.as_str(),
        access_id,
    ] {
        h = fnv1a64(h, part.as_bytes());
        h = fnv1a64(h, b"\0");
    }
    format!(
        "https://tunnel-failover.internal/health/{}/{:016x}",
        origin.name,
        fmix64(h)
    )
}

/// Where a verdict came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// This isolate's own attempts and probes.
    Local,
    /// Another isolate in the same location, through the Cache API.
    Colo,
    /// The global health checker (Durable Object).
    Global,
}

impl Source {
    /// For logs and the status endpoint's `decided_by`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Local => "local",
            Source::Colo => "colo",
            Source::Global => "global",
        }
    }
}

/// A verdict as published. `since_ms` says how new the news is (it is
/// adopted only if newer than what the reader saw itself); `confirmed_ms`
/// says whether it still holds (it is ignored once older than a max age).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedVerdict {
    /// What the publisher routes by.
    pub verdict: Verdict,
    /// When the publisher's verdict last flipped, ms since the epoch.
    pub since_ms: u64,
    /// When the publisher last saw evidence for it.
    pub confirmed_ms: u64,
}

impl SharedVerdict {
    /// The wire format: `down 1796024281610 1796024311610`.
    pub fn encode(&self) -> String {
        format!(
            "{} {} {}",
            self.verdict.as_str(),
            self.since_ms,
            self.confirmed_ms
        )
    }

    /// None for anything malformed: an unreadable entry is ignored.
    pub fn decode(text: &str) -> Option<SharedVerdict> {
        let mut parts = text.split_ascii_whitespace();
        let verdict = parse_verdict(parts.next()?)?;
        let since_ms = parts.next()?.parse().ok()?;
        let confirmed_ms = parts.next()?.parse().ok()?;
        let sane = since_ms <= confirmed_ms;
        (sane && parts.next().is_none()).then_some(SharedVerdict {
            verdict,
            since_ms,
            confirmed_ms,
        })
    }
}

fn parse_verdict(word: &str) -> Option<Verdict> {
    match word {
        "up" => Some(Verdict::Up),
        "down" => Some(Verdict::Down),
        _ => None,
    }
}

/// The global checker's answer: one `name state since confirmed` line per origin.
pub fn encode_map<'a>(entries: impl IntoIterator<Item = (&'a str, SharedVerdict)>) -> String {
    let mut out = String::new();
    for (name, v) in entries {
        out.push_str(name);
        out.push(' ');
        out.push_str(&v.encode());
        out.push('\n');
    }
    out
}

/// Parses `encode_map`'s output; malformed lines are skipped.
pub fn decode_map(text: &str) -> Vec<(&str, SharedVerdict)> {
    text.lines()
        .filter_map(|line| {
            let (name, rest) = line.trim().split_once(' ')?;
            Some((name, SharedVerdict::decode(rest)?))
        })
        .collect()
}

/// How far apart an isolate reads the colo's shared verdicts, at most: 250
/// ms, or the probe interval when that is shorter.
pub fn colo_read_every(health_interval: Duration) -> Duration {
    const READ_EVERY: Duration = Duration::from_millis(250);
    READ_EVERY.min(health_interval)
}

/// How long an attempt may wait for its answer before the colo's verdicts
/// are worth reading beside the next request (`Isolate::colo_read_wanted`):
/// one read period, or half the attempt timeout when that is shorter, so a
/// read can land while the attempt still waits. A healthy origin that
/// answers within it costs its isolate no colo read at all.
pub fn suspect_after(read_every: Duration, attempt_timeout: Duration) -> Duration {
    read_every.min(attempt_timeout / 2)
}

/// A "do this at most once per period" timer, for cache reads and checker
/// consultations that must not run on every request.
#[derive(Clone, Debug)]
pub struct Cadence {
    every: Duration,
    last_ms: Option<u64>,
}

impl Cadence {
    /// A period of `every`, due at once (never taken yet).
    pub fn new(every: Duration) -> Cadence {
        Cadence {
            every,
            last_ms: None,
        }
    }

    /// True when the period has passed, without restarting it.
    pub fn is_due(&self, now_ms: u64) -> bool {
        self.last_ms
            .is_none_or(|last| now_ms.saturating_sub(last) >= millis(self.every))
    }

    /// When `is_due` turns true: 0 if it has never been taken.
    pub fn next_due_ms(&self) -> u64 {
        self.last_ms.map_or(0, |last| after(last, self.every))
    }

    /// True (and the period restarts) when the period has passed.
    pub fn take(&mut self, now_ms: u64) -> bool {
        let due = self.is_due(now_ms);
        if due {
            self.last_ms = Some(now_ms);
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins(json: &str) -> Vec<Origin> {
        crate::edge::config::WorkerConfig::from_vars(|k| (k == "ORIGINS").then(|| json.to_string()))
            .unwrap()
            .origins
    }

    #[test]
    fn colo_keys_belong_to_a_deployment_not_a_name() {
        let staging = origins(r#"[{"name":"primary","url":"https://staging-a.example"}]"#);
        let production = origins(r#"[{"name":"primary","url":"https://a.example"}]"#);
        let other_path =
            origins(r#"[{"name":"primary","url":"https://a.example","health_path":"/up"}]"#);
        let twin = origins(r#"[{"name":"primary","url":"https://A.example/"}]"#);
        let key = colo_key(&production[0]);
        assert_ne!(colo_key(&staging[0]), key);
        assert_ne!(colo_key(&other_path[0]), key);
        assert_eq!(
            colo_key(&twin[0]),
            key,
            "the same origin, written differently"
        );
        assert!(key.starts_with("https://tunnel-failover.internal/health/primary/"));
    }

    fn v(verdict: Verdict, since_ms: u64, confirmed_ms: u64) -> SharedVerdict {
        SharedVerdict {
            verdict,
            since_ms,
            confirmed_ms,
        }
    }

    #[test]
    fn verdict_round_trip_and_garbage() {
        let verdict = v(Verdict::Down, 1_796_024_281_610, 1_796_024_311_610);
        assert_eq!(verdict.encode(), "down 1796024281610 1796024311610");
        assert_eq!(SharedVerdict::decode(&verdict.encode()), Some(verdict));
        for bad in [
            "",
            "down",
            "down 1",
            "sideways 1 2",
            "up -1 2",
            "up 1 2 3",
            "up x 2",
            "up 5 4",
            "<html>",
        ] {
            assert_eq!(SharedVerdict::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn map_round_trip_skips_bad_lines() {
        let up = v(Verdict::Up, 5, 6);
        let down = v(Verdict::Down, 7, 8);
        let text = encode_map([("primary", down), ("replica", up)]);
        assert_eq!(text, "primary down 7 8\nreplica up 5 6\n");
        let noisy = format!("{text}garbage\nx y z\n");
        assert_eq!(decode_map(&noisy), vec![("primary", down), ("replica", up)]);
    }

    #[test]
    fn cadence() {
        let mut c = Cadence::new(Duration::from_millis(1000));
        assert!(c.is_due(50));
        assert!(c.take(50));
        assert!(!c.is_due(1049));
        assert!(!c.take(1049));
        assert!(c.is_due(1050), "peeking does not restart the period");
        assert!(c.take(1050));
        assert!(!c.take(1051));
    }

    #[test]
    fn next_due_is_when_is_due_turns_true() {
        let mut c = Cadence::new(Duration::from_millis(250));
        assert_eq!(c.next_due_ms(), 0, "never taken: due at once");
        assert!(c.take(1_000));
        assert_eq!(c.next_due_ms(), 1_250);
        assert!(!c.is_due(1_249));
        assert!(c.is_due(1_250));
    }
}
