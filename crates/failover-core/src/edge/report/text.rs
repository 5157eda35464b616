//! The status table as plain text, for a terminal: what the Worker answers a
//! client that prefers `text/plain` (scripts/status.mjs), from the same
//! [`StatusTable`] the HTML page shows.
//!
//! A terminal obeys the bytes it prints: every control character (C0, DEL,
//! C1) in a line becomes `?`, so an origin name or an error can never carry
//! an escape sequence to it.

use serde_json::Value;

use super::page::{table, StatusTable, COLUMNS, TITLE};

/// Between two columns.
const GUTTER: &str = "  ";

/// The whole text, without the final newline (the shell adds it, as to every
/// answer of its own):
///
/// ```text
/// tunnel-failover status
/// version 0.1.0, revision abc123def456
/// as of 2026-08-01 12:00:05 UTC
///
/// ORIGIN   STATE             SINCE ...
/// primary  down              12s ago ...
///          decided by local  2026-08-01 11:59:53 UTC ...
///
/// replica  up                isolate start ...
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
    // ASCII on purpose: the column names are, and str::to_uppercase links
    // Unicode's case tables into the Worker (6.9 KB of its gzip, counted).
    let header: Vec<Vec<String>> = COLUMNS
        .iter()
        .map(|c| vec![c.to_ascii_uppercase()])
        .collect();
    let grid: Vec<Vec<Vec<String>>> = std::iter::once(&header)
        .chain(&t.rows)
        .map(|cells| {
            cells
                .iter()
                .map(|cell| cell.iter().map(|l| printable(l)).collect())
                .collect()
        })
        .collect();
    let widths: Vec<usize> = (0..COLUMNS.len())
        .map(|i| {
            grid.iter()
                .filter_map(|cells| cells.get(i))
                .flatten()
                .map(|l| width(l))
                .max()
                .unwrap_or(0)
        })
        .collect();

    let mut out = vec![TITLE.to_string()];
    out.extend(t.about.iter().map(|l| printable(l)));
    out.push(String::new());
    for (r, cells) in grid.iter().enumerate() {
        // Not between the header and the first origin.
        if r > 1 {
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
            out.push(line.join(GUTTER).trim_end_matches(' ').to_string());
        }
    }
    if !t.settings.is_empty() {
        let w = t
            .settings
            .iter()
            .map(|(what, _)| width(what))
            .max()
            .unwrap_or(0);
        out.push(String::new());
        out.push("settings".to_string());
        for (what, value) in &t.settings {
            out.push(format!(
                "{GUTTER}{}{GUTTER}{}",
                pad(what, w),
                printable(value)
            ));
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
    use crate::edge::report::page::tests::document;
    use serde_json::json;

    // The layout scripts/status.mjs printed before the Worker rendered it,
    // byte for byte.
    const EXPECTED: &str = "\
tunnel-failover status
version 0.1.0, revision abc123def456
as of 2026-08-01 12:00:05 UTC

ORIGIN   STATE               SINCE                    LAST ERROR  COLO VIEW                GLOBAL VIEW
primary  down                12s ago                  status 530  down                     not read
         decided by local    2026-08-01 11:59:53 UTC              since 13s ago
         1 of 2 good probes                                       2026-08-01 11:59:52 UTC
                                                                  confirmed 2s ago

replica  up                  isolate start            none        not read                 not read
         decided by local

settings
  attempt timeout              6 s
  probe interval while down    15 s
  good probes to come back up  2";

    #[test]
    fn the_text() {
        assert_eq!(render(&document()), EXPECTED);
    }

    #[test]
    fn layouts() {
        let one_origin = json!({"origins": [{"name": "a", "state": "up", "last_error": null,
            "last_change_ms": null, "local": {"decided_by": "colo"}, "colo": null, "global": null}]});
        let cases: &[(&str, Value, &str)] = &[
            (
                "nothing readable: every cell says ?, no settings block",
                json!(null),
                "tunnel-failover status\nversion ?, revision ?\nas of ?\n\n\
                 ORIGIN  STATE  SINCE  LAST ERROR  COLO VIEW  GLOBAL VIEW",
            ),
            (
                "one origin: no blank line after the header",
                one_origin,
                "tunnel-failover status\nversion ?, revision ?\nas of ?\n\n\
                 ORIGIN  STATE            SINCE          LAST ERROR  COLO VIEW  GLOBAL VIEW\n\
                 a       up               isolate start  none        not read   not read\n\
                 \x20       decided by colo",
            ),
            (
                "a setting alone",
                json!({"health_rise": 3, "origins": []}),
                "tunnel-failover status\nversion ?, revision ?\nas of ?\n\n\
                 ORIGIN  STATE  SINCE  LAST ERROR  COLO VIEW  GLOBAL VIEW\n\n\
                 settings\n  good probes to come back up  3",
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

    // scripts/status.mjs printed this row, byte for byte.
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
            "?[2J?]0;pwned?<script>  down?             12s ago                  ?31m        \
             down                     not read"
        );
    }
}
