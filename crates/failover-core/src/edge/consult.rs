//! Checker consultations per location, not per isolate. On the Workers Free
//! plan a Durable Object gets 100,000 requests a day, alarms included; if
//! every isolate asked the checker once per `HEALTH_INTERVAL_MS`, some 16
//! busy isolates would use the whole day. So the isolates of a location
//! share one copy of the checker's answer (its verdicts and the overrides,
//! `overrides::wire::Snapshot`) in the location's cache, and only one of
//! them asks the checker when that copy is stale:
//!
//! 1. Every isolate reads the copy at most every [`snapshot_read_every`]
//!    (1 s), with its colo read, beside a request.
//! 2. A copy older than one interval ([`is_stale`]), or none, makes the
//!    isolate look at the location's *claim* key: a claim younger than one
//!    interval ([`may_claim`]) means another isolate is on it.
//! 3. Otherwise it writes its own claim (a random nonce), waits
//!    [`CLAIM_SETTLES`], reads the key again and asks the checker only if
//!    it finds its own nonce there ([`after_claim`]); then it writes the
//!    answer to the cache for the others.
//!
//! The Cache API has no compare-and-swap. Two isolates that both found no
//! claim in step 2 both write one; the wait lets both writes land, so only
//! the one whose write landed last finds its own nonce. Only a cache slower
//! than the wait lets both ask: the target is at most two requests per
//! location and interval (`tests/consult.test.mjs` counts them with 8
//! isolates; the simulation below with a fake cache: cache operations of
//! 2–10 ms, one request per interval; without the wait, 2–4% of intervals
//! had two and one in 400 had three; with cache operations of 60 ms, 3% had
//! three). A claim
//! the isolate cannot read back at all means a cache that keeps nothing
//! (`workers.dev`, where the Cache API is a no-op): that isolate then asks
//! the checker itself, once per interval, as before.
//!
//! Daily checker requests at the defaults (15 s): 5,760 a day per location
//! that has traffic (one per interval, a few more where claims collide),
//! plus 5,760 alarms and 288 cron ticks.

use std::time::Duration;

use crate::edge::time::{after, millis};

/// The Durable Object binding that turns the global checker on.
pub const BINDING: &str = "HEALTH_CHECKER";

/// The name of the one checker object (`idFromName`): one per Worker.
pub const OBJECT_NAME: &str = "global";

/// How often an isolate reads the location's copy, at most: a change
/// reaches every isolate of a location within about this long of the copy
/// being written.
pub fn snapshot_read_every(health_interval: Duration) -> Duration {
    Duration::from_secs(1).min(health_interval)
}

/// How long after the checker stores a change every isolate anywhere has
/// learned it, at most, while it has traffic: the location's copy can be
/// just fresh when the change is made (one interval), its first reader
/// finds it stale within a read period, and the others read the new copy
/// within another; a second of margin for the round trips.
pub fn propagation(health_interval: Duration) -> Duration {
    health_interval + snapshot_read_every(health_interval) * 2 + Duration::from_secs(1)
}

/// The cache key of the location's copy. `checker_id` is the checker's
/// Durable Object id: one per Worker (a namespace's id for one name), so a
/// staging Worker with the same origins never reads production's overrides.
pub fn snapshot_key(checker_id: &str) -> String {
    format!("https://tunnel-failover.internal/checker/{checker_id}")
}

/// The cache key of the location's claim to ask the checker.
pub fn claim_key(checker_id: &str) -> String {
    format!("https://tunnel-failover.internal/checker-claim/{checker_id}")
}

/// How long the copy is kept in the cache: three intervals, as long as its
/// verdicts are trusted (a stale copy still carries the overrides, and is
/// read until a fresh one replaces it).
pub fn snapshot_ttl(health_interval: Duration) -> Duration {
    health_interval * 3
}

/// Whether the copy made at `as_of_ms` is due for a fresh one at `now_ms`.
/// A copy dated too far ahead (a skewed clock) is stale too, or it would
/// be trusted for ever.
pub fn is_stale(as_of_ms: u64, now_ms: u64, health_interval: Duration) -> bool {
    now_ms >= after(as_of_ms, health_interval) || as_of_ms >= after(now_ms, health_interval)
}

/// A claim on asking the checker: whose, and since when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    /// A random number the claimer picked.
    pub nonce: u64,
    /// When it claimed, ms on its clock.
    pub taken_ms: u64,
}

impl Claim {
    /// `nonce taken_ms`, in hex and decimal.
    pub fn encode(&self) -> String {
        format!("{:016x} {}", self.nonce, self.taken_ms)
    }

