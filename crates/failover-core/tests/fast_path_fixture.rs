//! The Rust half of tests/fixtures/fast-path.json: the rules the JS fast path
//! (src/js/lease.mjs `upstreamUrl`, src/js/rules.mjs, src/js/body.mjs) copies from this crate,
//! case by case. tests/lease.test.mjs holds the JS half to the same rows, so
//! a rule changed in one language only fails one of the two.

// Test helpers: a malformed fixture row is a failed test.
#![allow(clippy::panic)]

use failover_core::edge::classify::{
    classify_response, is_access_login, Failure, ATTEMPT_REFUSED, ATTEMPT_TIMED_OUT,
};
use failover_core::edge::config::{HostPattern, WorkerConfig};
use failover_core::edge::hop_by_hop::to_drop;
use failover_core::edge::replay::BodyPlan;
use failover_core::edge::target::{
    authority, is_status_path, is_status_request, reserved_subpath, upstream_url,
};
use failover_core::secret::carries_any;
use serde_json::Value;

/// What the fast path does with a request it leaves to Rust.
const FULL_PATH: &str = "full path";
/// What the full path does with a request for the status endpoint.
const STATUS_ENDPOINT: &str = "status endpoint";
/// What the full path does with a request under `{STATUS_PATH}/`, or for
/// `STATUS_PATH` itself with a method the status page does not take:
/// answers it itself (the admin API, 404 or 405), never an origin.
const WORKERS_OWN: &str = "the Worker's own";

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/fast-path.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn text<'a>(row: &'a Value, field: &str) -> &'a str {
    row[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} must be a string in {row}"))
}

fn maybe_text<'a>(row: &'a Value, field: &str) -> Option<&'a str> {
    match &row[field] {
        Value::Null => None,
        value => Some(
            value
                .as_str()
                .unwrap_or_else(|| panic!("{field} must be a string or null in {row}")),
        ),
    }
}

fn cases<'a>(doc: &'a Value, section: &str) -> &'a [Value] {
    let rows = doc[section]["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("{section}.cases must be an array"));
    assert!(!rows.is_empty(), "{section}.cases is empty");
    rows
}

/// The fast path may only take a request the full path would send to the
/// same URL: a row that says otherwise describes a disagreement, whichever
/// language it was written from.
fn assert_coherent(fast: &str, full: &str, row: &Value) {
    assert!(
        fast == FULL_PATH || fast == full,
        "the fast path must hand over, or do what the full path does: {row}"
    );
}

#[test]
fn url_cases() {
    let doc = fixture();
    let origin = text(&doc, "origin");
    for row in cases(&doc, "urls") {
        let url = text(row, "url");
        let method = text(row, "method");
        let status_path = maybe_text(row, "status_path");
        let full = text(row, "full");
        assert_coherent(text(row, "fast"), full, row);
        let is_status = is_status_request(url, method, status_path);
        let is_reserved =
            reserved_subpath(url, status_path).is_some() || is_status_path(url, status_path);
        // The proxy asks `is_status_request` first: the status page; then
        // the exact path for any other method, or a path under it.
        if full == STATUS_ENDPOINT {
            assert!(is_status, "the status endpoint: {row}");
        } else if full == WORKERS_OWN {
            assert!(is_reserved && !is_status, "the Worker's own path: {row}");
        } else {
            assert!(!is_status && !is_reserved, "an origin's path: {row}");
            assert_eq!(upstream_url(origin, url).as_deref(), Some(full), "{row}");
        }
    }
}

#[test]
fn hostile_paths_stay_on_the_origin() {
    let doc = fixture();
    let origin = text(&doc, "origin");
    let request_origin = text(&doc["hostile"], "request_origin");
    for row in cases(&doc, "hostile") {
        // As the runtime hands it over...
        let upstream = text(row, "upstream");
        assert_eq!(authority(upstream), authority(origin), "{row}");
        assert_eq!(
            upstream_url(origin, text(row, "url")).as_deref(),
            Some(upstream),
            "{row}"
        );
        // ...and raw, in case a runtime ever hands it over unparsed.
        let raw = format!("{request_origin}{}", text(row, "target"));
        let joined = upstream_url(origin, &raw).unwrap_or_else(|| panic!("refused {raw}"));
        assert_eq!(authority(&joined), authority(origin), "{raw} -> {joined}");
    }
}

#[test]
fn join_corpus() {
    let doc = fixture();
    let origin = text(&doc, "origin");
    let corpus = &doc["join_corpus"];
    let request_origin = text(corpus, "request_origin");
    let paths = corpus["paths"]
        .as_array()
        .unwrap_or_else(|| panic!("join_corpus.paths must be an array"));
    assert_eq!(
        Some(paths.len() as u64),
        corpus["count"].as_u64(),
        "join_corpus.count"
    );
    for path in paths {
        let path = path
            .as_str()
            .unwrap_or_else(|| panic!("not a string: {path}"));
        let without_fragment = path.split_once('#').map_or(path, |(p, _)| p);
        let expected = format!("{origin}{without_fragment}");
        let url = format!("{request_origin}{path}");
        assert_eq!(
            upstream_url(origin, &url).as_deref(),
            Some(expected.as_str()),
            "{url}"
        );
    }
}

