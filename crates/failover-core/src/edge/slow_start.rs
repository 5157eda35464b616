//! Slow start (`SLOW_START_S`, `SLOW_START_MIN_PCT`): an origin that comes
//! back up gets a growing share of the requests it would have had, so a
//! cold app (empty caches, a JIT to warm, connection pools to fill) is not
//! handed all of its traffic at once.
//!
//! The model, Envoy's `slow_start_config` with aggression 1: an origin up
//! since `t0` gets, at `t`, the share `max(min, (t − t0) / window)` of the
//! requests the steering policy would send it, and all of them from
//! `t0 + window` on (window 60 s, min 10 %: 10 % at 0 s and until 6 s,
//! 25 % at 15 s, 50 % at 30 s, 100 % at 60 s). `t0` is when the up
//! verdict began (`HealthMap::up_since_ms`): the isolate's own flip, or
//! the colo's or the global checker's, which carry it, so isolates that
//! learn of the recovery from each other ramp together.
//!
//! How a request is held back ([`held_back`]): the policy's order is walked
//! from the front; a ramping origin is kept with its share as probability
//! (one draw per origin, [`draw`]) and otherwise held back, until an origin
//! that is not held back is found, which then goes first. So with
//! `failover` a request goes to the recovered higher-priority origin with
//! that probability and otherwise stays where it is served now; with
//! `weighted` an origin's share of first picks is its weight's share times
//! its ramp; with `hash` each key is held back or not by a hash of its own,
//! so the keys that have moved back stay moved as the share grows. A
//! held-back origin stays in the order, right after the one that serves:
//! a failure there still tries it. Nothing is held back when no other
//! origin could take the request (then the ramp has nothing to protect the
//! origin with), nor for a request an affinity cookie pins (route.rs), and
//! a failure during the ramp marks the origin down as any other.
//!
//! The fast path never decides this: the isolate grants it no lease while a
//! ramp is in effect ([`in_effect`]), so only the full path routes during a
//! ramp, and the common case (no ramp) costs the fast path nothing.

use std::time::Duration;

use crate::edge::fnv::{fmix32, fmix64, fnv1a32, FNV32_OFFSET};
use crate::edge::steering::Policy;
use crate::edge::time::millis;

/// `SLOW_START_S` unset: off.
pub const DEFAULT_SLOW_START_S: u32 = 0;
/// `SLOW_START_MIN_PCT` unset: Envoy's default `min_weight_percent`.
pub const DEFAULT_SLOW_START_MIN_PCT: u32 = 10;
/// The longest window: a ramp longer than an hour is an origin that should
/// not have been called up.
pub const MAX_SLOW_START_S: u32 = 3_600;

/// The slow-start settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlowStart {
    /// `SLOW_START_S`: how long the ramp lasts; zero is off.
    pub window: Duration,
    /// `SLOW_START_MIN_PCT`: the share at the start of the ramp, 0 to 100.
    pub min_pct: u32,
}

impl Default for SlowStart {
    fn default() -> SlowStart {
        SlowStart {
            window: Duration::from_secs(u64::from(DEFAULT_SLOW_START_S)),
            min_pct: DEFAULT_SLOW_START_MIN_PCT,
        }
    }
}

impl SlowStart {
    /// Whether any origin can ever be held back.
    pub fn is_on(&self) -> bool {
        !self.window.is_zero() && self.min_pct < 100
    }

    /// The share, in [0, 1], of the requests it would have had that an
    /// origin up since `up_since_ms` gets at `now_ms`; 1 when it is not
    /// ramping (slow start off, the window over, or no known start).
    pub fn share(&self, up_since_ms: Option<u64>, now_ms: u64) -> f64 {
        let window_ms = millis(self.window);
        let Some(since) = up_since_ms.filter(|_| self.is_on()) else {
            return 1.0;
        };
        // A start in the future (a publisher's clock ahead of ours) is the
        // start of the ramp, not a reason to skip it.
        let elapsed = now_ms.saturating_sub(since);
        if elapsed >= window_ms {
            return 1.0;
        }
        let linear = elapsed as f64 / window_ms as f64;
        linear.max(f64::from(self.min_pct) / 100.0).min(1.0)
    }

