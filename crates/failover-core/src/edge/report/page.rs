//! The status document as an HTML page, for a client that prefers
//! `text/html` (a browser): the [`StatusTable`] with markup. The headline
//! first, in its tone's colour; a table per origin and per change on a wide
//! screen, a card each below 600 px (a phone, 400 px, reads it without
//! scrolling sideways); reloaded every [`REFRESH_S`] seconds by a `<meta>`,
//! since nothing on the page may run.
//!
//! Self-contained under the Worker's Content-Security-Policy
//! (`default-src 'none'; style-src 'unsafe-inline'`): one inline `<style>`,
//! no script, no external resource, no inline `style=` attribute. Every
//! string is escaped on the way out.

use std::fmt::Write as _;

use super::table::{table, StatusTable, COLUMNS, TITLE};
use super::when::iso;

/// Seconds between reloads: a drill shows itself without a hand on F5.
pub const REFRESH_S: u32 = 15;

/// The history table's header.
const CHANGE_COLUMNS: [&str; 4] = ["Time", "Origin", "Change", "Reason"];

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

// Colours by class, never by text: the headline's tone (`tone-healthy`,
// `-degraded`, `-failover`, `-down`, `-unknown`), a verdict's up/down, a change's bad/good. Below 600 px a
// `.cards` table becomes one card per row, each cell labelled by its
// column (`data-label`), and the first cell (the origin) is the card's
// title; a change's card is two lines (time, origin, change; reason).
const STYLE: &str = "\
:root{color-scheme:light dark;--muted:#666;--line:#ccc;--up:#1a7f37;--down:#cf222e;--warn:#9a6700;--move:#bc4c00;--tint:rgba(127,127,127,.08)}\
@media (prefers-color-scheme:dark){:root{--muted:#9a9a9a;--line:#444;--up:#3fb950;--down:#f85149;--warn:#d29922;--move:#f0883e}}\
body{font:15px/1.4 system-ui,sans-serif;margin:1.5rem;max-width:80rem}\
h1{font-size:1.1rem;margin:0 0 .6rem;color:var(--muted);font-weight:600}h2{font-size:1.05rem;margin:1.6rem 0 .3rem}\
p{margin:.2rem 0}.muted,td div+div{color:var(--muted);font-size:.85rem}\
.headline{font-size:1.35rem;font-weight:700;margin:0;padding:.6rem .9rem;border-left:.4rem solid var(--muted);background:var(--tint);overflow-wrap:anywhere}\
.headline+.muted{padding:.2rem 0 0 1.3rem}\
.tone-healthy{border-color:var(--up);color:var(--up)}.tone-degraded{border-color:var(--warn);color:var(--warn)}\
.tone-failover{border-color:var(--move);color:var(--move)}.tone-down{border-color:var(--down);color:var(--down)}\
.scroll{overflow-x:auto}table{border-collapse:collapse;margin:.6rem 0}\
th,td{text-align:left;vertical-align:top;padding:.45rem .8rem;border-bottom:1px solid var(--line);white-space:nowrap}\
th{font-weight:600;border-bottom-width:2px}\
td:first-child div:first-child{font-weight:600}\
.up,.down{font-weight:600;text-transform:uppercase;letter-spacing:.03em}\
.up{color:var(--up)}.down{color:var(--down)}\
tr.bad td:nth-child(3){color:var(--down);font-weight:600}tr.good td:nth-child(3){color:var(--up);font-weight:600}\
.changes td:last-child{white-space:normal;min-width:14rem}\
ul.overrides{padding-left:1.2rem;margin:.3rem 0}.loud{color:var(--down);font-weight:700}\
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem;margin:.6rem 0}dt{color:var(--muted)}dd{margin:0}\
@media (max-width:600px){body{margin:.8rem}.headline{font-size:1.15rem}\
dl{grid-template-columns:auto}dd{margin:0 0 .4rem}\
.scroll{overflow-x:visible}.cards,.cards tbody,.cards tr,.cards td{display:block}.cards thead{display:none}\
.cards tr{border:1px solid var(--line);border-radius:.4rem;padding:.5rem .7rem;margin:.6rem 0}\
.cards td{border:0;padding:.15rem 0;white-space:normal;overflow-wrap:anywhere}\
.cards td::before{content:attr(data-label);display:block;color:var(--muted);font-size:.75rem;text-transform:uppercase}\
.cards td:first-child::before{content:none}.cards td:first-child{font-size:1.05rem}\
.cards.changes td{display:inline-block;margin-right:.5rem}.cards.changes td::before{content:none}\
.cards.changes td:first-child{font-size:inherit;font-weight:600}.cards.changes td:last-child{display:block}}";

