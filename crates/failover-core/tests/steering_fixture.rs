//! The Rust half of tests/fixtures/steering.json: steering, the hash key,
//! the affinity cookie and the deterministic logarithm, case by case.
//! tests/steering-fixture.test.mjs holds src/js/steer.mjs to the same rows,
//! so the fast path (JS) and the full path (Rust) steer a request alike.
//!
//! Numbers that are not small integers (`x`, `random`, scores) are written
//! as decimal strings: Rust's `str::parse` and JS's `Number()` both round
//! correctly, while serde_json's default float parsing need not.
//!
//! The fixture is generated from this file's case lists (then checked by
//! both languages); after changing a case list or, deliberately, a rule:
//! `cargo test -p failover-core --test steering_fixture -- --ignored write_fixture`

// Test helpers: a malformed fixture row is a failed test.
#![allow(clippy::panic)]

use failover_core::edge::affinity::{self, Affinity, AffinityFailover, AffinityMode, SetCookie};
use failover_core::edge::config::WorkerConfig;
use failover_core::edge::det_math;
use failover_core::edge::steering::{self, Candidate, Policy};
use failover_core::splitmix::SplitMix64;
use serde_json::{json, Value};

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/steering.json"
);

const NAMES: [&str; 4] = ["primary", "replica", "backup", "spare"];

fn fixture() -> Value {
    let text = std::fs::read_to_string(PATH).unwrap_or_else(|e| panic!("{PATH}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{PATH}: {e}"))
}

fn rows<'a>(v: &'a Value, field: &str) -> &'a Vec<Value> {
    v[field]
        .as_array()
        .unwrap_or_else(|| panic!("{field} must be an array"))
}

fn text<'a>(row: &'a Value, field: &str) -> &'a str {
    row[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} must be a string in {row}"))
}

fn maybe_text<'a>(row: &'a Value, field: &str) -> Option<&'a str> {
    match &row[field] {
        Value::Null => None,
        _ => Some(text(row, field)),
    }
}

/// A double written as a decimal string.
fn number(row: &Value, field: &str) -> f64 {
    text(row, field)
        .parse()
        .unwrap_or_else(|e| panic!("{field} in {row}: {e}"))
}

fn index(v: &Value) -> usize {
    v.as_u64()
        .and_then(|i| usize::try_from(i).ok())
        .unwrap_or_else(|| panic!("{v} must be an index"))
}

fn maybe_index(row: &Value, field: &str) -> Option<usize> {
    match &row[field] {
        Value::Null => None,
        v => Some(index(v)),
    }
}

fn indices(row: &Value, field: &str) -> Vec<usize> {
    rows(row, field).iter().map(index).collect()
}

fn policy(row: &Value) -> Policy {
    let name = text(row, "policy");
    Policy::parse(name).unwrap_or_else(|| panic!("policy {name}"))
}

fn candidates(row: &Value) -> (Vec<String>, Vec<u32>, Vec<bool>) {
    let names = rows(row, "names")
        .iter()
        .map(|n| n.as_str().unwrap_or_else(|| panic!("name {n}")).to_string())
        .collect();
    let weights = rows(row, "weights")
        .iter()
        .map(|w| u32::try_from(index(w)).unwrap_or_else(|_| panic!("weight {w}")))
        .collect();
    let healthy = rows(row, "healthy")
        .iter()
        .map(|h| h.as_bool().unwrap_or_else(|| panic!("healthy {h}")))
        .collect();
    (names, weights, healthy)
}

fn order(
    policy: Policy,
    names: &[String],
    weights: &[u32],
    healthy: &[bool],
    key: Option<&str>,
    random: f64,
) -> Vec<usize> {
    let pool: Vec<Candidate<'_>> = names
        .iter()
        .zip(weights)
        .zip(healthy)
        .map(|((name, &weight), &healthy)| Candidate {
            name,
            weight,
            healthy,
        })
        .collect();
    steering::attempt_order(policy, &pool, key, random)
}

