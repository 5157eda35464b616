//! The status table as plain text, for a terminal: what the Worker answers a
//! client that prefers `text/plain` (scripts/status.mjs), from the same
//! [`StatusTable`] the HTML page shows.
//!
//! A terminal obeys the bytes it prints: every control character (C0, DEL,
//! C1) in a line becomes `?`, so an origin name or an error can never carry
//! an escape sequence to it.

use serde_json::Value;

use super::table::{table, StatusTable, COLUMNS, TITLE};

/// Between two columns.
const GUTTER: &str = "  ";

/// The whole text, without the final newline (the shell adds it, as to every
/// answer of its own):
///
/// ```text
/// tunnel-failover status
/// [FAILOVER] Serving from replica (failover) since 11:59 UTC — primary down: status 530
///            since 2026-08-01 11:59:53 UTC, 12s ago
/// version 0.1.0, revision abc123def456
/// as of 2026-08-01 12:00:05 UTC
///
/// view           this isolate: ...
/// steering       failover: ...
///
/// ORIGIN   STATE                    SINCE ...
/// primary  down                     12s ago ...
///          decided by this isolate  2026-08-01 11:59:53 UTC ...
///
/// replica  up                       isolate start ...
///
/// Recent changes, as the global checker saw them
///   TIME          ORIGIN   CHANGE     REASON
///   11:59:53 UTC  primary  up → down  status 530
///
/// settings
///   attempt timeout  6 s
/// ```
///
/// A cell's lines stack under each other; a blank line separates origins.
pub fn render(doc: &Value) -> String {
    lines(&table(doc)).join("\n")
}

fn lines(t: &StatusTable) -> Vec<String> {
    let mut out = vec![TITLE.to_string()];
    let tag = format!("[{}] ", t.headline.tone.as_str().to_ascii_uppercase());
    out.push(printable(&format!("{tag}{}", t.headline.text)));
    if let Some(detail) = &t.headline_detail {
        out.push(printable(&format!("{}{detail}", " ".repeat(tag.len()))));
    }
    for (name, h) in &t.sites {
        let tone = h.tone.as_str().to_ascii_uppercase();
        out.push(printable(&format!("  {name}: [{tone}] {}", h.text)));
    }
    out.extend(t.about.iter().map(|l| printable(l)));
    out.push(String::new());
    let view: Vec<(String, &str)> = t
        .view
        .iter()
        .map(|(what, value)| (what.to_ascii_lowercase(), value.as_str()))
        .collect();
    out.extend(pairs(&view, ""));
    out.push(String::new());
    let header: Vec<String> = COLUMNS.iter().map(|c| c.to_ascii_uppercase()).collect();
    out.extend(grid(&header, &t.rows, "", true));
    if !t.overrides.is_empty() {
        out.push(String::new());
        out.push("overrides".to_string());
        out.extend(
            t.overrides
                .iter()
                .map(|o| printable(&format!("{GUTTER}{}", o.text))),
        );
    }
    if let Some(changes) = &t.changes {
        out.push(String::new());
        out.push(printable(&changes.title));
        if changes.rows.is_empty() {
            out.push(format!("{GUTTER}no change recorded yet"));
        } else {
            let header: Vec<String> = ["time", "origin", "change", "reason"]
                .iter()
                .map(|c| c.to_ascii_uppercase())
                .collect();
            let rows: Vec<Vec<Vec<String>>> = changes
                .rows
                .iter()
                .map(|c| {
                    [&c.time, &c.subject, &c.change, &c.reason]
                        .iter()
                        .map(|cell| vec![cell.to_string()])
                        .collect()
                })
                .collect();
            out.extend(grid(&header, &rows, GUTTER, false));
        }
    }
    if !t.settings.is_empty() {
        let settings: Vec<(String, &str)> = t
            .settings
            .iter()
            .map(|(what, value)| (what.to_string(), value.as_str()))
            .collect();
        out.push(String::new());
        out.push("settings".to_string());
        out.extend(pairs(&settings, GUTTER));
    }
    out
}

/// `what  value` lines, the values aligned.
fn pairs(pairs: &[(String, &str)], indent: &str) -> Vec<String> {
    let w = pairs.iter().map(|(what, _)| width(what)).max().unwrap_or(0);
    pairs
        .iter()
        .map(|(what, value)| {
            printable(&format!("{indent}{}{GUTTER}{value}", pad(what, w)))
                .trim_end_matches(' ')
                .to_string()
        })
        .collect()
}

