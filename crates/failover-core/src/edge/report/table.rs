//! What a person is shown of the status document, as text: the headline,
//! whose view it is and how requests are steered, a row (a card, on a
//! narrow screen) per origin, the overrides, the recent changes and the
//! settings. The HTML page ([`super::page`]) and the terminal's text
//! ([`super::text`]) both draw this [`StatusTable`], so a rule here (a
//! column, a time format, a wording) holds for both.
//!
//! Built from the JSON document and nothing else: neither can show what
//! the JSON does not (no origin URL, no token). Anything missing or of the
//! wrong type reads `?` instead of failing: a panic in the Worker wipes the
//! health map it reports.

use serde_json::Value;

use super::changes::{self, Changes};
use super::headline::{failure_in_words, headline, site_headlines, Headline};
use super::overrides::{self, Mode};
use super::when::{ago, duration, unknown, utc};

/// The first line of every rendering, the page's `<title>` and `<h1>`: how
/// scripts/status.mjs tells the Worker's answer from an origin's.
pub const TITLE: &str = "tunnel-failover status";

/// The origins table's header; every row has one cell per column (and a
/// card on a narrow page labels each cell with its column).
pub const COLUMNS: [&str; 6] = [
    "Origin",
    "State",
    "Since",
    "Last error",
    "Colo view",
    "Global view",
];

/// An override's line, and whether it is one to shout about (force-up:
/// traffic to an origin whatever its health).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverrideLine {
    /// `replica: FORCED UP: gets traffic whatever its health (set ...)`.
    pub text: String,
    /// Force-up.
    pub loud: bool,
}

