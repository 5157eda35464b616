//! "Recent changes": the status document's `events` (newest first, each as
//! `notify::Event::to_json` writes it) as rows a person reads: when, which
//! origin, from → to, why. Labelled by `events_view`, because a history kept
//! by one isolate is not the site's: `global` is the global checker's (one
//! record for the whole site), `isolate` this Worker instance's own
//! transitions, which other isolates may not share.

use serde_json::Value;

use super::when::{self, Precision};
use crate::notify::Kind;

/// At most this many rows, whatever the document holds: the page stays
/// small (the Worker sends 50).
pub const MAX_ROWS: usize = 100;

/// The section, when the document has a history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Changes {
    /// The heading, which says whose view it is.
    pub title: String,
    /// A line under it saying what that means.
    pub note: String,
    /// Newest first.
    pub rows: Vec<Change>,
}

/// One event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// `19:21:04 UTC`, with the date when not today.
    pub time: String,
    /// The exact instant for the page's `<time>`, when known.
    pub at_iso: Option<String>,
    /// The origin, `node <name>` for the agent's, `all origins` for `all.*`.
    pub subject: String,
    /// `up → down`, or the event's type where it has no states.
    pub change: String,
    /// The evidence, with what the flap guard held back.
    pub reason: String,
    /// Bad news (`origin.down`, `all.down`, ...), good news, or a type this
    /// build does not know.
    pub bad: Option<bool>,
}

/// The section for a status document; `None` when it has no `events`.
pub fn read(doc: &Value) -> Option<Changes> {
    let events = doc["events"].as_array()?;
    let (title, note) = match doc["events_view"].as_str() {
        Some("global") => (
            "Recent changes, as the global checker saw them",
            "One record for the whole site, kept by the global checker; newest first.",
        ),
        Some("isolate") => (
            "Recent changes, as seen by this isolate only",
            "No global checker: these are this Worker instance's own transitions; other \
             isolates (and other locations) may have seen others. Newest first.",
        ),
        _ => ("Recent changes", "Newest first."),
    };
    let now = doc["now_ms"].as_u64();
    Some(Changes {
        title: title.to_string(),
        note: note.to_string(),
        rows: events.iter().take(MAX_ROWS).map(|e| row(e, now)).collect(),
    })
}

fn text(value: &Value) -> Option<&str> {
    value.as_str()
}

