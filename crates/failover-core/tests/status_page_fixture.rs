//! tests/fixtures/status-page.html: the status page for a document with
//! everything a page can show, for tests/status-browser.test.mjs to open in
//! a real Chromium beside the live Worker's page (which shows what its
//! build and configuration hold): three origins, the primary down after
//! three outages, a history kept by the global checker (`events`, as
//! `notify::Event::to_json` writes them), a force-up and a drain override.
//!
//! The document is the real `status_document` of a config and a health
//! map, with those fields added as the Worker adds them. The fixture is
//! generated here and checked to be current; after a change to the page:
//! `cargo test -p failover-core --test status_page_fixture -- --ignored write_fixture`

// Test helpers: a fixture that cannot be read is a failed test.
#![allow(clippy::panic)]

use std::time::Duration;

use failover_core::edge::classify::Failure;
use failover_core::edge::config::WorkerConfig;
use failover_core::edge::health::HealthMap;
use failover_core::edge::report::{self, page, BuildInfo};
use failover_core::notify::{Event, Kind, Source};
use serde_json::{json, Value};

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/status-page.html"
);

/// 2026-12-01 19:33:00 UTC.
const NOW: u64 = 1_796_153_580_000;
const MINUTE: u64 = 60_000;

/// `ago_min` minutes before NOW, and `id` seconds after that, so events of
/// the same minute keep their order.
fn at(ago_min: u64, id: u32) -> u64 {
    NOW - ago_min * MINUTE + u64::from(id) * 1000
}

fn event(id: u32, kind: Kind, origin: Option<&str>, ago_min: u64, reason: &str) -> Value {
    let states = match kind {
        Kind::OriginDown => Some(("up", "down")),
        Kind::OriginUp => Some(("down", "up")),
        _ => None,
    };
    Event {
        id: format!("fixture-{id}"),
        kind,
        origin: origin.map(str::to_string),
        at_ms: at(ago_min, id),
        reason: reason.to_string(),
        site: "www.example.com".to_string(),
        source: Source::Edge,
        node: None,
        from: states.map(|(f, _)| f.to_string()),
        to: states.map(|(_, t)| t.to_string()),
        more: if id == 2 { 3 } else { 0 },
    }
    .to_json()
}

/// The document: a Worker with three origins whose primary went down
/// (connection refused) at 19:21, after two earlier outages.
fn document() -> Value {
    let config = WorkerConfig::from_vars(|k| match k {
        "ORIGINS" => Some(
            r#"[{"name":"primary","url":"https://a.example"},
                {"name":"replica","url":"https://b.example"},
                {"name":"backup","url":"https://c.example","weight":0}]"#
                .to_string(),
        ),
        _ => None,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut health = HealthMap::new(3, 2, 1, Duration::from_secs(15));
    health.record_failure(0, Failure::Refused, at(12, 7));
    let build = BuildInfo {
        version: "0.1.0",
        revision: "fixture",
    };
    let mut doc = report::status_document(&config, &health, build, NOW);
    report::add_global_health(&mut doc, true);
    doc["events_view"] = json!("global");
    // Newest first, as the checker hands them out.
    doc["events"] = json!([
        event(
            7,
            Kind::OriginDown,
            Some("primary"),
            12,
            "connection refused"
        ),
        event(6, Kind::OriginUp, Some("primary"), 95, "2 good probes"),
        event(5, Kind::AllUp, None, 97, "replica answers again"),
        event(4, Kind::AllDown, None, 99, "status 530 from probe"),
        event(
            3,
            Kind::OriginDown,
            Some("replica"),
            99,
            "status 530 from probe"
        ),
        event(2, Kind::OriginDown, Some("primary"), 110, "timed out"),
        event(1, Kind::OriginUp, Some("primary"), 24 * 60, "2 good probes"),
        event(
            0,
            Kind::OriginDown,
            Some("primary"),
            24 * 60 + 30,
            "status 502 from probe"
        ),
    ]);
    doc["overrides"] = json!({
        "replica": {"mode": "force-up", "set_at": NOW - 8 * MINUTE, "expires_at": NOW + 52 * MINUTE},
        "backup": {"mode": "drain", "set_at": NOW - 26 * 60 * MINUTE, "expires_at": null},
    });
    doc
}

fn page() -> String {
    format!("{}\n", page::html(&document()))
}

#[test]
fn the_fixture_is_current() {
    let fixture = std::fs::read_to_string(PATH).unwrap_or_else(|e| panic!("{PATH}: {e}"));
    assert!(
        fixture == page(),
        "{PATH} is stale: cargo test -p failover-core --test status_page_fixture -- --ignored write_fixture"
    );
}

#[test]
fn the_fixture_shows_what_the_browser_test_looks_for() {
    let page = page();
    for needle in [
        "id=\"headline\">Serving from replica (failover) since 19:21 UTC — primary down: \
         connection refused; replica FORCED UP by an override, whatever its health</p>",
        "<h2>Recent changes, as the global checker saw them</h2>",
        "<td data-label=\"Change\">up → down</td>",
        "<li class=\"loud\">replica: FORCED UP",
        "<li>backup: drained: no new traffic",
        "<dt>Global health</dt><dd>on: ",
    ] {
        assert!(page.contains(needle), "{needle}");
    }
}

#[test]
#[ignore = "writes tests/fixtures/status-page.html; run on purpose"]
fn write_fixture() {
    std::fs::write(PATH, page()).unwrap_or_else(|e| panic!("{PATH}: {e}"));
}