    /// When the ramp of an origin up since `up_since_ms` ends: from then on
    /// its share is 1.
    pub fn ends_ms(&self, up_since_ms: u64) -> u64 {
        up_since_ms.saturating_add(millis(self.window))
    }
}

/// The uniform number in [0, 1) a request draws for `origin` (its index
/// and name): for `hash` with a key, a hash of the key and the name (so a
/// key's fate is its own, and is the same on every request); otherwise a
/// hash of the request's one random number and the index, independent of
/// the number itself (which the `weighted` order uses too), so one random
/// number per request is all the route needs, and the full path replays a
/// route exactly.
pub fn draw(policy: Policy, key: Option<&str>, random: f64, origin: usize, name: &str) -> f64 {
    match key.filter(|k| policy == Policy::Hash && !k.is_empty()) {
        Some(key) => {
            // The rendezvous hash separates key and name with 0x00; 0x01
            // here makes this an independent stream.
            let h = fmix32(fnv1a32(
                fnv1a32(fnv1a32(FNV32_OFFSET, key.as_bytes()), &[1]),
                name.as_bytes(),
            ));
            f64::from(h) / 4_294_967_296.0
        }
        None => {
            let index = u64::try_from(origin).unwrap_or(u64::MAX);
            let h = fmix64(random.to_bits() ^ index.wrapping_add(1).wrapping_mul(GOLDEN_64));
            (h >> 11) as f64 / TWO_53
        }
    }
}

/// 2⁶⁴ / φ: spreads consecutive indices over the 64 bits before mixing.
const GOLDEN_64: u64 = 0x9e37_79b9_7f4a_7c15;
/// 2⁵³: a 53-bit integer over this is a double in [0, 1).
const TWO_53: f64 = 9_007_199_254_740_992.0;

/// The origins a request holds back, walking the policy's `order` from the
/// front: `may_serve(o)` says whether `o` could take the request at all
/// (up, and of the tier the policy picks from), `share(o)` its ramp share,
/// `draw(o)` the request's draw for it. A ramping origin is held back when
/// its draw is at or above its share; the walk stops at the first origin
/// that may serve and is not held back. Empty when nothing is held back,
/// or when no origin that may serve is left (then none is).
pub fn held_back(
    order: &[usize],
    may_serve: impl Fn(usize) -> bool,
    share: impl Fn(usize) -> f64,
    draw: impl Fn(usize) -> f64,
) -> Vec<usize> {
    let mut held = Vec::new();
    for &o in order {
        if !may_serve(o) {
            continue;
        }
        let s = share(o);
        if s >= 1.0 || draw(o) < s {
            return held;
        }
        held.push(o);
    }
    Vec::new()
}