fn row(event: &Value, now: Option<u64>) -> Change {
    let at_ms = event["at_ms"].as_u64().filter(|&ms| ms <= when::LAST_MS);
    let time = match (at_ms, text(&event["at"])) {
        (Some(ms), _) => when::moment(ms, now, Precision::Seconds),
        (None, Some(at)) => at.to_string(),
        (None, None) => when::unknown(),
    };
    let kind = text(&event["type"]).and_then(Kind::parse);
    let subject = match (text(&event["origin"]), text(&event["node"]), kind) {
        (Some(origin), _, _) => origin.to_string(),
        (None, Some(node), _) => format!("node {node}"),
        (None, None, Some(Kind::AllDown | Kind::AllUp)) => "all origins".to_string(),
        _ => when::unknown(),
    };
    let change = match (
        text(&event["from"]),
        text(&event["to"]),
        text(&event["type"]),
    ) {
        (Some(from), Some(to), _) => format!("{from} → {to}"),
        (_, _, Some(kind)) => kind.to_string(),
        _ => when::unknown(),
    };
    let mut reason = text(&event["reason"]).unwrap_or_default().to_string();
    match event["more"].as_u64() {
        None | Some(0) => {}
        Some(1) => reason.push_str(" (and 1 more change)"),
        Some(n) => reason.push_str(&format!(" (and {n} more changes)")),
    }
    Change {
        time,
        at_iso: at_ms.and_then(when::iso),
        subject,
        change,
        reason: reason.trim_start().to_string(),
        bad: kind.map(Kind::is_bad),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::{Event, Kind, Source};
    use serde_json::json;

    const NOW: u64 = 1_785_585_605_123; // 2026-08-01 12:00:05 UTC

    fn event(kind: Kind, origin: Option<&str>, at_ms: u64, states: Option<(&str, &str)>) -> Value {
        Event {
            id: format!("e-{at_ms}"),
            kind,
            origin: origin.map(str::to_string),
            at_ms,
            reason: "connection refused".into(),
            site: "www.example.com".into(),
            source: Source::Edge,
            node: None,
            from: states.map(|(f, _)| f.to_string()),
            to: states.map(|(_, t)| t.to_string()),
            more: 0,
        }
        .to_json()
    }

    #[test]
    fn events_as_rows_newest_first() {
        let mut up = event(
            Kind::OriginUp,
            Some("primary"),
            NOW - 5_000,
            Some(("down", "up")),
        );
        up["reason"] = json!("2 good probes");
        up["more"] = json!(4);
        let doc = json!({
            "now_ms": NOW,
            "events_view": "global",
            "events": [
                up,
                event(Kind::AllDown, None, NOW - 60_000, None),
                event(Kind::OriginDown, Some("primary"), 1_785_500_000_000, Some(("up", "down"))),
            ],
        });
        let c = read(&doc).expect("events");
        assert_eq!(c.title, "Recent changes, as the global checker saw them");
        let rows: Vec<_> = c
            .rows
            .iter()
            .map(|r| {
                (
                    r.time.as_str(),
                    r.subject.as_str(),
                    r.change.as_str(),
                    r.reason.as_str(),
                    r.bad,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "12:00:00 UTC",
                    "primary",
                    "down → up",
                    "2 good probes (and 4 more changes)",
                    Some(false)
                ),
                (
                    "11:59:05 UTC",
                    "all origins",
                    "all.down",
                    "connection refused",
                    Some(true)
                ),
                (
                    "2026-07-31 12:13:20 UTC",
                    "primary",
                    "up → down",
                    "connection refused",
                    Some(true)
                ),
            ]
        );
        assert_eq!(
            c.rows[0].at_iso.as_deref(),
            Some("2026-08-01T12:00:00.123Z")
        );
    }

    #[test]
    fn whose_view_it_is() {
        let label =
            |view: Value| read(&json!({"events": [], "events_view": view})).map(|c| c.title);
        assert_eq!(
            label(json!("isolate")).as_deref(),
            Some("Recent changes, as seen by this isolate only")
        );
        assert_eq!(
            label(json!("global")).as_deref(),
            Some("Recent changes, as the global checker saw them")
        );
        assert_eq!(label(json!(null)).as_deref(), Some("Recent changes"));
        assert_eq!(label(json!(7)).as_deref(), Some("Recent changes"));
        // No history in the document: no section at all.
        assert_eq!(read(&json!({"events_view": "global"})), None);
        assert_eq!(read(&json!({"events": {}})), None);
    }

    #[test]
    fn odd_events_read_as_unknown() {
        let many: Vec<Value> = (0..MAX_ROWS + 5).map(|_| json!(null)).collect();
        let c = read(&json!({"events": many})).expect("events");
        assert_eq!(c.rows.len(), MAX_ROWS);
        assert_eq!(
            c.rows[0],
            Change {
                time: "?".into(),
                at_iso: None,
                subject: "?".into(),
                change: "?".into(),
                reason: String::new(),
                bad: None,
            }
        );
        let c = read(&json!({"now_ms": NOW, "events": [
            {"type": "origin.exploded", "at": "yesterday", "at_ms": u64::MAX, "node": "vps", "more": 1},
            {"type": "node.take-over", "at_ms": NOW, "node": "vps", "reason": 5},
        ]}))
        .expect("events");
        assert_eq!(
            (
                c.rows[0].time.as_str(),
                c.rows[0].subject.as_str(),
                c.rows[0].change.as_str(),
                c.rows[0].reason.as_str(),
                c.rows[0].bad
            ),
            (
                "yesterday",
                "node vps",
                "origin.exploded",
                "(and 1 more change)",
                None
            )
        );
        assert_eq!(c.rows[1].bad, Some(true));
        assert_eq!(c.rows[1].reason, "");
    }
}
