//! The Rust half of tests/fixtures/route.json: one request's route
//! (`failover_core::edge::route`: the policy's order, affinity on top, the origin
//! the request was meant for), case by case. tests/route-fixture.test.mjs
//! holds src/js/route.mjs, its fast-path twin, to the same rows; the pieces
//! both compose are held to tests/fixtures/steering.json.
//!
//! The fixture is generated from the cases below, then checked by both
//! languages; after changing a case or, deliberately, a rule:
//! `cargo test -p failover-core --test route_fixture -- --ignored write_fixture`

// Test helpers: a malformed fixture row is a failed test.
#![allow(clippy::panic)]

use failover_core::edge::affinity::{self, SetCookie};
use failover_core::edge::config::WorkerConfig;
use failover_core::edge::overrides::Standing;
use failover_core::edge::route::{route, Route};
use serde_json::{json, Value};

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/route.json"
);

const ORIGINS: &str = r#"[{"name":"a","url":"https://a.example","weight":1},
  {"name":"b","url":"https://b.example","weight":2},
  {"name":"c","url":"https://c.example","weight":1},
  {"name":"d","url":"https://d.example","weight":0}]"#;

fn config(steering: &str, affinity: &str, failover: &str) -> WorkerConfig {
    WorkerConfig::from_vars(|k| match k {
        "ORIGINS" => Some(ORIGINS.to_string()),
        "STEERING" => Some(steering.to_string()),
        "AFFINITY" => Some(affinity.to_string()),
        "AFFINITY_FAILOVER" => Some(failover.to_string()),
        _ => None,
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

fn set_cookie(s: SetCookie) -> (&'static str, Option<usize>) {
    match s {
        SetCookie::Never => ("never", None),
        SetCookie::Always => ("always", None),
        SetCookie::UnlessServedBy(p) => ("unless_served_by", Some(p)),
    }
}

/// Every combination worth a row: policies × affinity × health × keys ×
/// cookies × random numbers.
fn rows() -> Vec<Value> {
    let healths: [[bool; 4]; 6] = [
        [true, true, true, true],
        [false, true, true, true],
        [true, true, false, true],
        [false, false, true, true],
        [false, false, false, true],
        [false, false, false, false],
    ];
    let mut rows = Vec::new();
    for steering in ["failover", "weighted", "hash"] {
        for (affinity, failover) in [
            ("off", "temporary"),
            ("cookie", "temporary"),
            ("cookie", "sticky"),
        ] {
            let c = config(steering, affinity, failover);
            let tokens = affinity::tokens(&c.origins);
            let cookies: [Option<String>; 5] = [
                None,
                Some(format!("x=1; __tf_affinity={}", tokens[1])),
                Some(format!("__tf_affinity={}", tokens[0])),
                Some("__tf_affinity=forged".to_string()),
                // d has weight 0: a pin honoured only while a, b and c are down.
                Some(format!("__tf_affinity={}", tokens[3])),
            ];
            for healthy in healths {
                for key in [None, Some("ключ-7")] {
                    for cookie in &cookies {
                        for random in ["0", "0.3", "0.45", "0.9999"] {
                            let r: f64 = random.parse().unwrap_or(0.0);
                            let routed =
                                route(c.site(), |i| healthy[i], &[], key, cookie.as_deref(), r);
                            let cookie_for: Vec<usize> = (0..4)
                                .filter(|&s| routed.sets_cookie_for(c.site(), s))
                                .collect();
                            let Route {
                                order,
                                intended,
                                set_cookie: sc,
                                pinned,
                                weighted_up: _,
                                first: _,
                            } = routed;
                            let (set_cookie, unless) = set_cookie(sc);
                            rows.push(json!({
                                "steering": steering, "affinity": affinity, "failover": failover,
                                "healthy": healthy, "key": key, "cookie": cookie, "random": random,
                                "order": order, "intended": intended, "set_cookie": set_cookie,
                                "unless": unless, "pinned": pinned, "cookie_for": cookie_for,
                            }));
                        }
                    }
                }
            }
        }
    }
    rows.extend(override_rows());
    rows
}

fn standing_word(s: Standing) -> &'static str {
    match s {
        Standing::Auto => "auto",
        Standing::ForcedUp => "forced-up",
        Standing::Draining => "draining",
        Standing::Held => "held",
    }
}

/// Rows with overrides in force. The fast path gets them folded into its
/// lease (src/fast.rs): `healthy` is what it may route to
/// (`Standing::routable`, pins aside) and `intendable` what a request may
/// be meant for (`route.mjs`'s `allUp`); `health` and `standing` are what
/// Rust routed with. No row drains under affinity: the fast path takes no
/// lease then (a pin to the draining origin is the full path's).
fn override_rows() -> Vec<Value> {
    use Standing::*;
    let standings: [[Standing; 4]; 5] = [
        [Held, Auto, Auto, Auto],
        [Auto, ForcedUp, Auto, Auto],
        [Held, Auto, Held, Auto],
        [Auto, Auto, Auto, ForcedUp],
        [Draining, Auto, Auto, Auto],
    ];
    let healths: [[bool; 4]; 3] = [
        [true, true, true, true],
        [false, false, true, true],
        [true, false, false, false],
    ];
    let mut rows = Vec::new();
    for steering in ["failover", "weighted", "hash"] {
        for (affinity, failover) in [
            ("off", "temporary"),
            ("cookie", "temporary"),
            ("cookie", "sticky"),
        ] {
            let c = config(steering, affinity, failover);
            let tokens = affinity::tokens(&c.origins);
            let cookies: [Option<String>; 3] = [
                None,
                Some(format!("__tf_affinity={}", tokens[0])),
                Some(format!("__tf_affinity={}", tokens[1])),
            ];
            for standing in standings {
                if affinity == "cookie" && standing.contains(&Draining) {
                    continue;
                }
                for health in healths {
                    let healthy: Vec<bool> = (0..4)
                        .map(|i| standing[i].routable(health[i], false))
                        .collect();
                    let intendable: Vec<bool> = standing.iter().map(|s| s.intendable()).collect();
                    for key in [None, Some("ключ-7")] {
                        for cookie in &cookies {
                            for random in ["0.3", "0.9999"] {
                                let r: f64 = random.parse().unwrap_or(0.0);
                                let routed = route(
                                    c.site(),
                                    |i| health[i],
                                    &standing,
                                    key,
                                    cookie.as_deref(),
                                    r,
                                );
                                let cookie_for: Vec<usize> = (0..4)
                                    .filter(|&s| routed.sets_cookie_for(c.site(), s))
                                    .collect();
                                let (set_cookie, unless) = set_cookie(routed.set_cookie);
                                rows.push(json!({
                                    "steering": steering, "affinity": affinity, "failover": failover,
                                    "health": health, "standing": standing.map(standing_word),
                                    "healthy": healthy, "intendable": intendable,
                                    "key": key, "cookie": cookie, "random": random,
                                    "order": routed.order, "intended": routed.intended, "set_cookie": set_cookie,
                                    "unless": unless, "pinned": routed.pinned, "cookie_for": cookie_for,
                                }));
                            }
                        }
                    }
                }
            }
        }
    }
    rows
}

fn fixture() -> Value {
    let c = config("failover", "cookie", "temporary");
    json!({
        "about": "Routes for crates/failover-core/tests/route_fixture.rs and tests/route-fixture.test.mjs; generated by the former (write_fixture). Origins a (weight 1), b (2), c (1), d (0); cookie_for lists the origins whose response would set the affinity cookie (never d while a, b or c is up); tokens are the affinity cookie values per origin; random is a decimal string. Rows with a standing have overrides in force: healthy and intendable are what the fast path's lease carries (the origins it may route to, and may mean a request for), health and standing what Rust routed with.",
        "names": c.origins.iter().map(|o| o.name.clone()).collect::<Vec<_>>(),
        "weights": c.origins.iter().map(|o| o.weight).collect::<Vec<_>>(),
        "tokens": affinity::tokens(&c.origins),
        "rows": rows(),
    })
}

#[test]
fn every_row_is_what_rust_routes() {
    let text = std::fs::read_to_string(PATH).unwrap_or_else(|e| panic!("{PATH}: {e}"));
    let stored: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{PATH}: {e}"));
    let fresh = fixture();
    let (stored_rows, fresh_rows) = (&stored["rows"], &fresh["rows"]);
    assert_eq!(
        stored["tokens"], fresh["tokens"],
        "the cookie tokens changed"
    );
    let n = fresh_rows.as_array().map_or(0, Vec::len);
    assert!(n > 1000, "{n} rows");
    for i in 0..n {
        assert_eq!(stored_rows[i], fresh_rows[i], "row {i}");
    }
    assert_eq!(stored_rows.as_array().map_or(0, Vec::len), n);
}

#[test]
#[ignore = "writes tests/fixtures/route.json"]
fn write_fixture() {
    let mut out = String::from("{\n");
    let f = fixture();
    for key in ["about", "names", "weights", "tokens"] {
        out += &format!("  {:?}: {},\n", key, f[key]);
    }
    out += "  \"rows\": [\n";
    let rows = f["rows"].as_array().cloned().unwrap_or_default();
    for (i, row) in rows.iter().enumerate() {
        let comma = if i + 1 < rows.len() { "," } else { "" };
        out += &format!("    {row}{comma}\n");
    }
    out += "  ]\n}\n";
    std::fs::write(PATH, out).unwrap_or_else(|e| panic!("{PATH}: {e}"));
}