/// Whether a ramp can change any request's route, so the isolate must not
/// lease the fast path its decision (`Isolate::lease`). `tier` holds the
/// ramp shares of the origins the policy picks from that are up, in
/// priority order. With fewer than two there is nothing to hold back to;
/// under `failover` only the first one's ramp matters, under the others
/// any one's.
pub fn in_effect(policy: Policy, tier: &[f64]) -> bool {
    if tier.len() < 2 {
        return false;
    }
    match policy {
        Policy::Failover => tier[0] < 1.0,
        Policy::Weighted | Policy::Hash => tier.iter().any(|&s| s < 1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(window_s: u64, min_pct: u32) -> SlowStart {
        SlowStart {
            window: Duration::from_secs(window_s),
            min_pct,
        }
    }

    #[test]
    fn the_share_grows_linearly_from_the_minimum() {
        let r = ramp(60, 10);
        let t0 = 1_000_000;
        // (ms after the up verdict, share)
        for (after, expected) in [
            (0, 0.10),
            (3_000, 0.10),
            (6_000, 0.10),
            (9_000, 0.15),
            (15_000, 0.25),
            (30_000, 0.50),
            (45_000, 0.75),
            (59_999, 59_999.0 / 60_000.0),
            (60_000, 1.0),
            (3_600_000, 1.0),
        ] {
            let share = r.share(Some(t0), t0 + after);
            assert!((share - expected).abs() < 1e-12, "{after}: {share}");
        }
        assert_eq!(
            r.share(Some(t0), t0 - 5_000),
            0.10,
            "a start ahead of our clock"
        );
        assert_eq!(r.share(None, t0), 1.0, "no known start: no ramp");
        assert_eq!(r.ends_ms(t0), t0 + 60_000);
        assert_eq!(ramp(0, 10).share(Some(t0), t0), 1.0, "off");
        assert_eq!(ramp(60, 100).share(Some(t0), t0), 1.0, "a minimum of all");
        assert_eq!(ramp(60, 0).share(Some(t0), t0), 0.0);
        assert!(!ramp(0, 10).is_on() && !ramp(60, 100).is_on() && ramp(1, 0).is_on());
        assert!(!SlowStart::default().is_on());
    }

    #[test]
    fn a_walk_holds_back_ramping_origins_until_one_may_serve() {
        let shares = [0.25, 1.0, 0.5, 1.0];
        let share = |o: usize| shares[o];
        let up = |o: usize| o != 3;
        // (order, draws by origin, held back)
        let table: &[(&[usize], [f64; 4], &[usize])] = &[
            (&[0, 1, 2, 3], [0.9, 0.0, 0.0, 0.0], &[0]),
            (&[0, 1, 2, 3], [0.1, 0.0, 0.0, 0.0], &[]),
            (&[0, 1, 2, 3], [0.25, 0.0, 0.0, 0.0], &[0]),
            (&[2, 0, 1, 3], [0.9, 0.0, 0.7, 0.0], &[2, 0]),
            (&[2, 0, 1, 3], [0.1, 0.0, 0.7, 0.0], &[2]),
            (&[1, 0, 2, 3], [0.9, 0.0, 0.9, 0.0], &[]),
            // Only ramping origins may serve, and every one is held back:
            // none is.
            (&[3, 0, 2], [0.9, 0.0, 0.9, 0.0], &[]),
        ];
        for (order, draws, expected) in table {
            let held = held_back(order, up, share, |o| draws[o]);
            assert_eq!(held, *expected, "{order:?} {draws:?}");
        }
    }

    #[test]
    fn draws_are_uniform_and_a_keys_draw_is_its_own() {
        let n = 20_000;
        let mut below = [0usize; 4];
        for k in 0..n {
            let random = f64::from(k) / f64::from(n);
            let u = draw(Policy::Weighted, None, random, 0, "primary");
            assert!((0.0..1.0).contains(&u));
            below[((u * 4.0) as usize).min(3)] += 1;
        }
        for count in below {
            assert!((4_500..=5_500).contains(&count), "{below:?}");
        }
        // A key draws the same every time, whatever the random number,
        // and keys spread.
        let a = draw(Policy::Hash, Some("203.0.113.7"), 0.1, 0, "primary");
        assert_eq!(
            a,
            draw(Policy::Hash, Some("203.0.113.7"), 0.9, 0, "primary")
        );
        let spread = (0..1_000)
            .filter(|k| draw(Policy::Hash, Some(&format!("key-{k}")), 0.5, 0, "primary") < 0.5)
            .count();
        assert!((430..=570).contains(&spread), "{spread}");
        // Without a key, or under another policy, the random number decides.
        assert_ne!(
            draw(Policy::Hash, None, 0.1, 0, "primary"),
            draw(Policy::Hash, None, 0.9, 0, "primary")
        );
        assert_eq!(
            draw(Policy::Failover, Some("k"), 0.3, 1, "x"),
            draw(Policy::Failover, None, 0.3, 1, "y")
        );
    }

    #[test]
    fn a_ramp_is_in_effect_only_where_it_can_move_a_request() {
        let table: &[(Policy, &[f64], bool)] = &[
            (Policy::Failover, &[0.5, 1.0], true),
            (Policy::Failover, &[1.0, 0.5], false),
            (Policy::Failover, &[0.5], false),
            (Policy::Failover, &[], false),
            (Policy::Weighted, &[1.0, 0.5], true),
            (Policy::Hash, &[1.0, 1.0, 0.2], true),
            (Policy::Hash, &[1.0, 1.0], false),
            (Policy::Weighted, &[0.3], false),
        ];
        for (policy, tier, expected) in table {
            assert_eq!(in_effect(*policy, tier), *expected, "{policy:?} {tier:?}");
        }
    }
}