/// The whole page. `table` has the content; this only adds markup.
pub fn html(doc: &serde_json::Value) -> String {
    let t = table(doc);
    let mut out = String::with_capacity(8192);
    out.push_str(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"robots\" content=\"noindex\">\n",
    );
    let _ = writeln!(out, "<meta http-equiv=\"refresh\" content=\"{REFRESH_S}\">");
    let _ = write!(out, "<title>{}</title>\n<style>{STYLE}", escape(TITLE));
    let _ = writeln!(out, "</style>\n</head>\n<body>\n<h1>{}</h1>", escape(TITLE));
    headline(&mut out, &t);
    definitions(&mut out, &t.view);
    overrides(&mut out, &t);
    origins(&mut out, &t);
    if let Some(changes) = &t.changes {
        let _ = writeln!(
            out,
            "<h2>{}</h2>\n<p class=\"muted\">{}</p>",
            escape(&changes.title),
            escape(&changes.note)
        );
        if changes.rows.is_empty() {
            out.push_str("<p>No change recorded yet.</p>\n");
        } else {
            let rows: Vec<(&str, Vec<String>)> = changes
                .rows
                .iter()
                .map(|c| {
                    let class = match c.bad {
                        Some(true) => "bad",
                        Some(false) => "good",
                        None => "",
                    };
                    // The time carries its exact instant.
                    let time = match &c.at_iso {
                        Some(at) => format!(
                            "<time datetime=\"{}\">{}</time>",
                            escape(at),
                            escape(&c.time)
                        ),
                        None => escape(&c.time),
                    };
                    let cells = vec![
                        time,
                        escape(&c.subject),
                        escape(&c.change),
                        escape(&c.reason),
                    ];
                    (class, cells)
                })
                .collect();
            cards(&mut out, "changes", &CHANGE_COLUMNS, &rows);
        }
    }
    if !t.settings.is_empty() {
        out.push_str("<h2>Settings</h2>\n");
        definitions(&mut out, &t.settings);
    }
    out.push_str("</body>\n</html>");
    out
}

fn headline(out: &mut String, t: &StatusTable) {
    let _ = writeln!(
        out,
        "<p class=\"headline tone-{}\" id=\"headline\">{}</p>",
        t.headline.tone.as_str(),
        escape(&t.headline.text)
    );
    if let Some(detail) = &t.headline_detail {
        let _ = writeln!(out, "<p class=\"muted\">{}</p>", escape(detail));
    }
    if !t.sites.is_empty() {
        out.push_str("<ul class=\"sites\">\n");
        for (name, h) in &t.sites {
            let _ = writeln!(
                out,
                "<li class=\"tone-{}\"><b>{}</b>: {}</li>",
                h.tone.as_str(),
                escape(name),
                escape(&h.text)
            );
        }
        out.push_str("</ul>\n");
    }
    // The "as of" line (the last) carries the exact instant, to the ms, in
    // a <time>: every relative time counts back from it.
    let last = t.about.len().saturating_sub(1);
    let about: Vec<String> = t
        .about
        .iter()
        .enumerate()
        .map(
            |(i, line)| match t.now_ms.and_then(iso).filter(|_| i == last) {
                Some(at) => format!("<time datetime=\"{}\">{}</time>", escape(&at), escape(line)),
                None => escape(line),
            },
        )
        .collect();
    let _ = writeln!(
        out,
        "<p class=\"muted\">{} · reloads every {REFRESH_S} s</p>",
        about.join(" · ")
    );
}

