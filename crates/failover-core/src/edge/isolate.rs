//! Everything one Worker isolate keeps between requests, and the two
//! questions its shell asks of it: which origin the fast path may send
//! requests to on its own (the [`Lease`], good until a change to the health
//! map revokes it, and never granted while a slow-start ramp could move a
//! request), and when periodic work (a probe, a colo read, a checker
//! consultation) is next due. Periodic work ends no lease: the request that
//! finds it due is sent as usual, and the work runs beside it, in the
//! background (`ctx.waitUntil`), so no request waits for a cache read. The edge's
//! counterpart of `node::Node`, in quinn-proto's shape: the machine owns its
//! clocks and answers `next_due_ms`; the shell (src/isolate.rs) holds it in
//! a `RefCell`, never across an `.await`, and carries out what it says.

use std::time::Duration;

use crate::edge::affinity;
use crate::edge::budget::ReplayBudget;
use crate::edge::config::WorkerConfig;
use crate::edge::health::HealthMap;
use crate::edge::shared::{colo_key, colo_read_every, Cadence};
use crate::edge::slow_start::{self, SlowStart};
use crate::edge::steering::Policy;

/// What one isolate knows between requests. The config itself stays with
/// the shell (it is read across awaits); what is derived from it once
/// (affinity tokens, colo keys) lives here.
#[derive(Clone, Debug)]
pub struct Isolate {
    health: HealthMap,
    /// When the colo's shared verdicts are next read; None with
    /// `COLO_HEALTH=off`.
    colo_reads: Option<Cadence>,
    /// When the global checker is next consulted.
    global_reads: Cadence,
    budget: ReplayBudget,
    tokens: Vec<String>,
    colo_keys: Vec<String>,
    /// What `lease` needs to know whether a slow-start ramp is in effect.
    slow_start: SlowStart,
    policy: Policy,
    weights: Vec<u32>,
}

/// The fast path's lease on the isolate's decision: requests go to
/// `origin` (or are routed by the fast path's twin of `route`, with the
/// health it was given) without entering Wasm, until a change to the health
/// map revokes it ([`LeaseAfter::Revoked`]). From `work_due_ms` on, the
/// next request also starts the periodic work, in the background.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The first healthy origin, in priority order.
    pub origin: usize,
    /// When periodic work is next due (`Isolate::next_due_ms`).
    pub work_due_ms: u64,
}

/// Whether a change to the health map ended the fast path's lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseAfter {
    /// What the lease rests on moved (a verdict flipped, or a probe fell
    /// due earlier than the lease knew): the shell revokes it.
    Revoked,
    /// The change touched nothing the lease rests on (a counter moved).
    Stands,
}

impl Isolate {
    /// A fresh isolate for `config`: every origin presumed up (one failed
    /// client attempt marks one down), nothing read or consulted yet.
    pub fn new(config: &WorkerConfig) -> Isolate {
        let interval = Duration::from_millis(config.health_interval_ms);
        Isolate {
            health: HealthMap::new(config.origins.len(), config.health_rise, 1, interval),
            colo_reads: config
                .colo_health
                .then(|| Cadence::new(colo_read_every(interval))),
            global_reads: Cadence::new(interval),
            budget: ReplayBudget::new(config.replay_buffer_budget_bytes),
            tokens: affinity::tokens(&config.origins),
            colo_keys: config.origins.iter().map(colo_key).collect(),
            slow_start: config.slow_start,
            policy: config.steering,
            weights: config.origins.iter().map(|o| o.weight).collect(),
        }
    }

    /// The health map, to read.
    pub fn health(&self) -> &HealthMap {
        &self.health
    }

    /// Changes the health map, and says whether the fast path's lease
    /// survives the change: it rests on which origins are up and on the
    /// earliest due probe, and nothing else (a streak counter, a probe
    /// taken, evidence recorded leave it standing).
    pub fn change_health<T>(
        &mut self,
        change: impl FnOnce(&mut HealthMap) -> T,
    ) -> (T, LeaseAfter) {
        let before = Routing::of(&self.health);
        let result = change(&mut self.health);
        let after = if Routing::of(&self.health).moved_from(&before) {
            LeaseAfter::Revoked
        } else {
            LeaseAfter::Stands
        };
        (result, after)
    }