    /// None for anything else.
    pub fn decode(text: &str) -> Option<Claim> {
        let (nonce, taken) = text.trim().split_once(' ')?;
        Some(Claim {
            nonce: u64::from_str_radix(nonce, 16).ok()?,
            taken_ms: taken.parse().ok()?,
        })
    }
}

/// How long a claimer waits between writing its claim and reading it back:
/// longer than a cache write takes to land in the location, so that of
/// claims written at about the same time only the last is read back by
/// its writer. Off the request path, once per location and interval.
pub const CLAIM_SETTLES: Duration = Duration::from_millis(100);

/// How long a claim holds: one interval, time for its holder to ask the
/// checker and write the answer; past that, the holder is presumed gone
/// (an evicted isolate, a failed request) and another may claim.
pub fn claim_lasts(health_interval: Duration) -> Duration {
    health_interval
}

/// Whether an isolate that found the copy stale may claim, given the claim
/// it read (None: none there).
pub fn may_claim(seen: Option<Claim>, now_ms: u64, health_interval: Duration) -> bool {
    seen.is_none_or(|c| {
        now_ms >= after(c.taken_ms, claim_lasts(health_interval))
            || c.taken_ms > after(now_ms, claim_lasts(health_interval))
    })
}

/// What an isolate does after writing its claim and reading it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterClaim {
    /// Its own claim is there: ask the checker, write the copy.
    Consult,
    /// Another's claim won: leave it to them.
    Leave,
    /// Nothing is there: the cache keeps nothing. Ask the checker directly,
    /// once per interval per isolate (the isolate's own cadence).
    CacheKeepsNothing,
}

/// Reads the claim key after writing `mine` to it.
pub fn after_claim(seen: Option<Claim>, mine: Claim) -> AfterClaim {
    match seen {
        Some(c) if c == mine => AfterClaim::Consult,
        Some(_) => AfterClaim::Leave,
        None => AfterClaim::CacheKeepsNothing,
    }
}