fn overrides(out: &mut String, t: &StatusTable) {
    if t.overrides.is_empty() {
        return;
    }
    out.push_str("<h2>Overrides</h2>\n<ul class=\"overrides\">\n");
    for line in &t.overrides {
        let class = if line.loud { " class=\"loud\"" } else { "" };
        let _ = writeln!(out, "<li{class}>{}</li>", escape(&line.text));
    }
    out.push_str("</ul>\n");
}

fn origins(out: &mut String, t: &StatusTable) {
    out.push_str("<h2>Origins</h2>\n");
    let rows: Vec<(&str, Vec<String>)> = t
        .rows
        .iter()
        .map(|row| {
            let cells = row
                .iter()
                .enumerate()
                .map(|(i, cell)| {
                    let mut html = String::new();
                    for (j, line) in cell.iter().enumerate() {
                        // The first line of a state or a view is a verdict:
                        // coloured when it is one we know, by a fixed class,
                        // never by the text.
                        let class = match (i, j, line.as_str()) {
                            (1 | 4 | 5, 0, "up") => " class=\"up\"",
                            (1 | 4 | 5, 0, "down") => " class=\"down\"",
                            (1, _, "override: FORCED UP") => " class=\"loud\"",
                            _ => "",
                        };
                        let _ = write!(html, "<div{class}>{}</div>", escape(line));
                    }
                    html
                })
                .collect();
            ("", cells)
        })
        .collect();
    cards(out, "origins", &COLUMNS, &rows);
    out.push_str(
        "<p class=\"muted\">In priority order. State and since are this isolate's own view, \
         the one it routes by; the colo view is the last verdict read from this location's \
         cache, the global view the last one from the global checker.</p>\n",
    );
}