    /// Records an answer a client got from `origin` as evidence (a shared
    /// "down" older than it is not adopted). It changes no verdict, so it
    /// cannot move the lease, and skips `change_health`'s before-and-after
    /// comparison: it runs on every request the full path serves.
    pub fn record_answer(&mut self, origin: usize, now_ms: u64) {
        self.health.record_success(origin, now_ms);
    }

    /// Whether the colo's verdicts are due to be read, without taking the
    /// read (`take_colo_read` does); never with `COLO_HEALTH=off`.
    pub fn colo_read_due(&self, now_ms: u64) -> bool {
        self.colo_reads.as_ref().is_some_and(|c| c.is_due(now_ms))
    }

    /// Bodies held for replay across the isolate's requests.
    pub fn budget(&self) -> &ReplayBudget {
        &self.budget
    }

    /// The replay budget, to hold or release bytes.
    pub fn budget_mut(&mut self) -> &mut ReplayBudget {
        &mut self.budget
    }

    /// Every origin's affinity cookie value, by index, made once.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// Origin `origin`'s colo cache key (`shared::colo_key`), made once.
    pub fn colo_key(&self, origin: usize) -> Option<&str> {
        self.colo_keys.get(origin).map(String::as_str)
    }

    /// Every origin's colo cache key, by index.
    pub fn colo_keys(&self) -> &[String] {
        &self.colo_keys
    }

    /// True (and the next read is scheduled) when the colo's verdicts are
    /// due to be read; never with `COLO_HEALTH=off`.
    pub fn take_colo_read(&mut self, now_ms: u64) -> bool {
        self.colo_reads.as_mut().is_some_and(|c| c.take(now_ms))
    }

    /// True (and the next one is scheduled) when the global checker is due
    /// to be consulted.
    pub fn take_global_read(&mut self, now_ms: u64) -> bool {
        self.global_reads.take(now_ms)
    }

