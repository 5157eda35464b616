//! Steering (`STEERING`): which origin a request tries first, and the order
//! of the rest. Pure and without a randomness source of its own: the caller
//! hands over the health map's verdicts, the request's hash key and one
//! uniform random number. `src/js/steer.mjs` is this file's twin for the fast
//! path; `tests/fixtures/steering.json` holds cases both must answer alike.
//!
//! Every order is three tiers, each in the policy's own order:
//! 1. healthy origins the policy may pick (for `weighted` and `hash`, weight
//!    above 0; for `failover`, every healthy one: weights are not its knob);
//! 2. healthy origins of weight 0, in priority order: used only when every
//!    origin of tier 1 failed or is down;
//! 3. down origins, in priority order, as `HealthMap::attempt_order` does, so
//!    that with everything down the request still tries every origin.
//!
//! Within tier 1:
//! - `failover`: priority order (the `ORIGINS` order), which is today's.
//! - `weighted`: a weighted random order without replacement drawn from the
//!   one random number r: x = r·total picks the origin whose cumulative
//!   weight interval holds x, and (x − interval start)/weight, which is again
//!   uniform in [0, 1) and independent of that pick, draws the next one from
//!   the origins left. So the second origin tried is also weight-proportional
//!   among the rest.
//! - `hash`: weighted rendezvous hashing. Each origin scores
//!   `weight / -ln(u)`, u = (h + ½)/2³² in (0, 1), h = [`rendezvous_hash`] of
//!   the key and the origin's name; highest score first, ties to the lower
//!   index. An origin going down removes only its own score, so only the keys
//!   it held move, and they come back when it does. -ln(u) is an
//!   exponential variable, which makes the share of keys proportional to
//!   weight. The logarithm is [`det_math::ln`], so JS computes the same bits.
//!
//! A request without a key (`None` or empty) is steered as `weighted`.

use crate::edge::det_math;
use crate::edge::fnv::{fmix32, fnv1a32, FNV32_OFFSET};

/// The `STEERING` setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// First healthy origin in priority order (the default, today's rule).
    #[default]
    Failover,
    /// Random among healthy origins, in proportion to weight.
    Weighted,
    /// The same key always lands on the same healthy origin.
    Hash,
}

impl Policy {
    /// The setting's spelling, also what `steer.mjs` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Failover => "failover",
            Policy::Weighted => "weighted",
            Policy::Hash => "hash",
        }
    }

    /// [`Policy::as_str`] read back; None for any other word.
    pub fn parse(text: &str) -> Option<Policy> {
        match text {
            "failover" => Some(Policy::Failover),
            "weighted" => Some(Policy::Weighted),
            "hash" => Some(Policy::Hash),
            _ => None,
        }
    }
}

/// The `HASH_KEY` setting: what part of a request is its steering key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HashKey {
    /// `ip`: the `CF-Connecting-IP` header.
    #[default]
    ClientIp,
    /// `header:<name>`; the name is kept lower-case.
    Header(String),
    /// `cookie:<name>`; cookie names are case-sensitive.
    Cookie(String),
}

/// The header the client's address arrives in.
pub const CLIENT_IP_HEADER: &str = "cf-connecting-ip";

impl HashKey {
    /// The request header to read (lower-case).
    pub fn header(&self) -> &str {
        match self {
            HashKey::ClientIp => CLIENT_IP_HEADER,
            HashKey::Header(name) => name,
            HashKey::Cookie(_) => "cookie",
        }
    }

    /// The cookie to read out of [`HashKey::header`], for `HashKey::Cookie`
    /// (what `hashKeyIn` in steer.mjs takes as `cookieName`).
    pub fn cookie_name(&self) -> Option<&str> {
        match self {
            HashKey::Cookie(name) => Some(name),
            HashKey::ClientIp | HashKey::Header(_) => None,
        }
    }

    /// The key in the value of [`HashKey::header`], None when the request
    /// has none (then it is steered as `weighted`).
    pub fn key_in<'a>(&self, header_value: Option<&'a str>) -> Option<&'a str> {
        let value = header_value?;
        let key = match self {
            HashKey::ClientIp | HashKey::Header(_) => Some(value),
            HashKey::Cookie(name) => crate::edge::cookies::cookie(value, name),
        };
        key.filter(|k| !k.is_empty())
    }

    /// The setting's spelling, for the status endpoint.
    pub fn describe(&self) -> String {
        match self {
            HashKey::ClientIp => "ip".to_string(),
            HashKey::Header(name) => format!("header:{name}"),
            HashKey::Cookie(name) => format!("cookie:{name}"),
        }
    }
}