/// What the page shows, as text: each cell is one or more lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusTable {
    /// When the document was made, ms since the epoch; relative times count
    /// back from it.
    pub now_ms: Option<u64>,
    /// The first thing a person reads.
    pub headline: Headline,
    /// Under it: since when exactly, and how long ago.
    pub headline_detail: Option<String>,
    /// With several sites: each site's own headline, in order.
    pub sites: Vec<(String, Headline)>,
    /// Version, revision and "as of" lines.
    pub about: Vec<String>,
    /// (what, value): whose view the page is, the steering, the weights,
    /// whether colo and global health are on.
    pub view: Vec<(&'static str, String)>,
    /// One row per origin, in priority order.
    pub rows: Vec<Vec<Vec<String>>>,
    /// One line per override, when the document has any.
    pub overrides: Vec<OverrideLine>,
    /// The history, when the document has one.
    pub changes: Option<Changes>,
    /// (what, value) pairs below everything.
    pub settings: Vec<(&'static str, String)>,
}

/// The table for a status document (`report::status_document`).
pub fn table(doc: &Value) -> StatusTable {
    let now = doc["now_ms"].as_u64();
    let rise = doc["health_rise"].as_u64();
    let overrides = overrides::read(doc);
    // With several sites (SITES), each origin says whose it is.
    let several = doc["sites"].as_array().is_some_and(|s| s.len() > 1);
    let rows = origins(doc)
        .iter()
        .map(|origin| {
            let name = origin["name"].as_str();
            let mode = overrides
                .iter()
                .find(|o| Some(o.origin.as_str()) == name)
                .map(|o| &o.mode);
            row(origin, now, rise, mode, several)
        })
        .collect();
    let about = vec![
        format!(
            "version {}, revision {}",
            text(&doc["version"]),
            text(&doc["revision"])
        ),
        format!("as of {}", now.map_or_else(unknown, utc)),
    ];
    let settings = [
        ("attempt timeout", "attempt_timeout_ms"),
        ("probe interval while down", "health_interval_ms"),
    ]
    .into_iter()
    .filter_map(|(what, key)| Some((what, duration(doc[key].as_u64()?))))
    .chain(rise.map(|r| ("good probes to come back up", r.to_string())))
    .chain(slow_start(&doc["slow_start"]).map(|ramp| ("slow start", ramp)))
    .collect();
    let headline = headline(doc);
    let headline_detail = headline
        .since_ms
        .map(|since| format!("since {}, {}", utc(since), ago(now, Some(since))));
    StatusTable {
        now_ms: now,
        headline,
        headline_detail,
        sites: site_headlines(doc),
        about,
        view: view(doc),
        rows,
        overrides: overrides
            .iter()
            .map(|o| OverrideLine {
                text: o.describe(now),
                loud: o.mode == Mode::ForceUp,
            })
            .collect(),
        changes: changes::read(doc),
        settings,
    }
}

/// `SLOW_START_S` and its minimum, when on: "60 s from 10 %".
fn slow_start(ramp: &Value) -> Option<String> {
    let window = ramp["window_s"].as_u64().filter(|&w| w > 0)?;
    let min = ramp["min_pct"].as_u64()?;
    Some(format!("{window} s from {min} %"))
}

fn origins(doc: &Value) -> &[Value] {
    doc["origins"].as_array().map_or(&[][..], Vec::as_slice)
}

/// Whose view the page is and how requests are steered, in plain words.
fn view(doc: &Value) -> Vec<(&'static str, String)> {
    let mut lines = vec![(
        "View",
        "this isolate: the Worker instance that answered, and the health map it routes \
         requests by"
            .to_string(),
    )];
    let steering = match doc["steering"].as_str() {
        Some("failover") => {
            "failover: every request to the first healthy origin, in priority order".to_string()
        }
        Some("weighted") => {
            "weighted: requests spread over the healthy origins by weight".to_string()
        }
        Some("hash") => format!(
            "hash on {}: the same key always to the same healthy origin, spread by weight",
            text(&doc["hash_key"])
        ),
        Some(other) => other.to_string(),
        None => unknown(),
    };
    lines.push(("Steering", steering));
    let weights: Vec<String> = origins(doc)
        .iter()
        .map(|o| {
            let weight = o["weight"].as_u64().map_or_else(unknown, |w| w.to_string());
            format!("{} {weight}", text(&o["name"]))
        })
        .collect();
    if !weights.is_empty() {
        let mut line = weights.join(", ");
        if doc["steering"].as_str() == Some("failover") {
            line.push_str(" (failover steering does not use them)");
        }
        lines.push(("Weights", line));
    }
    let switch = |key: &str, on: &str, off: &str| match doc[key].as_bool() {
        Some(true) => Some(format!("on: {on}")),
        Some(false) => Some(format!("off: {off}")),
        None => None,
    };
    if let Some(colo) = switch(
        "colo_health",
        "verdicts shared with the location's other isolates (COLO_HEALTH)",
        "this isolate decides alone (COLO_HEALTH)",
    ) {
        lines.push(("Colo health", colo));
    }
    if let Some(global) = switch(
        "global_health",
        "the global checker's verdicts are adopted (HEALTH_CHECKER bound)",
        "no global checker (no HEALTH_CHECKER binding)",
    ) {
        lines.push(("Global health", global));
    }
    lines
}

fn row(
    origin: &Value,
    now: Option<u64>,
    rise: Option<u64>,
    mode: Option<&Mode>,
    several: bool,
) -> Vec<Vec<String>> {
    let state = text(&origin["state"]);
    let decided_by = match origin["local"]["decided_by"].as_str() {
        Some("local") => "decided by this isolate".to_string(),
        Some("colo") => "decided by the colo".to_string(),
        Some("global") => "decided by the global checker".to_string(),
        other => format!("decided by {}", other.map_or_else(unknown, str::to_string)),
    };
    let mut state_cell = vec![state.clone(), decided_by];
    // Up and ramping (slow start): how much of its traffic it gets so far.
    if let Some(pct) = origin["slow_start_pct"].as_u64() {
        state_cell.push(format!("slow start: {pct} % of its requests"));
    }
    // Down, the good streak is the way back: how far along it is.
    if state == "down" {
        let good = origin["good_streak"]
            .as_u64()
            .map_or_else(unknown, |g| g.to_string());
        state_cell.push(match rise {
            Some(rise) => format!("{good} of {rise} good probes"),
            None => format!("{good} good probes"),
        });
    }
    if let Some(mode) = mode {
        state_cell.push(match mode {
            Mode::ForceUp => "override: FORCED UP".to_string(),
            mode => format!("override: {}", mode.as_str()),
        });
    }
    let since = match &origin["last_change_ms"] {
        // The isolate has seen no flip: its verdict is the cold default.
        Value::Null => vec!["isolate start".to_string()],
        t => vec![ago(now, t.as_u64()), t.as_u64().map_or_else(unknown, utc)],
    };
    let last_error = match &origin["last_error"] {
        Value::Null => "none".to_string(),
        Value::String(e) => failure_in_words(e).to_string(),
        _ => unknown(),
    };
    // Its site (with several) and its node (when it names one).
    let mut name_cell = vec![text(&origin["name"])];
    let whose: Vec<String> = [("site", several), ("node", true)]
        .into_iter()
        .filter_map(|(key, shown)| {
            let value = origin[key].as_str().filter(|_| shown)?;
            Some(format!("{key} {value}"))
        })
        .collect();
    if !whose.is_empty() {
        name_cell.push(whose.join(", "));
    }
    vec![
        name_cell,
        state_cell,
        since,
        vec![last_error],
        shared_view(&origin["colo"], now),
        shared_view(&origin["global"], now),
    ]
}

/// A verdict read from the colo cache or the global checker.
fn shared_view(view: &Value, now: Option<u64>) -> Vec<String> {
    if view.is_null() {
        return vec!["not read".to_string()];
    }
    let since = view["since_ms"].as_u64();
    vec![
        text(&view["state"]),
        format!("since {}", ago(now, since)),
        since.map_or_else(unknown, utc),
        format!("confirmed {}", ago(now, view["confirmed_ms"].as_u64())),
    ]
}

fn text(value: &Value) -> String {
    value.as_str().map_or_else(unknown, str::to_string)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::edge::report::headline::Tone;
    use serde_json::json;

    /// A status document with one origin down and one up, shared by the
    /// page's and the text's tests.
    pub(crate) fn document() -> Value {
        json!({
            "version": "0.1.0",
            "revision": "abc123def456",
            "now_ms": 1_785_585_605_123u64,
            "attempt_timeout_ms": 6000,
            "health_interval_ms": 15000,
            "health_rise": 2,
            "steering": "failover",
            "colo_health": true,
            "global_health": false,
            "origins": [
                {
                    "name": "primary", "priority": 0, "weight": 1, "state": "down",
                    "good_streak": 1, "bad_streak": 0, "last_error": "status 530",
                    "last_change_ms": 1_785_585_593_000u64,
                    "local": {"state": "down", "since_ms": 1_785_585_593_000u64, "decided_by": "local"},
                    "colo": {"state": "down", "since_ms": 1_785_585_592_000u64, "confirmed_ms": 1_785_585_603_000u64},
                    "global": null,
                },
                {
                    "name": "replica", "priority": 1, "weight": 1, "state": "up",
                    "good_streak": 0, "bad_streak": 0, "last_error": null,
                    "last_change_ms": null,
                    "local": {"state": "up", "since_ms": null, "decided_by": "local"},
                    "colo": null, "global": null,
                },
            ],
        })
    }

    /// [`document`] with a history and an override, as the global checker
    /// and the overrides add them.
    pub(crate) fn document_with_history() -> Value {
        let mut doc = document();
        doc["events_view"] = json!("global");
        doc["events"] = json!([
            {"id": "e-2", "type": "origin.down", "origin": "primary", "at": "2026-08-01T11:59:53Z",
             "at_ms": 1_785_585_593_000u64, "reason": "status 530", "site": "www.example.com",
             "source": "edge", "from": "up", "to": "down", "more": 0,
             "message": "www.example.com: origin primary is down (status 530)"},
            {"id": "e-1", "type": "origin.up", "origin": "primary", "at": "2026-07-31T22:10:00Z",
             "at_ms": 1_785_535_800_000u64, "reason": "2 good probes", "site": "www.example.com",
             "source": "edge", "from": "down", "to": "up", "more": 2,
             "message": "www.example.com: origin primary is up again (2 good probes), and 2 more changes"},
        ]);
        doc["overrides"] = json!({
            "replica": {"mode": "force-up", "set_at": 1_785_585_000_000u64, "expires_at": 1_785_589_200_000u64},
        });
        doc
    }

    #[test]
    fn the_table() {
        let t = table(&document());
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(t.headline.tone, Tone::Failover);
        assert_eq!(
            t.headline.text,
            "Serving from replica (failover) since 11:59 UTC — primary down: status 530"
        );
        assert_eq!(
            t.headline_detail.as_deref(),
            Some("since 2026-08-01 11:59:53 UTC, 12s ago")
        );
        assert_eq!(
            t.about,
            s(&[
                "version 0.1.0, revision abc123def456",
                "as of 2026-08-01 12:00:05 UTC"
            ])
        );
        let view: Vec<&str> = t.view.iter().map(|(what, _)| *what).collect();
        assert_eq!(
            view,
            [
                "View",
                "Steering",
                "Weights",
                "Colo health",
                "Global health"
            ]
        );
        assert!(t.view[0].1.starts_with("this isolate: "));
        assert_eq!(
            t.view[2].1,
            "primary 1, replica 1 (failover steering does not use them)"
        );
        assert!(t.view[3].1.starts_with("on: "));
        assert!(t.view[4].1.starts_with("off: no global checker"));
        assert_eq!(
            t.rows[0],
            vec![
                s(&["primary"]),
                s(&["down", "decided by this isolate", "1 of 2 good probes"]),
                s(&["12s ago", "2026-08-01 11:59:53 UTC"]),
                s(&["status 530"]),
                s(&[
                    "down",
                    "since 13s ago",
                    "2026-08-01 11:59:52 UTC",
                    "confirmed 2s ago"
                ]),
                s(&["not read"]),
            ]
        );
        assert_eq!(
            t.rows[1],
            vec![
                s(&["replica"]),
                s(&["up", "decided by this isolate"]),
                s(&["isolate start"]),
                s(&["none"]),
                s(&["not read"]),
                s(&["not read"]),
            ]
        );
        assert!(t.overrides.is_empty());
        assert_eq!(t.changes, None);
        assert_eq!(
            t.settings,
            vec![
                ("attempt timeout", "6 s".to_string()),
                ("probe interval while down", "15 s".to_string()),
                ("good probes to come back up", "2".to_string()),
            ]
        );
    }

    #[test]
    fn history_and_overrides_when_the_document_has_them() {
        let t = table(&document_with_history());
        let changes = t.changes.expect("events");
        assert_eq!(
            changes.title,
            "Recent changes, as the global checker saw them"
        );
        assert_eq!(changes.rows.len(), 2);
        assert_eq!(changes.rows[0].change, "up → down");
        assert_eq!(changes.rows[1].time, "2026-07-31 22:10:00 UTC");
        assert_eq!(
            t.overrides,
            vec![OverrideLine {
                text: "replica: FORCED UP: gets traffic whatever its health (set 11:50 UTC, \
                       until 13:00 UTC)"
                    .to_string(),
                loud: true,
            }]
        );
        assert_eq!(
            t.rows[1][1],
            ["up", "decided by this isolate", "override: FORCED UP"]
        );
        assert!(t
            .headline
            .text
            .ends_with("; replica FORCED UP by an override, whatever its health"));
    }

    #[test]
    fn a_ramping_origin_says_how_far_along_it_is() {
        let mut doc = document();
        doc["origins"][1]["slow_start_pct"] = json!(25);
        doc["slow_start"] = json!({"window_s": 60, "min_pct": 10});
        let t = table(&doc);
        assert_eq!(
            t.rows[1][1],
            vec![
                "up".to_string(),
                "decided by this isolate".to_string(),
                "slow start: 25 % of its requests".to_string()
            ]
        );
        assert_eq!(
            t.settings.last(),
            Some(&("slow start", "60 s from 10 %".to_string()))
        );
        doc["slow_start"] = json!({"window_s": 0, "min_pct": 10});
        assert!(table(&doc)
            .settings
            .iter()
            .all(|(what, _)| *what != "slow start"));
    }

    #[test]
    fn anything_missing_or_mistyped_reads_as_unknown() {
        for doc in [
            json!(null),
            json!([]),
            json!({"origins": {}}),
            json!({"origins": [null, 1, "x", {"state": 5, "colo": 7, "last_change_ms": -1}]}),
        ] {
            let t = table(&doc);
            assert_eq!(t.about[0], "version ?, revision ?");
            assert!(t.settings.is_empty());
            assert_eq!(t.headline.tone, Tone::Unknown);
            for row in &t.rows {
                assert_eq!(row.len(), COLUMNS.len());
                assert_eq!(row[0], vec!["?"]);
            }
        }
        let odd = table(&json!({"origins": [{"state": 5, "colo": 7, "last_change_ms": -1}]}));
        assert_eq!(odd.rows[0][2], vec!["?", "?"]);
        assert_eq!(odd.rows[0][4], vec!["?", "since ?", "?", "confirmed ?"]);
        assert_eq!(odd.view[1], ("Steering", "?".to_string()));
    }
}
