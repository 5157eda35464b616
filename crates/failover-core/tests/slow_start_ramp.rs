//! Slow start end to end in the core, on a fake clock: an origin fails,
//! its probes bring it back, and 10,000 requests are routed at 0, 15, 30
//! and 60 s into a 60 s ramp (`SLOW_START_MIN_PCT` 10), for each steering
//! policy, through the health map's up time, `SlowStart::share` and
//! `route_ramped`, as the Worker's full path does. The randomness is a
//! seeded splitmix64 stream (the Worker's is `Math.random`): every figure
//! is the same on every run. The measured shares are printed:
//! `cargo test -p failover-core --test slow_start_ramp -- --nocapture`.

// Test helpers: a config that does not parse is a failed test.
#![allow(clippy::panic)]

use std::time::Duration;

use failover_core::edge::affinity;
use failover_core::edge::classify::Failure;
use failover_core::edge::config::WorkerConfig;
use failover_core::edge::health::HealthMap;
use failover_core::edge::overrides::Standing;
use failover_core::edge::route::{route, route_ramped};
use failover_core::splitmix::SplitMix64;

const N: usize = 10_000;
/// Seconds into the ramp, and the share the target expects there.
const TARGETS: [(u64, f64); 4] = [(0, 0.10), (15, 0.25), (30, 0.50), (60, 1.00)];
/// ± 5 percentage points.
const TOLERANCE: f64 = 0.05;

const TWO_ORIGINS: &str = r#"[{"name":"primary","url":"https://a.example"},
    {"name":"replica","url":"https://b.example"}]"#;
const THREE_ORIGINS: &str = r#"[{"name":"primary","url":"https://a.example"},
    {"name":"replica","url":"https://b.example"},
    {"name":"backup","url":"https://c.example"}]"#;

fn config(vars: &[(&str, &str)]) -> WorkerConfig {
    config_of(TWO_ORIGINS, vars)
}

