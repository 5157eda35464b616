//! The status document for a person: one table with a row per origin, served
//! as an HTML page to a client that prefers `text/html` (a browser), and as
//! plain text ([`super::text`]) to one that prefers `text/plain`
//! (scripts/status.mjs): both draw the same [`StatusTable`], so a rule here
//! (a column, a time format) holds for both.
//!
//! Rendered from the JSON document and nothing else: the page cannot show
//! what the JSON does not (no origin URL, no token). Every string is escaped
//! on the way out, and anything missing or of the wrong type reads `?`
//! instead of failing: a panic in the Worker wipes the health map it reports.

use std::fmt::Write as _;

use serde_json::Value;

/// The first line of every rendering, the page's `<title>` and `<h1>`: how
/// scripts/status.mjs tells the Worker's answer from an origin's.
pub const TITLE: &str = "tunnel-failover status";

/// The table's header; every row has one cell per column.
pub const COLUMNS: [&str; 6] = [
    "Origin",
    "State",
    "Since",
    "Last error",
    "Colo view",
    "Global view",
];

/// What the page shows, as text: each cell is one or more lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusTable {
    /// When the document was made, ms since the epoch; relative times count
    /// back from it.
    pub now_ms: Option<u64>,
    /// Version, revision and "as of" lines above the table.
    pub about: Vec<String>,
    /// One row per origin, in priority order.
    pub rows: Vec<Vec<Vec<String>>>,
    /// (what, value) pairs below the table.
    pub settings: Vec<(&'static str, String)>,
}