/// A table whose rows are cards on a narrow screen. Cells are HTML already
/// escaped; `class` is one of ours.
fn cards(out: &mut String, class: &str, columns: &[&str], rows: &[(&str, Vec<String>)]) {
    // A line is one fact ("2026-08-01 11:47:31 UTC"): on a wide window a
    // table too wide scrolls sideways rather than break it.
    let _ = write!(
        out,
        "<div class=\"scroll\">\n<table class=\"cards {class}\">\n<thead><tr>"
    );
    for column in columns {
        let _ = write!(out, "<th>{}</th>", escape(column));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (row_class, cells) in rows {
        match *row_class {
            "" => out.push_str("<tr>"),
            c => {
                let _ = write!(out, "<tr class=\"{c}\">");
            }
        }
        for (column, cell) in columns.iter().zip(cells) {
            let _ = write!(out, "<td data-label=\"{}\">{cell}</td>", escape(column));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</div>\n");
}

fn definitions(out: &mut String, pairs: &[(&'static str, String)]) {
    if pairs.is_empty() {
        return;
    }
    out.push_str("<dl>");
    for (what, value) in pairs {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", escape(what), escape(value));
    }
    out.push_str("</dl>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::report::table::tests::{document, document_with_history};
    use serde_json::json;

    #[test]
    fn the_page_shows_every_cell() {
        let page = html(&document());
        for needle in [
            "<meta http-equiv=\"refresh\" content=\"15\">",
            "<p class=\"headline tone-failover\" id=\"headline\">Serving from replica (failover) \
             since 11:59 UTC — primary down: status 530</p>",
            "<p class=\"muted\">since 2026-08-01 11:59:53 UTC, 12s ago</p>",
            "<dt>View</dt><dd>this isolate: ",
            "<dt>Steering</dt><dd>failover: ",
            "<dt>Colo health</dt><dd>on: ",
            "<dt>Global health</dt><dd>off: ",
            "<table class=\"cards origins\">",
            "<th>Origin</th>",
            "<td data-label=\"Origin\"><div>primary</div></td>",
            "<td data-label=\"State\"><div class=\"down\">down</div><div>decided by this \
             isolate</div><div>1 of 2 good probes</div></td>",
            "<div>12s ago</div><div>2026-08-01 11:59:53 UTC</div>",
            "<div>confirmed 2s ago</div>",
            "<time datetime=\"2026-08-01T12:00:05.123Z\">as of 2026-08-01 12:00:05 UTC</time>",
            "<dt>attempt timeout</dt><dd>6 s</dd>",
            "<div class=\"up\">up</div>",
        ] {
            assert!(page.contains(needle), "{needle} in\n{page}");
        }
        // No history or overrides in the document: no such sections.
        assert!(!page.contains("Recent changes"));
        assert!(!page.contains("Overrides"));
        // The headline comes first, before any table.
        assert!(page.find("id=\"headline\"") < page.find("<table"));
    }

    #[test]
    fn history_and_overrides_on_the_page() {
        let page = html(&document_with_history());
        for needle in [
            "<h2>Recent changes, as the global checker saw them</h2>",
            "<table class=\"cards changes\">",
            "<th>Time</th><th>Origin</th><th>Change</th><th>Reason</th>",
            "<tr class=\"bad\"><td data-label=\"Time\"><time datetime=\"2026-08-01T11:59:53.000Z\">\
             11:59:53 UTC</time></td><td data-label=\"Origin\">primary</td><td \
             data-label=\"Change\">up → down</td><td data-label=\"Reason\">status 530</td></tr>",
            "<tr class=\"good\"><td data-label=\"Time\"><time datetime=\"2026-07-31T22:10:00.000Z\">\
             2026-07-31 22:10:00 UTC</time></td>",
            "<td data-label=\"Reason\">2 good probes (and 2 more changes)</td>",
            "<h2>Overrides</h2>",
            "<li class=\"loud\">replica: FORCED UP: gets traffic whatever its health",
            "<div class=\"loud\">override: FORCED UP</div>",
        ] {
            assert!(page.contains(needle), "{needle} in\n{page}");
        }
        let mut empty = document();
        empty["events"] = json!([]);
        empty["events_view"] = json!("isolate");
        let page = html(&empty);
        assert!(page.contains("<h2>Recent changes, as seen by this isolate only</h2>"));
        assert!(page.contains("<p>No change recorded yet.</p>"));
    }

    #[test]
    fn nothing_on_the_page_runs_loads_or_needs_more_than_the_csp_allows() {
        for doc in [document(), document_with_history(), json!(null)] {
            let page = html(&doc);
            assert!(page.ends_with("</html>"));
            for forbidden in [
                "<script",
                "<link",
                "<img",
                "src=",
                "href=",
                "url(",
                "@import",
                " style=",
                "javascript:",
            ] {
                assert!(!page.contains(forbidden), "{forbidden}");
            }
        }
    }

    #[test]
    fn every_string_is_escaped() {
        let hostile = "<script>alert(1)</script>";
        let quote = "\"'><img src=x onerror=alert(2)>&amp;";
        let mut doc = document_with_history();
        doc["version"] = json!(hostile);
        doc["revision"] = json!(quote);
        doc["steering"] = json!(hostile);
        doc["origins"][0]["name"] = json!(hostile);
        doc["origins"][0]["last_error"] = json!(quote);
        doc["origins"][0]["local"]["decided_by"] = json!(hostile);
        doc["origins"][0]["colo"]["state"] = json!(quote);
        doc["origins"][1]["state"] = json!(hostile);
        doc["events"][0]["origin"] = json!(hostile);
        doc["events"][0]["reason"] = json!(quote);
        doc["events"][1]["at_ms"] = json!(null);
        doc["events"][1]["at"] = json!(hostile);
        doc["events"][1]["from"] = json!(quote);
        doc["events_view"] = json!(hostile);
        doc["overrides"] = json!({ hostile: {"mode": quote, "set_at": hostile} });
        let page = html(&doc);
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(!page.contains("\"'>"), "{page}");
        assert!(page.contains(
            "<td data-label=\"Origin\"><div>&lt;script&gt;alert(1)&lt;/script&gt;</div></td>"
        ));
        assert!(
            page.contains("<div>&quot;&#39;&gt;&lt;img src=x onerror=alert(2)&gt;&amp;amp;</div>")
        );
        assert!(page.contains("version &lt;script&gt;alert(1)&lt;/script&gt;, revision &quot;"));
        assert!(page.contains("<div>decided by &lt;script&gt;"));
        assert!(page.contains("<td data-label=\"Time\">&lt;script&gt;"));
        assert_eq!(escape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&#39;f");
    }
}