#[test]
fn responses() {
    let doc = fixture();
    for row in cases(&doc, "responses") {
        let status = row["status"]
            .as_u64()
            .and_then(|s| u16::try_from(s).ok())
            .unwrap_or_else(|| panic!("status must be a u16 in {row}"));
        let expected = match text(row, "expect") {
            "answer" => None,
            "failure" => Some(text(row, "label")),
            other => panic!("expect is \"answer\" or \"failure\", not {other:?}: {row}"),
        };
        let failure = classify_response(status, maybe_text(row, "location"));
        assert_eq!(failure.map(Failure::label).as_deref(), expected, "{row}");
    }
}

#[test]
fn access_logins() {
    let doc = fixture();
    for row in cases(&doc, "access_login") {
        let login = row["login"]
            .as_bool()
            .unwrap_or_else(|| panic!("login must be a bool in {row}"));
        assert_eq!(is_access_login(text(row, "location")), login, "{row}");
    }
}

#[test]
fn access_login_is_a_failure_the_origin_never_saw() {
    // The one property of the new failure the fixture cannot carry: a POST
    // may go on to the next origin (replay.rs).
    assert_eq!(Failure::AccessLogin.label(), "access login");
    assert!(Failure::AccessLogin.origin_never_saw_request());
}

#[test]
fn bodies() {
    let doc = fixture();
    let cap = doc["bodies"]["cap"]
        .as_u64()
        .unwrap_or_else(|| panic!("bodies.cap must be a whole number"));
    for row in cases(&doc, "bodies") {
        let method = text(row, "method");
        let length = maybe_text(row, "content_length");
        let plan = match BodyPlan::choose(true, length, cap) {
            BodyPlan::Empty => "empty",
            BodyPlan::Buffered => "buffered",
            BodyPlan::Streamed => "streamed",
        };
        assert_eq!(plan, text(row, "plan"), "{row}");
        // The fast path reads only a body the full path would buffer too,
        // of the length the full path holds, and never a GET's or HEAD's.
        match &row["fast"] {
            Value::Number(bytes) => {
                assert_eq!(plan, "buffered", "{row}");
                assert!(!matches!(method, "GET" | "HEAD"), "{row}");
                let parsed = length.and_then(|l| l.trim().parse::<u64>().ok());
                assert_eq!(bytes.as_u64(), parsed, "{row}");
            }
            fast => assert_eq!(fast.as_str(), Some(FULL_PATH), "{row}"),
        }
    }
}

#[test]
fn attempt_results() {
    let doc = fixture();
    let results = &doc["attempt_results"];
    assert_eq!(results["TIMED_OUT"].as_f64(), Some(ATTEMPT_TIMED_OUT));
    assert_eq!(results["REFUSED"].as_f64(), Some(ATTEMPT_REFUSED));
}

#[test]
fn hop_by_hop() {
    let doc = fixture();
    for row in cases(&doc, "hop_by_hop") {
        let expected: Vec<&str> = row["drop"]
            .as_array()
            .unwrap_or_else(|| panic!("drop must be an array in {row}"))
            .iter()
            .map(|v| v.as_str().unwrap_or_else(|| panic!("a name in {row}")))
            .collect();
        let drop = to_drop(maybe_text(row, "connection"));
        assert_eq!(drop, expected, "{row}");
    }
}

#[test]
fn workers_tokens() {
    let doc = fixture();
    let tokens: Vec<&str> = doc["workers_tokens"]["tokens"]
        .as_array()
        .unwrap_or_else(|| panic!("workers_tokens.tokens must be an array"))
        .iter()
        .map(|t| t.as_str().unwrap_or_else(|| panic!("a token: {t}")))
        .collect();
    let tokens: Vec<Option<&str>> = tokens.into_iter().map(Some).collect();
    for row in cases(&doc, "workers_tokens") {
        let carries = row["carries"]
            .as_bool()
            .unwrap_or_else(|| panic!("carries must be a bool in {row}"));
        assert_eq!(
            carries_any(Some(text(row, "header")), &tokens),
            carries,
            "{row}"
        );
    }
}

#[test]
fn hosts() {
    let doc = fixture();
    let section = &doc["hosts"];
    let sites: Vec<Value> = section["sites"]
        .as_array()
        .unwrap_or_else(|| panic!("hosts.sites must be an array"))
        .iter()
        .enumerate()
        .map(|(i, hosts)| {
            serde_json::json!({
                "name": format!("s{i}"), "hosts": hosts,
                "origins": [{"name": format!("o{i}"), "url": format!("https://o{i}.example")}],
            })
        })
        .collect();
    let vars = Value::Array(sites).to_string();
    let config = WorkerConfig::from_vars(|k| (k == "SITES").then(|| vars.clone()))
        .unwrap_or_else(|e| panic!("{e}"));
    // The table the fast path is handed (src/fast.rs host_table).
    let mut names = serde_json::Map::new();
    let mut wildcards = serde_json::Map::new();
    let mut any = -1i64;
    for (s, site) in config.sites.iter().enumerate() {
        for host in &site.hosts {
            match host {
                HostPattern::Name(n) => drop(names.insert(n.clone(), s.into())),
                HostPattern::Wildcard(r) => drop(wildcards.insert(r.clone(), s.into())),
                HostPattern::Any => any = s as i64,
            }
        }
    }
    assert_eq!(
        serde_json::json!({"names": names, "wildcards": wildcards, "any": any}),
        section["table"]
    );
    for row in cases(&doc, "hosts") {
        let site = config
            .site_for_url(text(row, "url"))
            .map_or(-1, |s| s as i64);
        assert_eq!(Some(site), row["site"].as_i64(), "{row}");
    }
}