/// The table for a status document (`report::status_document`).
pub fn table(doc: &Value) -> StatusTable {
    let now = doc["now_ms"].as_u64();
    let rise = doc["health_rise"].as_u64();
    let rows = doc["origins"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(|origin| row(origin, now, rise))
        .collect();
    let mut about = vec![format!(
        "version {}, revision {}",
        text(&doc["version"]),
        text(&doc["revision"])
    )];
    about.push(format!("as of {}", now.map_or_else(unknown, utc)));
    let settings = [
        ("attempt timeout", "attempt_timeout_ms"),
        ("probe interval while down", "health_interval_ms"),
    ]
    .into_iter()
    .filter_map(|(what, key)| Some((what, duration(doc[key].as_u64()?))))
    .chain(rise.map(|r| ("good probes to come back up", r.to_string())))
    .chain(slow_start(&doc["slow_start"]).map(|ramp| ("slow start", ramp)))
    .collect();
    StatusTable {
        now_ms: now,
        about,
        rows,
        settings,
    }
}

/// `SLOW_START_S` and its minimum, when on: "60 s from 10 %".
fn slow_start(ramp: &Value) -> Option<String> {
    let window = ramp["window_s"].as_u64().filter(|&w| w > 0)?;
    let min = ramp["min_pct"].as_u64()?;
    Some(format!("{window} s from {min} %"))
}

fn row(origin: &Value, now: Option<u64>, rise: Option<u64>) -> Vec<Vec<String>> {
    let state = text(&origin["state"]);
    let mut state_cell = vec![
        state.clone(),
        format!("decided by {}", text(&origin["local"]["decided_by"])),
    ];
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
    let since = match &origin["last_change_ms"] {
        // The isolate has seen no flip: its verdict is the cold default.
        Value::Null => vec!["isolate start".to_string()],
        t => vec![ago(now, t.as_u64()), t.as_u64().map_or_else(unknown, utc)],
    };
    let last_error = match &origin["last_error"] {
        Value::Null => "none".to_string(),
        e => text(e),
    };
    vec![
        vec![text(&origin["name"])],
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

fn unknown() -> String {
    "?".to_string()
}

/// `12s ago`, `3m 5s ago`, `in 2s` (a shared verdict stamped by a clock
/// slightly ahead), `just now` within a second either way.
pub fn ago(now_ms: Option<u64>, then_ms: Option<u64>) -> String {
    let (Some(now), Some(then)) = (now_ms, then_ms) else {
        return unknown();
    };
    let (gap, future) = if then > now {
        (then - now, true)
    } else {
        (now - then, false)
    };
    match (gap < 1000, future) {
        (true, _) => "just now".to_string(),
        (false, true) => format!("in {}", span(gap)),
        (false, false) => format!("{} ago", span(gap)),
    }
}

/// A gap in its two largest units, whole and rounded down: `59s`, `1m 0s`,
/// `2h 5m`, `3d 4h`.
fn span(ms: u64) -> String {
    let s = ms / 1000;
    let (m, h, d) = (s / 60, s / 3600, s / 86_400);
    if m == 0 {
        format!("{s}s")
    } else if h == 0 {
        format!("{m}m {}s", s % 60)
    } else if d == 0 {
        format!("{h}h {}m", m % 60)
    } else {
        format!("{d}d {}h", h % 24)
    }
}

/// A setting's duration: whole seconds as `6 s`, anything else in ms.
fn duration(ms: u64) -> String {
    match (ms / 1000, ms % 1000) {
        (s, 0) if s > 0 => format!("{s} s"),
        _ => format!("{ms} ms"),
    }
}

/// The last instant both this and JavaScript's `toISOString` write with a
/// four-digit year (9999-12-31T23:59:59.999Z); later ones read `?`.
const LAST_MS: u64 = 253_402_300_799_999;

/// `2026-08-01 12:00:05 UTC`.
pub fn utc(ms: u64) -> String {
    calendar(ms).map_or_else(unknown, |(y, mo, d, h, mi, s, _)| {
        format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
    })
}

/// `2026-08-01T12:00:05.123Z`, as JavaScript's `Date.prototype.toISOString`.
pub fn iso(ms: u64) -> Option<String> {
    calendar(ms).map(|(y, mo, d, h, mi, s, milli)| {
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
    })
}

/// (year, month, day, hour, minute, second, ms) in UTC; the date part is
/// Howard Hinnant's `civil_from_days`, here on days since 1970 that cannot
/// be negative.
fn calendar(ms: u64) -> Option<(u64, u64, u64, u64, u64, u64, u64)> {
    if ms > LAST_MS {
        return None;
    }
    let (days, in_day) = (ms / 86_400_000, ms % 86_400_000);
    let z = days + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    let s = in_day / 1000;
    Some((
        year,
        month,
        day,
        s / 3600,
        s / 60 % 60,
        s % 60,
        in_day % 1000,
    ))
}

/// Text for HTML, in element content and in quoted attributes alike.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

// Self-contained: no script, no external resource, so the page works under
// the strict Content-Security-Policy the Worker sends with it.
const STYLE: &str = "\
:root{color-scheme:light dark;--muted:#666;--line:#ccc;--up:#1a7f37;--down:#cf222e}\
@media (prefers-color-scheme:dark){:root{--muted:#9a9a9a;--line:#444;--up:#3fb950;--down:#f85149}}\
body{font:15px/1.4 system-ui,sans-serif;margin:1.5rem;max-width:80rem}\
h1{font-size:1.3rem;margin:0 0 .3rem}h2{font-size:1.05rem;margin:1.5rem 0 .3rem}\
p{margin:.2rem 0}.muted,td div+div{color:var(--muted);font-size:.85rem}\
.scroll{overflow-x:auto}table{border-collapse:collapse;margin:.8rem 0}\
th,td{text-align:left;vertical-align:top;padding:.45rem .8rem;border-bottom:1px solid var(--line);white-space:nowrap}\
th{font-weight:600;border-bottom-width:2px}\
td:first-child div:first-child{font-weight:600}\
.up,.down{font-weight:600;text-transform:uppercase;letter-spacing:.03em}\
.up{color:var(--up)}.down{color:var(--down)}\
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem;margin:.3rem 0}dt{color:var(--muted)}dd{margin:0}";

/// The whole page. `table` has the content; this only adds markup.
pub fn html(doc: &Value) -> String {
    let t = table(doc);
    let mut out = String::with_capacity(4096);
    out.push_str(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"robots\" content=\"noindex\">\n",
    );
    let _ = write!(out, "<title>{}</title>\n<style>{STYLE}", escape(TITLE));
    let _ = writeln!(out, "</style>\n</head>\n<body>\n<h1>{}</h1>", escape(TITLE));
    for (i, line) in t.about.iter().enumerate() {
        // The "as of" line carries the exact instant, to the ms, in a
        // <time>: relative times count back from it.
        let exact = t.now_ms.and_then(iso).filter(|_| i + 1 == t.about.len());
        match exact {
            Some(at) => {
                let _ = writeln!(
                    out,
                    "<p class=\"muted\"><time datetime=\"{}\">{}</time></p>",
                    escape(&at),
                    escape(line)
                );
            }
            None => {
                let _ = writeln!(out, "<p class=\"muted\">{}</p>", escape(line));
            }
        }
    }
    // A line is one fact ("2026-08-01 11:47:31 UTC"): a narrow window
    // scrolls the table sideways rather than break it.
    out.push_str("<div class=\"scroll\">\n<table>\n<thead><tr>");
    for column in COLUMNS {
        let _ = write!(out, "<th>{}</th>", escape(column));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            out.push_str("<td>");
            for (j, line) in cell.iter().enumerate() {
                // The first line of a state or a view is a verdict: coloured
                // when it is one we know, by a fixed class, never by the text.
                let class = match (i, j, line.as_str()) {
                    (1 | 4 | 5, 0, "up") => " class=\"up\"",
                    (1 | 4 | 5, 0, "down") => " class=\"down\"",
                    _ => "",
                };
                let _ = write!(out, "<div{class}>{}</div>", escape(line));
            }
            out.push_str("</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</div>\n");
    out.push_str(
        "<p class=\"muted\">Rows in priority order. State and since are this isolate's own \
         (local) view, the one it routes by; the colo view is the last verdict read from \
         this location's cache, the global view the last one from the global checker.</p>\n",
    );
    if !t.settings.is_empty() {
        out.push_str("<h2>Settings</h2>\n<dl>");
        for (what, value) in &t.settings {
            let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", escape(what), escape(value));
        }
        out.push_str("</dl>\n");
    }
    out.push_str("</body>\n</html>");
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn relative_times() {
        let now = Some(10_000_000);
        let cases = [
            (Some(10_000_000), "just now"),
            (Some(9_999_001), "just now"),
            (Some(10_000_999), "just now"),
            (Some(9_999_000), "1s ago"),
            (Some(9_941_000), "59s ago"),
            (Some(9_940_000), "1m 0s ago"),
            (Some(10_000_000 - 3_599_999), "59m 59s ago"),
            (Some(10_000_000 - 3_600_000), "1h 0m ago"),
            (Some(10_002_500), "in 2s"),
            (Some(0), "2h 46m ago"),
            (None, "?"),
        ];
        for (then, text) in cases {
            assert_eq!(ago(now, then), text, "{then:?}");
        }
        assert_eq!(
            ago(Some(3 * 86_400_000 + 5 * 3_600_000), Some(0)),
            "3d 5h ago"
        );
        assert_eq!(ago(None, Some(1)), "?");
    }

    #[test]
    fn absolute_times() {
        let cases = [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_785_585_605_123, "2026-08-01T12:00:05.123Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
            (LAST_MS, "9999-12-31T23:59:59.999Z"),
        ];
        for (ms, text) in cases {
            assert_eq!(iso(ms).as_deref(), Some(text), "{ms}");
        }
        assert_eq!(iso(LAST_MS + 1), None);
        assert_eq!(utc(1_785_585_605_123), "2026-08-01 12:00:05 UTC");
        assert_eq!(utc(u64::MAX), "?");
    }

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
            "origins": [
                {
                    "name": "primary", "priority": 0, "state": "down",
                    "good_streak": 1, "bad_streak": 0, "last_error": "status 530",
                    "last_change_ms": 1_785_585_593_000u64,
                    "local": {"state": "down", "since_ms": 1_785_585_593_000u64, "decided_by": "local"},
                    "colo": {"state": "down", "since_ms": 1_785_585_592_000u64, "confirmed_ms": 1_785_585_603_000u64},
                    "global": null,
                },
                {
                    "name": "replica", "priority": 1, "state": "up",
                    "good_streak": 0, "bad_streak": 0, "last_error": null,
                    "last_change_ms": null,
                    "local": {"state": "up", "since_ms": null, "decided_by": "local"},
                    "colo": null, "global": null,
                },
            ],
        })
    }

    #[test]
    fn the_table() {
        let t = table(&document());
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            t.about,
            s(&[
                "version 0.1.0, revision abc123def456",
                "as of 2026-08-01 12:00:05 UTC"
            ])
        );
        assert_eq!(
            t.rows[0],
            vec![
                s(&["primary"]),
                s(&["down", "decided by local", "1 of 2 good probes"]),
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
                s(&["up", "decided by local"]),
                s(&["isolate start"]),
                s(&["none"]),
                s(&["not read"]),
                s(&["not read"]),
            ]
        );
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
    fn a_ramping_origin_says_how_far_along_it_is() {
        let mut doc = document();
        doc["origins"][1]["slow_start_pct"] = json!(25);
        doc["slow_start"] = json!({"window_s": 60, "min_pct": 10});
        let t = table(&doc);
        assert_eq!(
            t.rows[1][1],
            vec![
                "up".to_string(),
                "decided by local".to_string(),
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
            for row in &t.rows {
                assert_eq!(row.len(), COLUMNS.len());
                assert_eq!(row[0], vec!["?"]);
            }
            let page = html(&doc);
            assert!(page.ends_with("</html>"));
        }
        let odd = table(&json!({"origins": [{"state": 5, "colo": 7, "last_change_ms": -1}]}));
        assert_eq!(odd.rows[0][2], vec!["?", "?"]);
        assert_eq!(odd.rows[0][4], vec!["?", "since ?", "?", "confirmed ?"]);
    }

    #[test]
    fn the_page_shows_every_cell() {
        let page = html(&document());
        for needle in [
            "<th>Origin</th>",
            "<td><div>primary</div></td>",
            "<div class=\"down\">down</div><div>decided by local</div><div>1 of 2 good probes</div>",
            "<div>12s ago</div><div>2026-08-01 11:59:53 UTC</div>",
            "<div>confirmed 2s ago</div>",
            "<time datetime=\"2026-08-01T12:00:05.123Z\">as of 2026-08-01 12:00:05 UTC</time>",
            "<dt>attempt timeout</dt><dd>6 s</dd>",
            "<div class=\"up\">up</div>",
        ] {
            assert!(page.contains(needle), "{needle} in\n{page}");
        }
        // Self-contained: nothing that runs or loads.
        for forbidden in [
            "<script", "<link", "<img", "src=", "href=", "url(", "@import",
        ] {
            assert!(!page.contains(forbidden), "{forbidden}");
        }
    }

    #[test]
    fn every_string_is_escaped() {
        let hostile = "<script>alert(1)</script>";
        let quote = "\"'><img src=x onerror=alert(2)>&amp;";
        let mut doc = document();
        doc["version"] = json!(hostile);
        doc["revision"] = json!(quote);
        doc["origins"][0]["name"] = json!(hostile);
        doc["origins"][0]["last_error"] = json!(quote);
        doc["origins"][0]["local"]["decided_by"] = json!(hostile);
        doc["origins"][0]["colo"]["state"] = json!(quote);
        doc["origins"][1]["state"] = json!(hostile);
        let page = html(&doc);
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(!page.contains("\"'>"), "{page}");
        assert!(page.contains("<td><div>&lt;script&gt;alert(1)&lt;/script&gt;</div></td>"));
        assert!(
            page.contains("<div>&quot;&#39;&gt;&lt;img src=x onerror=alert(2)&gt;&amp;amp;</div>")
        );
        assert!(page.contains("version &lt;script&gt;alert(1)&lt;/script&gt;, revision &quot;"));
        assert!(page.contains("<div>decided by &lt;script&gt;"));
        assert_eq!(escape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&#39;f");
    }
}