fn config(origins: &Value) -> WorkerConfig {
    let text = origins.to_string();
    WorkerConfig::from_vars(|k| (k == "ORIGINS").then(|| text.clone()))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn affinity_of(row: &Value) -> Affinity {
    Affinity {
        mode: match text(row, "mode") {
            "off" => AffinityMode::Off,
            "cookie" => AffinityMode::Cookie,
            other => panic!("mode {other}"),
        },
        ttl_s: 60,
        failover: match text(row, "failover") {
            "temporary" => AffinityFailover::Temporary,
            "sticky" => AffinityFailover::Sticky,
            other => panic!("failover {other}"),
        },
    }
}

fn set_cookie_name(s: SetCookie) -> &'static str {
    match s {
        SetCookie::Never => "never",
        SetCookie::Always => "always",
        SetCookie::UnlessServedBy(_) => "unless_served_by",
    }
}

// ---- the checks --------------------------------------------------------

#[test]
fn logarithm() {
    let f = fixture();
    let ln_rows = rows(&f, "ln");
    assert!(ln_rows.len() >= 100);
    for row in ln_rows {
        let (x, expected) = (number(row, "x"), number(row, "ln"));
        assert_eq!(det_math::ln(x).to_bits(), expected.to_bits(), "{row}");
    }
}

#[test]
fn hashes_and_scores() {
    let f = fixture();
    for row in rows(&f, "hashes") {
        let hash = steering::rendezvous_hash(text(row, "key"), text(row, "name"));
        assert_eq!(
            u64::from(hash),
            row["hash"].as_u64().unwrap_or(u64::MAX),
            "{row}"
        );
        for (weight, field) in [(1, "score_w1"), (1000, "score_w1000")] {
            let expected = number(row, field);
            assert_eq!(
                steering::score(weight, hash).to_bits(),
                expected.to_bits(),
                "{row}"
            );
        }
    }
}

#[test]
fn attempt_orders() {
    let f = fixture();
    let cases = rows(&f, "orders");
    let hash_cases = cases.iter().filter(|r| r["policy"] == "hash").count();
    assert!(hash_cases >= 200, "{hash_cases} hash cases");
    for row in cases {
        let (names, weights, healthy) = candidates(row);
        let got = order(
            policy(row),
            &names,
            &weights,
            &healthy,
            maybe_text(row, "key"),
            number(row, "random"),
        );
        assert_eq!(got, indices(row, "order"), "{row}");
    }
}