fn config_of(origins: &str, vars: &[(&str, &str)]) -> WorkerConfig {
    WorkerConfig::from_vars(|k| {
        if k == "ORIGINS" {
            return Some(origins.to_string());
        }
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The primary (origin 0) fails at 1 s and its two good probes, 15 s
/// apart, bring it back up at 31 s: the ramp's start.
fn recovered_primary(c: &WorkerConfig) -> (HealthMap, u64) {
    let mut health = HealthMap::new(
        c.origins.len(),
        c.health_rise,
        1,
        Duration::from_millis(c.health_interval_ms),
    );
    health.record_failure(0, Failure::Timeout, 1_000);
    health.record_probe(0, None, 16_000);
    health.record_probe(0, None, 31_000);
    let up_since = health
        .up_since_ms(0)
        .unwrap_or_else(|| panic!("not back up"));
    assert_eq!(up_since, 31_000);
    (health, up_since)
}

/// Of N requests at `now`, the share the primary gets of those it would
/// have had without the ramp. `key(n)` is request n's hash key, if any.
fn measured(
    c: &WorkerConfig,
    health: &HealthMap,
    now: u64,
    key: impl Fn(usize) -> Option<String>,
    cookie: Option<&str>,
) -> f64 {
    measured_with(c, health, &[], now, key, cookie)
}

/// [`measured`] with the origins' override standings.
fn measured_with(
    c: &WorkerConfig,
    health: &HealthMap,
    standing: &[Standing],
    now: u64,
    key: impl Fn(usize) -> Option<String>,
    cookie: Option<&str>,
) -> f64 {
    let share = |i: usize| c.site().slow_start.share(health.up_since_ms(i), now);
    let mut rng = SplitMix64(0x5eed);
    let (mut would, mut got) = (0usize, 0usize);
    for n in 0..N {
        let random = rng.next_f64();
        let key = key(n);
        let plain = route(
            c.site(),
            |i| health.is_up(i),
            standing,
            key.as_deref(),
            cookie,
            random,
        );
        let ramped = route_ramped(
            c.site(),
            |i| health.is_up(i),
            standing,
            share,
            key.as_deref(),
            cookie,
            random,
        );
        // Held back or not, a request was meant for the origin that serves
        // it (or for one that is down: then it fails over, x-failover),
        // and every origin stays in its order.
        assert!(
            ramped.intended == ramped.order[0] || !health.is_up(ramped.intended),
            "meant for {}, served by {}",
            ramped.intended,
            ramped.order[0]
        );
        assert_eq!(ramped.order.len(), c.origins.len());
        if plain.order[0] == 0 {
            would += 1;
            got += usize::from(ramped.order[0] == 0);
        } else {
            assert_ne!(ramped.order[0], 0, "the ramp never adds requests");
        }
    }
    got as f64 / would as f64
}

fn check(policy: &str, shares: &[f64]) {
    let cells: Vec<String> = TARGETS
        .iter()
        .zip(shares)
        .map(|((s, _), m)| format!("{s:>2} s {:5.1} %", m * 100.0))
        .collect();
    println!("slow start, {policy:<28} {}", cells.join("   "));
    for ((at, target), m) in TARGETS.iter().zip(shares) {
        assert!(
            (m - target).abs() <= TOLERANCE,
            "{policy} at {at} s: {m} against {target}"
        );
    }
}

#[test]
fn each_policy_ramps_the_recovered_origin_10_25_50_100() {
    let policies = [
        ("failover", "STEERING=failover"),
        ("weighted", "STEERING=weighted"),
        ("hash", "STEERING=hash"),
    ];
    for (steering, label) in policies {
        let c = config(&[
            ("STEERING", steering),
            ("HASH_KEY", "header:x-user"),
            ("SLOW_START_S", "60"),
            ("SLOW_START_MIN_PCT", "10"),
        ]);
        let (health, t0) = recovered_primary(&c);
        let keyed = |n: usize| (steering == "hash").then(|| format!("user-{n}"));
        let shares: Vec<f64> = TARGETS
            .iter()
            .map(|(s, _)| measured(&c, &health, t0 + s * 1_000, keyed, None))
            .collect();
        check(&format!("{label}, unpinned"), &shares);
    }
}

/// With a third origin, and with either of the other two down while the
/// primary ramps: a down origin is neither held back to nor counted in
/// the tier, so the primary still gets 10 / 25 / 50 / 100 % of the
/// requests it would have had (an earlier note suspected `weighted` of
/// skipping part of the ramp here; this pins that it does not).
#[test]
fn the_ramp_holds_with_another_origin_down() {
    for steering in ["failover", "weighted", "hash"] {
        for down in [None, Some(1), Some(2)] {
            let c = config_of(
                THREE_ORIGINS,
                &[
                    ("STEERING", steering),
                    ("HASH_KEY", "header:x-user"),
                    ("SLOW_START_S", "60"),
                    ("SLOW_START_MIN_PCT", "10"),
                ],
            );
            let (mut health, t0) = recovered_primary(&c);
            if let Some(d) = down {
                health.record_failure(d, Failure::Timeout, t0);
                assert!(!health.is_up(d));
            }
            let keyed = |n: usize| (steering == "hash").then(|| format!("user-{n}"));
            let shares: Vec<f64> = TARGETS
                .iter()
                .map(|(s, _)| measured(&c, &health, t0 + s * 1_000, keyed, None))
                .collect();
            let label = match down {
                Some(d) => format!("STEERING={steering}, origin {d} down"),
                None => format!("STEERING={steering}, 3 up"),
            };
            check(&label, &shares);
        }
    }
}

#[test]
fn hash_keys_moved_back_stay_moved_as_the_share_grows() {
    let c = config(&[
        ("STEERING", "hash"),
        ("HASH_KEY", "header:x-user"),
        ("SLOW_START_S", "60"),
    ]);
    let (health, t0) = recovered_primary(&c);
    let first = |key: &str, now: u64| {
        let share = |i: usize| c.site().slow_start.share(health.up_since_ms(i), now);
        route_ramped(
            c.site(),
            |i| health.is_up(i),
            &[],
            share,
            Some(key),
            None,
            0.5,
        )
        .order[0]
    };
    for k in 0..2_000 {
        let key = format!("user-{k}");
        let mut back = false;
        for s in (0..=60).step_by(5) {
            let on_primary = first(&key, t0 + s * 1_000) == 0;
            assert!(!back || on_primary, "{key} left the primary again at {s} s");
            back |= on_primary;
        }
    }
}

#[test]
fn pinned_requests_are_not_ramped() {
    let c = config(&[
        ("AFFINITY", "cookie"),
        ("SLOW_START_S", "60"),
        ("SLOW_START_MIN_PCT", "10"),
    ]);
    let (health, t0) = recovered_primary(&c);
    let pin = format!("__tf_affinity={}", affinity::cookie_value(&c.origins, 0));
    let shares: Vec<f64> = TARGETS
        .iter()
        .map(|(s, _)| measured(&c, &health, t0 + s * 1_000, |_| None, Some(&pin)))
        .collect();
    println!("slow start, pinned to the primary            {shares:?}");
    assert!(shares.iter().all(|&s| s == 1.0), "{shares:?}");
}

#[test]
fn a_forced_up_primary_is_not_ramped() {
    let c = config(&[("SLOW_START_S", "60"), ("SLOW_START_MIN_PCT", "10")]);
    let (health, t0) = recovered_primary(&c);
    let forced = [Standing::ForcedUp, Standing::Auto];
    let shares: Vec<f64> = TARGETS
        .iter()
        .map(|(s, _)| measured_with(&c, &health, &forced, t0 + s * 1_000, |_| None, None))
        .collect();
    println!("slow start, primary forced up                {shares:?}");
    assert!(shares.iter().all(|&s| s == 1.0), "{shares:?}");
}

#[test]
fn a_failure_during_the_ramp_marks_it_down_and_the_next_ramp_starts_over() {
    let c = config(&[("SLOW_START_S", "60")]);
    let (mut health, t0) = recovered_primary(&c);
    let flip = health.record_failure(0, Failure::Status(530), t0 + 20_000);
    assert!(flip.is_some(), "down at once, ramp or not");
    assert!(!health.is_up(0));
    let r = route_ramped(c.site(), |i| health.is_up(i), &[], |_| 0.0, None, None, 0.0);
    assert_eq!(r.order, vec![1, 0]);
    health.record_probe(0, None, t0 + 35_000);
    health.record_probe(0, None, t0 + 50_000);
    assert_eq!(health.up_since_ms(0), Some(t0 + 50_000));
    assert_eq!(
        c.site()
            .slow_start
            .share(health.up_since_ms(0), t0 + 50_000),
        0.10
    );
}

#[test]
fn no_other_origin_up_no_ramp() {
    let c = config(&[("SLOW_START_S", "60")]);
    let (mut health, t0) = recovered_primary(&c);
    health.record_failure(1, Failure::Refused, t0 + 1_000);
    let share = |i: usize| c.site().slow_start.share(health.up_since_ms(i), t0 + 1_000);
    let mut rng = SplitMix64(1);
    for _ in 0..1_000 {
        let r = route_ramped(
            c.site(),
            |i| health.is_up(i),
            &[],
            share,
            None,
            None,
            rng.next_f64(),
        );
        assert_eq!(
            (r.order[0], r.intended),
            (0, 0),
            "nobody to hold it back for"
        );
    }
}