/// One origin as steering sees it, in priority order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate<'a> {
    /// What `hash` scores, so a key follows the name, not the position.
    pub name: &'a str,
    /// Its share of `weighted` and `hash` traffic; 0 is a backup.
    pub weight: u32,
    /// The health map's verdict.
    pub healthy: bool,
}

/// 2³², to turn a 32-bit hash into a fraction.
const TWO_32: f64 = 4_294_967_296.0;
/// The largest double below 1.
const BELOW_ONE: f64 = 1.0 - f64::EPSILON / 2.0;

/// fmix32(FNV-1a-32(UTF-8(key) ‖ 0x00 ‖ UTF-8(name))). Origin names are NUL
/// free, so the pair is read back unambiguously from the bytes. The key's
/// part of the FNV state is shared by every origin (see `order_by_hash`).
pub fn rendezvous_hash(key: &str, name: &str) -> u32 {
    name_hash(fnv1a32(FNV32_OFFSET, key.as_bytes()), name)
}

fn name_hash(key_state: u32, name: &str) -> u32 {
    fmix32(fnv1a32(fnv1a32(key_state, &[0]), name.as_bytes()))
}

/// An origin's rendezvous score for a key's hash: weight / -ln(u).
pub fn score(weight: u32, hash: u32) -> f64 {
    let u = (f64::from(hash) + 0.5) / TWO_32;
    f64::from(weight) / -det_math::ln(u)
}