#[test]
fn hash_keys() {
    let f = fixture();
    for row in rows(&f, "hash_keys") {
        let setting = text(row, "setting").to_string();
        let c = WorkerConfig::from_vars(|k| match k {
            "ORIGINS" => Some(r#"[{"name":"a","url":"https://a.example"}]"#.to_string()),
            "HASH_KEY" => Some(setting.clone()),
            _ => None,
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.site().hash_key.header(), text(row, "header"), "{row}");
        assert_eq!(
            c.site().hash_key.cookie_name(),
            maybe_text(row, "cookie"),
            "{row}"
        );
        assert_eq!(
            c.site().hash_key.key_in(maybe_text(row, "value")),
            maybe_text(row, "key"),
            "{row}"
        );
    }
}

#[test]
fn affinity_cookies() {
    let f = fixture();
    let section = &f["cookies"];
    let c = config(&section["origins"]);
    let tokens: Vec<String> = rows(section, "tokens")
        .iter()
        .map(|t| {
            t.as_str()
                .unwrap_or_else(|| panic!("token {t}"))
                .to_string()
        })
        .collect();
    assert_eq!(affinity::tokens(&c.origins), tokens, "the cookie values");
    for row in rows(section, "cases") {
        let header = maybe_text(row, "cookie");
        let expected = maybe_index(row, "pinned");
        assert_eq!(affinity::pinned_in(&tokens, header), expected, "{row}");
        assert_eq!(
            affinity::pinned_origin(&c.origins, header),
            expected,
            "{row}"
        );
    }
}

#[test]
fn affinity_decisions() {
    let f = fixture();
    for row in rows(&f, "affinity") {
        let plan = affinity::with_affinity(
            &affinity_of(row),
            maybe_index(row, "pinned"),
            row["pinned_healthy"]
                .as_bool()
                .unwrap_or_else(|| panic!("{row}")),
            indices(row, "policy_order"),
        );
        assert_eq!(plan.order, indices(row, "order"), "{row}");
        assert_eq!(
            set_cookie_name(plan.set_cookie),
            text(row, "set_cookie"),
            "{row}"
        );
        let emit: Vec<bool> = (0..plan.order.len())
            .map(|s| plan.set_cookie.emit_for(s))
            .collect();
        let expected: Vec<bool> = rows(row, "emit")
            .iter()
            .map(|b| b.as_bool().unwrap_or_else(|| panic!("{row}")))
            .collect();
        assert_eq!(emit, expected, "{row}");
    }
}

// ---- the generator -----------------------------------------------------

fn dec(x: f64) -> String {
    format!("{x:?}")
}

fn ln_rows() -> Vec<Value> {
    let mut xs = vec![
        0.5,
        1.0,
        2.0,
        0.1,
        0.9,
        10.0,
        1e-300,
        5e-324,
        f64::MAX,
        f64::MIN_POSITIVE,
        std::f64::consts::FRAC_1_SQRT_2,
        0.7071067811865475,
        std::f64::consts::SQRT_2,
        1.4142135623730954,
        0.9999999999999999,
        1.0000000000000002,
        0.5 / 4_294_967_296.0,
        (4_294_967_295.0 + 0.5) / 4_294_967_296.0,
    ];
    let mut rng = SplitMix64(1);
    for _ in 0..60 {
        let h = (rng.next_u64() >> 32) as f64;
        xs.push((h + 0.5) / 4_294_967_296.0);
    }
    for _ in 0..40 {
        // Anywhere in the positive finite doubles.
        let bits = rng.next_u64() % 0x7fef_ffff_ffff_ffff + 1;
        xs.push(f64::from_bits(bits));
    }
    xs.into_iter()
        .map(|x| json!({ "x": dec(x), "ln": dec(det_math::ln(x)) }))
        .collect()
}

const KEYS: [&str; 10] = [
    "",
    "a",
    "203.0.113.7",
    "2001:db8::1",
    "é",
    "日本語",
    "😀",
    "a\u{0}b",
    "clé de session",
    "\u{fffd}",
];

fn hash_rows() -> Vec<Value> {
    let mut out = Vec::new();
    for key in KEYS {
        for name in &NAMES[..3] {
            let hash = steering::rendezvous_hash(key, name);
            out.push(json!({
                "key": key,
                "name": name,
                "hash": hash,
                "score_w1": dec(steering::score(1, hash)),
                "score_w1000": dec(steering::score(1000, hash)),
            }));
        }
    }
    out
}

fn order_row(
    note: &str,
    policy: Policy,
    weights: &[u32],
    healthy: &[bool],
    key: Option<&str>,
    random: f64,
) -> Value {
    let names: Vec<String> = NAMES[..weights.len()]
        .iter()
        .map(|n| n.to_string())
        .collect();
    let random = dec(random);
    let r: f64 = random.parse().unwrap_or_else(|e| panic!("{e}"));
    let got = order(policy, &names, weights, healthy, key, r);
    json!({
        "note": note,
        "policy": policy.as_str(),
        "names": names,
        "weights": weights,
        "healthy": healthy,
        "key": key,
        "random": random,
        "order": got,
    })
}

fn generated_key(k: usize) -> String {
    match k % 5 {
        0 => format!("192.0.2.{}", k % 256),
        1 => format!("2001:db8::{:x}", k * 7919),
        2 => format!("user-{k}"),
        3 => format!("clé-{k}-ø日本"),
        _ => format!(
            "sess_{:016x}",
            (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ),
    }
}

fn order_rows() -> Vec<Value> {
    use Policy::{Failover, Hash, Weighted};
    const T: bool = true;
    const F: bool = false;
    let mut out = vec![
        order_row(
            "failover: priority order",
            Failover,
            &[1, 2, 1],
            &[T, T, T],
            None,
            0.5,
        ),
        order_row(
            "failover: the down one last",
            Failover,
            &[1, 2, 1],
            &[F, T, T],
            None,
            0.5,
        ),
        order_row(
            "failover ignores weights",
            Failover,
            &[0, 2, 1],
            &[T, T, T],
            Some("k"),
            0.9,
        ),
        order_row(
            "failover: all down, priority order",
            Failover,
            &[1, 2, 1],
            &[F, F, F],
            None,
            0.5,
        ),
        order_row(
            "weighted: r 0 picks the first interval",
            Weighted,
            &[1, 2, 1],
            &[T, T, T],
            None,
            0.0,
        ),
        order_row(
            "weighted: x 0.8",
            Weighted,
            &[1, 2, 1],
            &[T, T, T],
            None,
            0.2,
        ),
        order_row(
            "weighted: x 1, an interval edge",
            Weighted,
            &[1, 2, 1],
            &[T, T, T],
            None,
            0.25,
        ),
        order_row("weighted: x 2", Weighted, &[1, 2, 1], &[T, T, T], None, 0.5),
        order_row(
            "weighted: x 3, an interval edge",
            Weighted,
            &[1, 2, 1],
            &[T, T, T],
            None,
            0.75,
        ),
        order_row(
            "weighted: the largest r below 1",
            Weighted,
            &[1, 2, 1],
            &[T, T, T],
            None,
            0.9999999999999999,
        ),
        order_row(
            "weighted: r 1 is clamped below 1",
            Weighted,
            &[1, 2, 1],
            &[T, T, T],
            None,
            1.0,
        ),
        order_row(
            "weighted: negative r is clamped to 0",
            Weighted,
            &[1, 2, 1],
            &[T, T, T],
            None,
            -0.5,
        ),
        order_row(
            "weighted: weight 0 after the weighted, down last",
            Weighted,
            &[0, 3, 1, 2],
            &[T, T, F, T],
            None,
            0.3,
        ),
        order_row(
            "weighted: weight 0 never first",
            Weighted,
            &[0, 1],
            &[T, T],
            None,
            0.0,
        ),
        order_row(
            "weighted: only weight 0 healthy serves",
            Weighted,
            &[0, 5, 0],
            &[T, F, T],
            None,
            0.7,
        ),
        order_row(
            "weighted: all weight 0, priority order",
            Weighted,
            &[0, 0, 0],
            &[T, T, T],
            None,
            0.7,
        ),
        order_row(
            "weighted: all down, priority order",
            Weighted,
            &[1, 2, 1],
            &[F, F, F],
            None,
            0.7,
        ),
        order_row(
            "weighted: large weights",
            Weighted,
            &[1000, 1, 1000],
            &[T, T, T],
            None,
            0.7,
        ),
        order_row(
            "weighted: large weights, the small one",
            Weighted,
            &[1000, 1, 1000],
            &[T, T, T],
            None,
            0.49990,
        ),
        order_row("weighted: one origin", Weighted, &[3], &[T], None, 0.4),
        order_row(
            "hash: no key steers as weighted",
            Hash,
            &[1, 2, 1],
            &[T, T, T],
            None,
            0.8,
        ),
        order_row(
            "hash: an empty key steers as weighted",
            Hash,
            &[1, 2, 1],
            &[T, T, T],
            Some(""),
            0.8,
        ),
        order_row(
            "hash: all down, priority order",
            Hash,
            &[1, 2, 1],
            &[F, F, F],
            Some("203.0.113.7"),
            0.1,
        ),
        order_row(
            "hash: weight 0 never first",
            Hash,
            &[0, 1, 1],
            &[T, T, T],
            Some("203.0.113.7"),
            0.1,
        ),
        order_row(
            "hash: weight 0 used when the rest is down",
            Hash,
            &[0, 1, 1],
            &[T, F, F],
            Some("203.0.113.7"),
            0.1,
        ),
        order_row("hash: one origin", Hash, &[1], &[T], Some("x"), 0.1),
        order_row(
            "hash: large weights",
            Hash,
            &[1000, 1, 999],
            &[T, T, T],
            Some("x"),
            0.1,
        ),
    ];
    for key in KEYS.iter().skip(1) {
        out.push(order_row(
            "hash: an unusual key",
            Hash,
            &[1, 2, 1],
            &[T, T, T],
            Some(key),
            0.5,
        ));
        out.push(order_row(
            "hash: an unusual key, replica down",
            Hash,
            &[1, 2, 1],
            &[T, F, T],
            Some(key),
            0.5,
        ));
    }
    let mut rng = SplitMix64(2);
    for k in 0..200 {
        let key = generated_key(k);
        out.push(order_row(
            "hash: generated key",
            Hash,
            &[1, 2, 1],
            &[T, T, T],
            Some(&key),
            rng.next_f64(),
        ));
    }
    for k in 0..60 {
        let key = generated_key(k);
        out.push(order_row(
            "hash: generated key, primary down",
            Hash,
            &[1, 2, 1],
            &[F, T, T],
            Some(&key),
            rng.next_f64(),
        ));
        out.push(order_row(
            "hash: generated key, 4 origins",
            Hash,
            &[3, 1, 0, 2],
            &[T, T, T, T],
            Some(&key),
            rng.next_f64(),
        ));
    }
    for _ in 0..60 {
        out.push(order_row(
            "weighted: generated",
            Weighted,
            &[1, 2, 1],
            &[T, T, T],
            None,
            rng.next_f64(),
        ));
        out.push(order_row(
            "weighted: generated, 4 origins",
            Weighted,
            &[3, 0, 2, 5],
            &[T, T, F, T],
            None,
            rng.next_f64(),
        ));
    }
    out
}

fn hash_key_rows() -> Vec<Value> {
    let cases: [(&str, Option<&str>); 12] = [
        ("ip", Some("203.0.113.7")),
        ("ip", Some("")),
        ("ip", None),
        ("header:X-User", Some("alice")),
        ("header:x-user", None),
        ("cookie:sid", Some("a=1; sid=xyz; b=2")),
        ("cookie:sid", Some("a=1; SID=xyz")),
        ("cookie:sid", Some("sid=\"quoted\"")),
        ("cookie:sid", Some("sid=; sid=second")),
        ("cookie:sid", Some(" sid = spaced ;x=1")),
        ("cookie:sid", Some("sid=clé日本")),
        ("cookie:sid", None),
    ];
    cases
        .iter()
        .map(|(setting, value)| {
            let setting = setting.to_string();
            let c = WorkerConfig::from_vars(|k| match k {
                "ORIGINS" => Some(r#"[{"name":"a","url":"https://a.example"}]"#.to_string()),
                "HASH_KEY" => Some(setting.clone()),
                _ => None,
            })
            .unwrap_or_else(|e| panic!("{e}"));
            json!({
                "setting": setting,
                "header": c.site().hash_key.header(),
                "cookie": c.site().hash_key.cookie_name(),
                "value": value,
                "key": c.site().hash_key.key_in(*value),
            })
        })
        .collect()
}

fn cookie_section() -> Value {
    let origins = json!([
        { "name": "primary", "url": "https://a.example.com" },
        { "name": "replica", "url": "https://b.example.com:8443" },
        { "name": "backup", "url": "http://127.0.0.1:8081" },
    ]);
    let c = config(&origins);
    let t = affinity::tokens(&c.origins);
    let n = affinity::COOKIE_NAME;
    let (a, b, z) = (&t[0], &t[1], &t[2]);
    let headers: Vec<Option<String>> = vec![
        Some(format!("{n}={b}")),
        Some(format!("{n}={z}")),
        Some(format!("x=1; {n}={a}; y=2")),
        Some(format!("x=1;{n}={b};y=2")),
        Some(format!("  {n} = {b} ;")),
        Some(format!("\t{n}=\"{z}\"")),
        Some(format!("{n}=bogus; {n}={a}")),
        Some(format!("{n}={a}; {n}={b}")),
        Some(format!("{n}=replica")),
        Some(format!("{n}=1")),
        Some(format!("{n}={}", b.to_uppercase())),
        Some(format!("{n}={b}0")),
        Some(format!("{n}=\"{b}")),
        Some(format!("{n}=\"\"")),
        Some(format!("__TF_AFFINITY={b}")),
        Some(format!("x{n}={b}")),
        Some(format!("x={n}={b}")),
        Some(n.to_string()),
        Some(format!("{n}=")),
        Some(format!("{n}=\u{e9}{b}")),
        Some(format!("{n}={b}\n")),
        Some(String::new()),
        Some(";;; ;=;".to_string()),
        None,
    ];
    let cases: Vec<Value> = headers
        .iter()
        .map(|h| json!({ "cookie": h, "pinned": affinity::pinned_in(&t, h.as_deref()) }))
        .collect();
    json!({ "origins": origins, "tokens": t, "cases": cases })
}

fn affinity_rows() -> Vec<Value> {
    let mut out = Vec::new();
    let policy_order = vec![1usize, 0, 2];
    for mode in ["off", "cookie"] {
        for failover in ["temporary", "sticky"] {
            for pinned in [None, Some(0usize), Some(1), Some(2), Some(7)] {
                for pinned_healthy in [true, false] {
                    let mut row = json!({
                        "mode": mode,
                        "failover": failover,
                        "pinned": pinned,
                        "pinned_healthy": pinned_healthy,
                        "policy_order": policy_order,
                    });
                    let plan = affinity::with_affinity(
                        &affinity_of(&row),
                        pinned,
                        pinned_healthy,
                        policy_order.clone(),
                    );
                    let emit: Vec<bool> = (0..3).map(|s| plan.set_cookie.emit_for(s)).collect();
                    row["order"] = json!(plan.order);
                    row["set_cookie"] = json!(set_cookie_name(plan.set_cookie));
                    row["emit"] = json!(emit);
                    out.push(row);
                }
            }
        }
    }
    out
}

/// One top-level key per line, one case per line.
fn render(v: &Value, indent: usize, out: &mut String) {
    let pad = "  ".repeat(indent + 1);
    let close = "  ".repeat(indent);
    let nested = |x: &Value| x.is_object() || x.is_array();
    match v {
        Value::Object(map) if map.values().any(nested) => {
            out.push_str("{\n");
            for (i, (k, x)) in map.iter().enumerate() {
                out.push_str(&format!("{pad}{}: ", Value::from(k.as_str())));
                render(x, indent + 1, out);
                out.push_str(if i + 1 < map.len() { ",\n" } else { "\n" });
            }
            out.push_str(&format!("{close}}}"));
        }
        Value::Array(items) if items.iter().any(nested) => {
            out.push_str("[\n");
            for (i, x) in items.iter().enumerate() {
                out.push_str(&format!("{pad}{x}"));
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&format!("{close}]"));
        }
        _ => out.push_str(&v.to_string()),
    }
}

#[test]
#[ignore = "writes tests/fixtures/steering.json; run on purpose"]
fn write_fixture() {
    let fixture = json!({
        "about": "Steering cases for crates/failover-core/tests/steering_fixture.rs and tests/steering-fixture.test.mjs; generated by the former (write_fixture). Decimal strings are doubles; indices are origin positions in ORIGINS order.",
        "ln": ln_rows(),
        "hashes": hash_rows(),
        "orders": order_rows(),
        "hash_keys": hash_key_rows(),
        "cookies": cookie_section(),
        "affinity": affinity_rows(),
    });
    let mut out = String::new();
    render(&fixture, 0, &mut out);
    out.push('\n');
    std::fs::write(PATH, out).unwrap_or_else(|e| panic!("{PATH}: {e}"));
}