/// A cache entry's `max-age`, whole seconds, at least 1.
pub fn max_age_s(ttl: Duration) -> u64 {
    millis(ttl).div_ceil(1000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::splitmix::SplitMix64;
    use std::collections::BTreeMap;

    const INTERVAL: Duration = Duration::from_secs(15);

    #[test]
    fn staleness_and_claims() {
        assert!(!is_stale(1_000, 15_999, INTERVAL));
        assert!(is_stale(1_000, 16_000, INTERVAL));
        assert!(is_stale(100_000, 1_000, INTERVAL), "dated far ahead");
        assert!(
            !is_stale(10_000, 1_000, INTERVAL),
            "a little ahead: clocks differ"
        );
        let c = Claim {
            nonce: 0xfeed,
            taken_ms: 1_000,
        };
        assert_eq!(Claim::decode(&c.encode()), Some(c));
        for bad in ["", "feed", "xyz 1", "feed -1", "feed 1 2"] {
            assert_eq!(Claim::decode(bad), None, "{bad:?}");
        }
        assert!(may_claim(None, 0, INTERVAL));
        assert!(!may_claim(Some(c), 15_999, INTERVAL));
        assert!(may_claim(Some(c), 16_000, INTERVAL), "its holder is gone");
        assert!(
            may_claim(
                Some(Claim {
                    nonce: 1,
                    taken_ms: 100_000
                }),
                1_000,
                INTERVAL
            ),
            "dated far ahead"
        );
        let other = Claim { nonce: 1, ..c };
        assert_eq!(after_claim(Some(c), c), AfterClaim::Consult);
        assert_eq!(after_claim(Some(other), c), AfterClaim::Leave);
        assert_eq!(after_claim(None, c), AfterClaim::CacheKeepsNothing);
    }

    #[test]
    fn spans() {
        assert_eq!(snapshot_read_every(INTERVAL), Duration::from_secs(1));
        assert_eq!(
            snapshot_read_every(Duration::from_millis(200)),
            Duration::from_millis(200)
        );
        assert_eq!(propagation(INTERVAL), Duration::from_secs(18));
        assert_eq!(max_age_s(snapshot_ttl(INTERVAL)), 45);
        assert_eq!(max_age_s(Duration::from_millis(1)), 1);
        assert_ne!(snapshot_key("ab"), claim_key("ab"));
    }

    /// One isolate's place in the protocol.
    #[derive(Clone, Copy)]
    enum Step {
        /// Reads the copy at `next_read`.
        Idle,
        /// Read the claim key; looks at it at `at`.
        ReadClaim { at: u64 },
        /// Wrote its claim; reads it back at `at`.
        Wrote { at: u64, mine: Claim },
        /// Asking the checker; writes the copy at `at`.
        Asking { at: u64 },
    }

    /// 8 isolates of one location under load, each reading the copy at the
    /// first request a second after its last read; every cache operation takes `op_ms` to land
    /// (a put is seen by reads that start after it lands), the checker
    /// `ask_ms`. Counts the checker's requests per interval, over 400
    /// intervals, with the protocol's own functions.
    fn simulate(isolates: usize, op_ms: u64, ask_ms: u64, seed: u64) -> Vec<u32> {
        let interval = INTERVAL;
        let every = millis(snapshot_read_every(interval));
        let mut rng = SplitMix64(seed);
        let mut next_read: Vec<u64> = (0..isolates).map(|_| rng.next_u64() % every).collect();
        let mut steps = vec![Step::Idle; isolates];
        // Every put, with when it lands; a read started at `r` sees the
        // last one landed by then.
        let mut copies: Vec<(u64, u64)> = Vec::new(); // (as_of, lands)
        let mut claims: Vec<(Claim, u64)> = Vec::new();
        fn seen<T: Copy>(puts: &[(T, u64)], r: u64) -> Option<T> {
            puts.iter()
                .filter(|p| p.1 <= r)
                .max_by_key(|p| p.1)
                .map(|p| p.0)
        }
        let intervals = 400u64;
        let end = intervals * millis(interval);
        let mut asks: BTreeMap<u64, u32> = BTreeMap::new();
        let mut now = 0;
        while now < end {
            for i in 0..isolates {
                match steps[i] {
                    Step::Idle if now >= next_read[i] => {
                        // The first request after the read falls due
                        // starts it: under load, within some 100 ms.
                        next_read[i] = now + every + rng.next_u64() % 100;
                        if seen(&copies, now).is_none_or(|as_of| is_stale(as_of, now, interval)) {
                            steps[i] = Step::ReadClaim { at: now + op_ms };
                        }
                    }
                    Step::ReadClaim { at } if now >= at => {
                        steps[i] = if may_claim(seen(&claims, now - op_ms), now, interval) {
                            let mine = Claim {
                                nonce: rng.next_u64(),
                                taken_ms: now,
                            };
                            claims.push((mine, now + op_ms));
                            Step::Wrote {
                                at: now + op_ms + millis(CLAIM_SETTLES),
                                mine,
                            }
                        } else {
                            Step::Idle
                        };
                    }
                    Step::Wrote { at, mine } if now >= at => {
                        steps[i] = match after_claim(seen(&claims, now - op_ms), mine) {
                            AfterClaim::Consult | AfterClaim::CacheKeepsNothing => {
                                *asks.entry(now / millis(interval)).or_default() += 1;
                                Step::Asking { at: now + ask_ms }
                            }
                            AfterClaim::Leave => Step::Idle,
                        };
                    }
                    Step::Asking { at } if now >= at => {
                        copies.push((now, now + op_ms));
                        steps[i] = Step::Idle;
                    }
                    _ => {}
                }
            }
            // Only the last landed put of each key matters from here on
            // (reads look back at most one cache operation).
            let landed = now.saturating_sub(op_ms);
            let keep = copies
                .iter()
                .filter(|p| p.1 <= landed)
                .max_by_key(|p| p.1)
                .copied();
            copies.retain(|p| p.1 > landed || Some(*p) == keep);
            let keep = claims
                .iter()
                .filter(|p| p.1 <= landed)
                .max_by_key(|p| p.1)
                .copied();
            claims.retain(|p| p.1 > landed || Some(*p) == keep);
            // On to the next instant anything happens.
            now = steps
                .iter()
                .zip(&next_read)
                .map(|(step, &read)| match *step {
                    Step::Idle => read,
                    Step::ReadClaim { at } | Step::Wrote { at, .. } | Step::Asking { at } => at,
                })
                .min()
                .unwrap_or(end)
                .max(now + 1);
        }
        (0..intervals)
            .map(|k| asks.get(&k).copied().unwrap_or(0))
            .collect()
    }

    #[test]
    fn eight_isolates_ask_about_once_per_interval() {
        for (op_ms, ask_ms, seed) in [(2, 20, 1), (5, 50, 2), (10, 200, 3)] {
            let per_interval = simulate(8, op_ms, ask_ms, seed);
            let total: u32 = per_interval.iter().sum();
            let max = per_interval.iter().copied().max().unwrap_or(0);
            let over_two = per_interval.iter().filter(|&&n| n > 2).count();
            println!(
                "cache op {op_ms} ms, checker {ask_ms} ms: {total} requests in {} intervals, max {max} in one, {over_two} over 2",
                per_interval.len()
            );
            assert!(total as usize <= per_interval.len() * 11 / 10, "{total}");
            assert!(max <= 2, "{per_interval:?}");
        }
    }
}