/// The attempt order: indices into `origins`, each once, the policy's pick
/// first. `key` matters to `Hash` only; `random` (uniform in [0, 1), as
/// `Math.random()` gives) to `Weighted`, and to `Hash` for a request
/// without a key. Out-of-range or NaN randoms are clamped into [0, 1).
pub fn attempt_order(
    policy: Policy,
    origins: &[Candidate<'_>],
    key: Option<&str>,
    random: f64,
) -> Vec<usize> {
    let picked = |i: &usize| {
        let o = &origins[*i];
        o.healthy && (policy == Policy::Failover || o.weight > 0)
    };
    let mut order: Vec<usize> = (0..origins.len()).filter(picked).collect();
    match (policy, key.filter(|k| !k.is_empty())) {
        (Policy::Failover, _) => {}
        (Policy::Hash, Some(key)) => order_by_hash(&mut order, origins, key),
        (Policy::Weighted | Policy::Hash, _) => order_by_weight(&mut order, origins, random),
    }
    let spare = (0..origins.len()).filter(|&i| origins[i].healthy && !picked(&i));
    let down = (0..origins.len()).filter(|&i| !origins[i].healthy);
    order.extend(spare.chain(down));
    order
}

fn order_by_hash(order: &mut [usize], origins: &[Candidate<'_>], key: &str) {
    let key_state = fnv1a32(FNV32_OFFSET, key.as_bytes());
    let mut scored: Vec<(f64, usize)> = order
        .iter()
        .map(|&i| {
            let o = &origins[i];
            (score(o.weight, name_hash(key_state, o.name)), i)
        })
        .collect();
    // Scores are finite and positive (weight > 0, u < 1), so this is a
    // total order; equal scores go to the lower index. By insertion, not
    // `sort_by`: a handful of origins, and the slice sorts' code was 2.3 KB
    // of the request path's gzipped Wasm (issue #20), for this one call.
    for sorted in 1..scored.len() {
        let mut j = sorted;
        while j > 0 && ranks_before(scored[j], scored[j - 1]) {
            scored.swap(j, j - 1);
            j -= 1;
        }
    }
    for (slot, (_, i)) in order.iter_mut().zip(scored) {
        *slot = i;
    }
}

/// Whether `a` goes before `b` in `order_by_hash`: the higher score, then
/// the lower index.
fn ranks_before(a: (f64, usize), b: (f64, usize)) -> bool {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).is_lt()
}

fn order_by_weight(order: &mut [usize], origins: &[Candidate<'_>], random: f64) {
    let mut r = if random >= 0.0 {
        random.min(BELOW_ONE)
    } else {
        0.0
    };
    let mut total: f64 = order.iter().map(|&i| f64::from(origins[i].weight)).sum();
    // order[..start] is drawn; order[start..] is left, in priority order.
    for start in 0..order.len() {
        let x = r * total;
        // The first origin whose cumulative interval holds x; the last one
        // takes whatever is left, should rounding put x at or past the end.
        let mut pick = start;
        let mut before = 0.0;
        while pick + 1 < order.len() {
            let w = f64::from(origins[order[pick]].weight);
            if x < before + w {
                break;
            }
            before += w;
            pick += 1;
        }
        let w = f64::from(origins[order[pick]].weight);
        r = ((x - before) / w).clamp(0.0, BELOW_ONE);
        total -= w;
        order[start..=pick].rotate_right(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::splitmix::SplitMix64;

    const NAMES: [&str; 4] = ["primary", "replica", "backup", "spare"];

    fn pool(weights: &[u32], healthy: &[bool]) -> Vec<Candidate<'static>> {
        weights
            .iter()
            .zip(healthy)
            .zip(NAMES)
            .map(|((&weight, &healthy), name)| Candidate {
                name,
                weight,
                healthy,
            })
            .collect()
    }

    /// |observed − n·p| within 5 binomial standard deviations.
    fn within_binomial(observed: usize, n: usize, p: f64) -> bool {
        let mean = n as f64 * p;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        (observed as f64 - mean).abs() <= 5.0 * sd + 1.0
    }

    #[test]
    fn failover_is_todays_order() {
        let table: &[(&[bool], &[usize])] = &[
            (&[true, true, true], &[0, 1, 2]),
            (&[false, true, true], &[1, 2, 0]),
            (&[true, false, true], &[0, 2, 1]),
            (&[false, false, false], &[0, 1, 2]),
        ];
        for (healthy, expected) in table {
            let origins = pool(&[0, 5, 1], healthy);
            for key in [None, Some("k")] {
                assert_eq!(
                    attempt_order(Policy::Failover, &origins, key, 0.9),
                    *expected,
                    "{healthy:?}"
                );
            }
        }
    }

    /// `failover` is exactly `HealthMap::attempt_order`, today's rule.
    #[test]
    fn failover_matches_the_health_map() {
        use crate::edge::classify::Failure;
        use crate::edge::health::HealthMap;
        for down in 0u8..16 {
            let mut map = HealthMap::new(4, 2, 1, std::time::Duration::from_secs(1));
            for i in 0..4 {
                if down & (1 << i) != 0 {
                    map.record_failure(i, Failure::Timeout, 0);
                }
            }
            let origins: Vec<Candidate<'_>> = NAMES
                .iter()
                .enumerate()
                .map(|(i, &name)| Candidate {
                    name,
                    weight: 1,
                    healthy: map.is_up(i),
                })
                .collect();
            assert_eq!(
                attempt_order(Policy::Failover, &origins, Some("k"), 0.5),
                map.attempt_order(),
                "down mask {down:04b}"
            );
        }
    }

    #[test]
    fn weighted_picks_by_cumulative_weight() {
        let origins = pool(&[1, 2, 1], &[true, true, true]);
        // x = r·4 falls in [0,1) primary, [1,3) replica or [3,4) backup;
        // r' = (x − start)/weight then draws from the rest the same way.
        let table: &[(f64, &[usize])] = &[
            (0.0, &[0, 1, 2]),
            (0.2, &[0, 2, 1]),   // x 0.8; r' 0.8 → x' 2.4 of [replica 2, backup 1]
            (0.25, &[1, 0, 2]),  // x 1; r' 0 → primary
            (0.5, &[1, 2, 0]),   // x 2; r' 0.5 → x' 1 of [primary 1, backup 1]
            (0.74, &[1, 2, 0]),  // x 2.96; r' 0.98
            (0.75, &[2, 0, 1]),  // x 3; r' 0 → primary
            (0.999, &[2, 1, 0]), // x 3.996; r' 0.996 → x' 2.988
            (1.0, &[2, 1, 0]),   // clamped below 1
            (7.0, &[2, 1, 0]),   // clamped below 1
            (-1.0, &[0, 1, 2]),  // clamped to 0
            (f64::NAN, &[0, 1, 2]), // clamped to 0
        ];
        for (r, expected) in table {
            assert_eq!(
                attempt_order(Policy::Weighted, &origins, None, *r),
                *expected,
                "random {r}"
            );
        }
    }

    #[test]
    fn down_and_weight_zero_go_last() {
        let origins = pool(&[1, 0, 3, 2], &[true, true, false, true]);
        for policy in [Policy::Weighted, Policy::Hash] {
            for r in [0.0, 0.3, 0.6, 0.99] {
                let order = attempt_order(policy, &origins, Some("a key"), r);
                assert_eq!(&order[2..], &[1, 2], "{policy:?} {r}: weight 0 then down");
                let mut first_two = order[..2].to_vec();
                first_two.sort_unstable();
                assert_eq!(first_two, vec![0, 3]);
            }
        }
        // Only weight-0 origins healthy: they serve, in priority order.
        let origins = pool(&[0, 3, 0], &[true, false, true]);
        for policy in [Policy::Weighted, Policy::Hash, Policy::Failover] {
            assert_eq!(
                attempt_order(policy, &origins, Some("k"), 0.5),
                vec![0, 2, 1]
            );
        }
        // All down: every origin, in priority order.
        let origins = pool(&[1, 2, 1], &[false, false, false]);
        for policy in [Policy::Weighted, Policy::Hash, Policy::Failover] {
            assert_eq!(
                attempt_order(policy, &origins, Some("k"), 0.5),
                vec![0, 1, 2]
            );
        }
        assert_eq!(
            attempt_order(Policy::Hash, &[], Some("k"), 0.5),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn hash_without_a_key_is_weighted() {
        let origins = pool(&[1, 2, 1], &[true, true, true]);
        for r in [0.0, 0.1, 0.3, 0.6, 0.8, 0.99] {
            let weighted = attempt_order(Policy::Weighted, &origins, None, r);
            assert_eq!(attempt_order(Policy::Hash, &origins, None, r), weighted);
            assert_eq!(attempt_order(Policy::Hash, &origins, Some(""), r), weighted);
        }
    }

    #[test]
    fn the_hash_is_pinned() {
        // FNV-1a-32 of "" is the offset basis; fmix32 spreads it.
        assert_eq!(fnv1a32(FNV32_OFFSET, b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(FNV32_OFFSET, b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(FNV32_OFFSET, b"foobar"), 0xbf9c_f968);
        assert_eq!(fmix32(0), 0);
        assert_eq!(
            rendezvous_hash("k", "primary"),
            fmix32(fnv1a32(FNV32_OFFSET, b"k\0primary"))
        );
    }

    /// Over many random numbers, each origin is first in proportion to its
    /// weight, and second in proportion to its weight among the rest.
    #[test]
    fn weighted_split_follows_the_weights() {
        let weights = [1u32, 2, 1, 4];
        let origins = pool(&weights, &[true; 4]);
        let total: u32 = weights.iter().sum();
        let n = 40_000;
        let mut first = [0usize; 4];
        let mut second_after_3 = [0usize; 4];
        let mut after_3 = 0;
        let mut rng = SplitMix64(7);
        for _ in 0..n {
            let order = attempt_order(Policy::Weighted, &origins, None, rng.next_f64());
            first[order[0]] += 1;
            if order[0] == 3 {
                after_3 += 1;
                second_after_3[order[1]] += 1;
            }
        }
        for i in 0..4 {
            let p = f64::from(weights[i]) / f64::from(total);
            assert!(within_binomial(first[i], n, p), "first {i}: {first:?}");
        }
        for i in 0..3 {
            let p = f64::from(weights[i]) / f64::from(total - weights[3]);
            assert!(
                within_binomial(second_after_3[i], after_3, p),
                "second {i}: {second_after_3:?}"
            );
        }
    }

    /// Over many keys, each origin holds keys in proportion to its weight.
    #[test]
    fn hash_split_follows_the_weights() {
        let weights = [1u32, 2, 1];
        let origins = pool(&weights, &[true; 3]);
        let n = 30_000;
        let mut first = [0usize; 3];
        for k in 0..n {
            let key = format!("198.51.{}.{}", k / 256, k % 256);
            first[attempt_order(Policy::Hash, &origins, Some(&key), 0.0)[0]] += 1;
        }
        for i in 0..3 {
            let p = f64::from(weights[i]) / 4.0;
            assert!(within_binomial(first[i], n, p), "{first:?}");
        }
    }

    /// Losing an origin moves only the keys it held, and those come back
    /// when it recovers; every other key keeps its whole order.
    #[test]
    fn hash_moves_only_the_lost_origins_keys() {
        let weights = [1u32, 2, 1, 3];
        let all_up = pool(&weights, &[true; 4]);
        let keys: Vec<String> = (0..3_000).map(|k| format!("session-{k}")).collect();
        let before: Vec<Vec<usize>> = keys
            .iter()
            .map(|k| attempt_order(Policy::Hash, &all_up, Some(k), 0.5))
            .collect();
        for lost in 0..4 {
            let mut healthy = [true; 4];
            healthy[lost] = false;
            let one_down = pool(&weights, &healthy);
            let mut moved = 0;
            for (key, was) in keys.iter().zip(&before) {
                let now = attempt_order(Policy::Hash, &one_down, Some(key), 0.5);
                let mut expected: Vec<usize> = was.iter().copied().filter(|&i| i != lost).collect();
                expected.push(lost);
                assert_eq!(now, expected, "{key} with {lost} down");
                moved += usize::from(was[0] == lost);
            }
            assert!(moved > 0, "origin {lost} held some keys");
        }
        let again: Vec<Vec<usize>> = keys
            .iter()
            .map(|k| attempt_order(Policy::Hash, &all_up, Some(k), 0.9))
            .collect();
        assert_eq!(again, before, "they return, whatever the random number");
    }

    #[test]
    fn names_not_positions_decide_the_hash() {
        let a = [
            Candidate {
                name: "primary",
                weight: 1,
                healthy: true,
            },
            Candidate {
                name: "replica",
                weight: 1,
                healthy: true,
            },
        ];
        let b = [a[1], a[0]];
        for k in 0..200 {
            let key = format!("k{k}");
            let in_a = a[attempt_order(Policy::Hash, &a, Some(&key), 0.0)[0]].name;
            let in_b = b[attempt_order(Policy::Hash, &b, Some(&key), 0.0)[0]].name;
            assert_eq!(in_a, in_b, "{key}");
        }
    }

    proptest::proptest! {
        /// Every order holds every origin once; an origin of weight 0 (or a
        /// down one) is never first while a healthy origin of weight above 0
        /// exists; a down one never precedes a healthy one.
        #[test]
        fn orders_are_permutations_with_weight_0_never_first(
            origins in proptest::collection::vec((0u32..4, proptest::bool::ANY), 0..5),
            key in proptest::option::of("\\PC{0,12}"),
            random in 0.0f64..1.0,
            policy in proptest::sample::select(vec![Policy::Failover, Policy::Weighted, Policy::Hash]),
        ) {
            let pool: Vec<Candidate<'_>> = origins
                .iter()
                .zip(NAMES)
                .map(|(&(w, healthy), name)| Candidate { name, weight: w * 250, healthy })
                .collect();
            let order = attempt_order(policy, &pool, key.as_deref(), random);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            proptest::prop_assert_eq!(sorted, (0..pool.len()).collect::<Vec<_>>());
            let healthy_count = pool.iter().filter(|c| c.healthy).count();
            proptest::prop_assert!(order[..healthy_count].iter().all(|&i| pool[i].healthy));
            if policy != Policy::Failover && pool.iter().any(|c| c.healthy && c.weight > 0) {
                proptest::prop_assert!(pool[order[0]].weight > 0);
            }
        }
    }

    #[test]
    fn hash_keys() {
        let ip = HashKey::ClientIp;
        assert_eq!(ip.header(), "cf-connecting-ip");
        assert_eq!(ip.key_in(Some("203.0.113.9")), Some("203.0.113.9"));
        assert_eq!(ip.key_in(Some("")), None);
        assert_eq!(ip.key_in(None), None);
        let header = HashKey::Header("x-user".to_string());
        assert_eq!(header.header(), "x-user");
        assert_eq!(header.key_in(Some("alice")), Some("alice"));
        let cookie = HashKey::Cookie("sid".to_string());
        assert_eq!(cookie.header(), "cookie");
        assert_eq!(cookie.key_in(Some("a=1; sid=xyz; b=2")), Some("xyz"));
        assert_eq!(cookie.key_in(Some("a=1; SID=xyz")), None);
        assert_eq!(cookie.key_in(Some("sid=")), None);
        assert_eq!(
            (ip.describe(), header.describe(), cookie.describe()),
            (
                "ip".to_string(),
                "header:x-user".to_string(),
                "cookie:sid".to_string()
            )
        );
    }
}