/// A header and rows of cells, each cell one or more lines, in aligned
/// columns; `spaced`: a blank line between rows (not after the header).
fn grid(header: &[String], rows: &[Vec<Vec<String>>], indent: &str, spaced: bool) -> Vec<String> {
    let header: Vec<Vec<String>> = header.iter().map(|c| vec![c.clone()]).collect();
    let grid: Vec<Vec<Vec<String>>> = std::iter::once(&header)
        .chain(rows)
        .map(|cells| {
            cells
                .iter()
                .map(|cell| cell.iter().map(|l| printable(l)).collect())
                .collect()
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            grid.iter()
                .filter_map(|cells| cells.get(i))
                .flatten()
                .map(|l| width(l))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = Vec::new();
    for (r, cells) in grid.iter().enumerate() {
        if spaced && r > 1 {
            out.push(String::new());
        }
        let height = cells.iter().map(Vec::len).max().unwrap_or(0);
        for l in 0..height {
            let line: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(i, &w)| {
                    let text = cells
                        .get(i)
                        .and_then(|c| c.get(l))
                        .map_or("", String::as_str);
                    pad(text, w)
                })
                .collect();
            out.push(
                format!("{indent}{}", line.join(GUTTER))
                    .trim_end_matches(' ')
                    .to_string(),
            );
        }
    }
    out
}

/// A line as a terminal may print it: C0 (tab and newline included, which
/// would break the grid), DEL and C1 (`\u{9b}` is CSI on its own) become `?`.
fn printable(line: &str) -> String {
    line.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// Columns a line takes, counted in chars: every string here is ASCII but
/// for what an error quotes, and a wide character there only shifts its own
/// row.
fn width(text: &str) -> usize {
    text.chars().count()
}

fn pad(text: &str, w: usize) -> String {
    format!("{text}{}", " ".repeat(w.saturating_sub(width(text))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::report::table::tests::{document, document_with_history};
    use serde_json::json;

    // The whole text for the shared test document, byte for byte.
    const EXPECTED: &str = "\
tunnel-failover status
[FAILOVER] Serving from replica (failover) since 11:59 UTC — primary down: status 530
           since 2026-08-01 11:59:53 UTC, 12s ago
version 0.1.0, revision abc123def456
as of 2026-08-01 12:00:05 UTC

view           this isolate: the Worker instance that answered, and the health map it routes requests by
steering       failover: every request to the first healthy origin, in priority order
weights        primary 1, replica 1 (failover steering does not use them)
colo health    on: verdicts shared with the location's other isolates (COLO_HEALTH)
global health  off: no global checker (no HEALTH_CHECKER binding)

ORIGIN   STATE                    SINCE                    LAST ERROR  COLO VIEW                GLOBAL VIEW
primary  down                     12s ago                  status 530  down                     not read
         decided by this isolate  2026-08-01 11:59:53 UTC              since 13s ago
         1 of 2 good probes                                            2026-08-01 11:59:52 UTC
                                                                       confirmed 2s ago

replica  up                       isolate start            none        not read                 not read
         decided by this isolate

settings
  attempt timeout              6 s
  probe interval while down    15 s
  good probes to come back up  2";

    // What a history and an override add, between the origins and the
    // settings.
    const WITH_HISTORY: &str = "\
replica  up                       isolate start            none        not read                 not read
         decided by this isolate
         override: FORCED UP

overrides
  replica: FORCED UP: gets traffic whatever its health (set 11:50 UTC, until 13:00 UTC)

Recent changes, as the global checker saw them
  TIME                     ORIGIN   CHANGE     REASON
  11:59:53 UTC             primary  up → down  status 530
  2026-07-31 22:10:00 UTC  primary  down → up  2 good probes (and 2 more changes)

settings
";

    #[test]
    fn the_text() {
        assert_eq!(render(&document()), EXPECTED);
        let text = render(&document_with_history());
        assert!(text.contains(WITH_HISTORY), "{text}");
        assert!(text
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("[FAILOVER] ")));
        let mut empty = document();
        empty["events"] = serde_json::json!([]);
        empty["events_view"] = serde_json::json!("isolate");
        assert!(render(&empty).contains(
            "\n\nRecent changes, as seen by this isolate only\n  no change recorded yet\n\nsettings\n"
        ));
    }

    #[test]
    fn layouts() {
        const TOP: &str = "tunnel-failover status\n";
        const ABOUT: &str = "version ?, revision ?\nas of ?\n\n\
             view      this isolate: the Worker instance that answered, and the health map it \
             routes requests by\nsteering  ?\n";
        let one_origin = json!({"origins": [{"name": "a", "state": "up", "last_error": null,
            "last_change_ms": null, "local": {"decided_by": "colo"}, "colo": null, "global": null}]});
        let cases: &[(&str, Value, String)] = &[
            (
                "nothing readable: every cell says ?, no settings block",
                json!(null),
                format!(
                    "{TOP}[UNKNOWN] Origin health unknown\n{ABOUT}\n\
                     ORIGIN  STATE  SINCE  LAST ERROR  COLO VIEW  GLOBAL VIEW"
                ),
            ),
            (
                "one origin: no blank line after the header",
                one_origin,
                format!(
                    "{TOP}[HEALTHY] All origins healthy\n{ABOUT}weights   a ?\n\n\
                     ORIGIN  STATE                SINCE          LAST ERROR  COLO VIEW  GLOBAL VIEW\n\
                     a       up                   isolate start  none        not read   not read\n\
                     \x20       decided by the colo"
                ),
            ),
            (
                "a setting alone",
                json!({"health_rise": 3, "origins": []}),
                format!(
                    "{TOP}[UNKNOWN] Origin health unknown\n{ABOUT}\n\
                     ORIGIN  STATE  SINCE  LAST ERROR  COLO VIEW  GLOBAL VIEW\n\n\
                     settings\n  good probes to come back up  3"
                ),
            ),
        ];
        for (what, doc, expected) in cases {
            assert_eq!(render(doc), *expected, "{what}");
        }
    }

    #[test]
    fn no_control_character_reaches_the_terminal() {
        let hostile = [
            (
                "\u{1b}[2J\u{1b}]0;pwned\u{7}<script>",
                "?[2J?]0;pwned?<script>",
            ),
            ("down\r", "down?"),
            ("\u{9b}31m", "?31m"),
            ("a\nb\tc\u{0}d", "a?b?c?d"),
            ("\u{7f}\u{80}\u{9f}\u{a0}", "???\u{a0}"),
            ("ünïcode ✓", "ünïcode ✓"),
        ];
        for (raw, shown) in hostile {
            for key in ["version", "revision"] {
                let mut doc = document();
                doc[key] = json!(raw);
                let out = render(&doc);
                assert!(out.contains(shown), "{key} {raw:?} in\n{out}");
            }
            for key in ["steering", "events_view"] {
                let mut doc = document_with_history();
                doc[key] = json!(raw);
                let out = render(&doc);
                assert!(
                    !out.chars().any(|c| c.is_control() && c != '\n'),
                    "{key} {raw:?}"
                );
            }
            for path in [&["origin"][..], &["reason"], &["at"], &["from"]] {
                let mut doc = document_with_history();
                doc["events"][1]["at_ms"] = json!(null);
                let mut at = &mut doc["events"][1];
                for key in path {
                    at = &mut at[*key];
                }
                *at = json!(raw);
                let out = render(&doc);
                assert!(
                    !out.chars().any(|c| c.is_control() && c != '\n'),
                    "{path:?} {raw:?}"
                );
                assert!(out.contains(shown), "{path:?} {raw:?} in\n{out}");
            }
            for path in [
                &["name"][..],
                &["state"],
                &["last_error"],
                &["local", "decided_by"],
                &["colo", "state"],
            ] {
                let mut doc = document();
                let mut at = &mut doc["origins"][0];
                for key in path {
                    at = &mut at[*key];
                }
                *at = json!(raw);
                let out = render(&doc);
                assert!(
                    !out.chars().any(|c| c.is_control() && c != '\n'),
                    "{path:?} {raw:?}"
                );
                assert!(out.contains(shown), "{path:?} {raw:?} in\n{out}");
                // The grid holds: one line per line the table has, whatever
                // the string.
                assert_eq!(
                    out.lines().count(),
                    EXPECTED.lines().count(),
                    "{path:?} {raw:?}"
                );
            }
        }
    }

    // Every column stays where the header puts it, whatever the strings.
    #[test]
    fn a_hostile_row_keeps_its_columns() {
        let mut doc = document();
        doc["origins"][0]["name"] = json!("\u{1b}[2J\u{1b}]0;pwned\u{7}<script>");
        doc["origins"][0]["state"] = json!("down\r");
        doc["origins"][0]["last_error"] = json!("\u{9b}31m");
        let out = render(&doc);
        let row = out
            .lines()
            .find(|l| l.starts_with("?[2J"))
            .unwrap_or_default();
        assert_eq!(
            row,
            "?[2J?]0;pwned?<script>  down?                    12s ago                  ?31m        \
             down                     not read"
        );
    }
}