    /// When the next piece of periodic work falls due without another
    /// change: a colo read, a checker consultation or a probe of a down
    /// origin (0 when one has never run).
    pub fn next_due_ms(&self) -> u64 {
        [
            self.colo_reads.as_ref().map(Cadence::next_due_ms),
            Some(self.global_reads.next_due_ms()),
            self.health.next_probe_ms(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(u64::MAX)
    }

    /// The fast path's lease: the first healthy origin, and when periodic
    /// work is next due. None when no origin is up (the full path walks
    /// them all, and waits for the colo's verdicts first: one may say an
    /// origin is back), and while a slow-start ramp is in effect at
    /// `now_ms` (the full path holds requests back; the fast path, which
    /// knows nothing of ramps, gets its lease again once the ramp is over).
    pub fn lease(&self, now_ms: u64) -> Option<Lease> {
        let origin = self.first_up()?;
        if self.ramp_in_effect(now_ms) {
            return None;
        }
        Some(Lease {
            origin,
            work_due_ms: self.next_due_ms(),
        })
    }

    /// Whether a slow-start ramp can move a request at `now_ms`
    /// (`slow_start::in_effect` over the origins the policy picks from).
    /// Nothing to compute with slow start off.
    pub fn ramp_in_effect(&self, now_ms: u64) -> bool {
        if !self.slow_start.is_on() {
            return false;
        }
        let tier: Vec<f64> = (0..self.health.len())
            .filter(|&i| {
                let weighted = self.weights.get(i).is_some_and(|&w| w > 0);
                self.health.is_up(i) && (self.policy == Policy::Failover || weighted)
            })
            .map(|i| self.slow_start.share(self.health.up_since_ms(i), now_ms))
            .collect();
        slow_start::in_effect(self.policy, &tier)
    }

    /// The first origin the health map calls up, in priority order.
    pub fn first_up(&self) -> Option<usize> {
        (0..self.health.len()).find(|&i| self.health.is_up(i))
    }
}

/// What the fast path's lease depends on in the health map.
#[derive(PartialEq, Eq)]
struct Routing {
    up: Vec<bool>,
    /// When each origin came back up: a new one may start a slow-start
    /// ramp without any verdict flipping here (another isolate's "up").
    up_since: Vec<Option<u64>>,
    next_probe_ms: Option<u64>,
}

impl Routing {
    fn of(health: &HealthMap) -> Routing {
        Routing {
            up: (0..health.len()).map(|i| health.is_up(i)).collect(),
            up_since: (0..health.len()).map(|i| health.up_since_ms(i)).collect(),
            next_probe_ms: health.next_probe_ms(),
        }
    }

    /// A verdict flipped, an origin came back up (a ramp may have begun),
    /// or a probe fell due earlier than the lease knew.
    fn moved_from(&self, before: &Routing) -> bool {
        let earlier = match (self.next_probe_ms, before.next_probe_ms) {
            (Some(now), Some(then)) => now < then,
            (Some(_), None) => true,
            (None, _) => false,
        };
        self.up != before.up || self.up_since != before.up_since || earlier
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::classify::Failure;

    fn config(vars: &[(&str, &str)]) -> WorkerConfig {
        WorkerConfig::from_vars(|k| {
            if k == "ORIGINS" {
                return Some(
                    r#"[{"name":"a","url":"https://a.example"},{"name":"b","url":"https://b.example"}]"#
                        .to_string(),
                );
            }
            vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        })
        .unwrap()
    }

    fn lease(origin: usize, work_due_ms: u64) -> Option<Lease> {
        Some(Lease {
            origin,
            work_due_ms,
        })
    }

    #[test]
    fn a_fresh_isolate_leases_at_once_with_work_due_beside_it() {
        let isolate = Isolate::new(&config(&[]));
        assert_eq!(
            isolate.next_due_ms(),
            0,
            "the first colo read and consultation"
        );
        assert_eq!(isolate.lease(0), lease(0, 0));
    }

    #[test]
    fn periodic_work_moves_when_it_is_due_not_the_lease() {
        let mut isolate = Isolate::new(&config(&[("HEALTH_INTERVAL_MS", "15000")]));
        assert!(isolate.take_colo_read(1_000));
        assert!(isolate.take_global_read(1_000));
        assert!(!isolate.take_colo_read(1_100), "at most every 250 ms");
        assert_eq!(isolate.next_due_ms(), 1_250);
        assert_eq!(isolate.lease(0), lease(0, 1_250));
        assert!(isolate.take_colo_read(1_300));
        assert_eq!(isolate.lease(0), lease(0, 1_550));
    }

    #[test]
    fn colo_off_reads_nothing_and_the_checker_alone_sets_the_pace() {
        let mut isolate = Isolate::new(&config(&[
            ("COLO_HEALTH", "off"),
            ("HEALTH_INTERVAL_MS", "15000"),
        ]));
        assert!(!isolate.take_colo_read(0));
        assert!(isolate.take_global_read(1_000));
        assert_eq!(isolate.lease(0), lease(0, 16_000));
    }

    #[test]
    fn a_flip_revokes_the_lease_and_a_counter_does_not() {
        let mut isolate = Isolate::new(&config(&[("COLO_HEALTH", "off")]));
        isolate.take_global_read(0);
        let (_, after) = isolate.change_health(|h| h.record_success(0, 10));
        assert_eq!(after, LeaseAfter::Stands);
        let (flip, after) = isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 20));
        assert!(flip.is_some());
        assert_eq!(after, LeaseAfter::Revoked);
        // b serves now. Work is next due at the checker's consultation, just
        // before a's probe (one interval after the flip).
        assert_eq!(isolate.lease(0), lease(1, 15_000));
        assert_eq!(isolate.health().next_probe_ms(), Some(15_020));
        let (_, after) = isolate.change_health(|h| h.record_failure(1, Failure::Refused, 40));
        assert_eq!(after, LeaseAfter::Revoked);
        assert_eq!(
            isolate.lease(0),
            None,
            "no origin up: the full path walks them all"
        );
    }

    #[test]
    fn no_lease_while_a_ramp_can_move_a_request() {
        use crate::edge::shared::{SharedVerdict, Source};
        use crate::streak::Verdict;
        let mut isolate = Isolate::new(&config(&[
            ("COLO_HEALTH", "off"),
            ("HEALTH_RISE", "1"),
            ("SLOW_START_S", "60"),
        ]));
        isolate.take_global_read(0);
        let (_, after) = isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 1_000));
        assert_eq!(after, LeaseAfter::Revoked);
        assert_eq!(isolate.lease(2_000), lease(1, 15_000), "b serves");
        let (_, after) = isolate.change_health(|h| h.record_probe(0, None, 16_000));
        assert_eq!(after, LeaseAfter::Revoked, "a came back: its ramp begins");
        for now in [16_000, 30_000, 75_999] {
            assert!(isolate.ramp_in_effect(now), "{now}");
            assert_eq!(isolate.lease(now), None, "{now}: the full path routes");
        }
        assert!(!isolate.ramp_in_effect(76_000));
        assert_eq!(isolate.lease(76_000), lease(0, 15_000), "the ramp is over");
        // With b down there is no one to hold a back for: no ramp in effect.
        isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 80_000));
        isolate.change_health(|h| h.record_probe(0, None, 95_000));
        isolate.change_health(|h| h.record_failure(1, Failure::Timeout, 96_000));
        assert!(!isolate.ramp_in_effect(96_000));
        assert_eq!(isolate.lease(96_000), lease(0, 15_000));
        // Another isolate's news that b came back (this one never saw it
        // down and up) revokes the lease and starts b's ramp, which under
        // failover moves no request while a serves.
        let mut cold = Isolate::new(&config(&[("COLO_HEALTH", "off"), ("SLOW_START_S", "60")]));
        cold.take_global_read(0);
        let back = SharedVerdict {
            verdict: Verdict::Up,
            since_ms: 100_000,
            confirmed_ms: 100_000,
        };
        let (_, after) = cold
            .change_health(|h| h.adopt(1, back, Source::Global, 100_500, Duration::from_secs(30)));
        assert_eq!(after, LeaseAfter::Revoked);
        assert!(
            !cold.ramp_in_effect(100_500),
            "failover: a serves, b's ramp moves nothing"
        );
        let weighted = Isolate::new(&config(&[("STEERING", "weighted"), ("SLOW_START_S", "60")]));
        let mut weighted = weighted;
        weighted
            .change_health(|h| h.adopt(1, back, Source::Colo, 100_500, Duration::from_secs(30)));
        assert!(
            weighted.ramp_in_effect(100_500),
            "weighted: b's share is held back"
        );
        assert_eq!(weighted.lease(100_500), None);
        // Slow start off: never.
        let mut off = Isolate::new(&config(&[("STEERING", "weighted")]));
        off.change_health(|h| h.adopt(1, back, Source::Colo, 100_500, Duration::from_secs(30)));
        assert!(!off.ramp_in_effect(100_500));
        assert!(off.lease(100_500).is_some());
    }

    #[test]
    fn an_answer_is_evidence_and_colo_reads_can_be_peeked() {
        let mut isolate = Isolate::new(&config(&[]));
        isolate.record_answer(0, 5_000);
        assert!(isolate.colo_read_due(5_000));
        assert!(isolate.colo_read_due(5_000), "peeking takes nothing");
        assert!(isolate.take_colo_read(5_000));
        assert!(!isolate.colo_read_due(5_100));
        let off = Isolate::new(&config(&[("COLO_HEALTH", "off")]));
        assert!(!off.colo_read_due(0));
    }

    #[test]
    fn tokens_and_colo_keys_are_made_once_per_origin() {
        let c = config(&[]);
        let isolate = Isolate::new(&c);
        assert_eq!(isolate.tokens(), affinity::tokens(&c.origins).as_slice());
        assert_eq!(isolate.colo_key(1), Some(colo_key(&c.origins[1]).as_str()));
        assert_eq!(isolate.colo_key(2), None);
    }
}
