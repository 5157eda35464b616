//! The Worker's map of origin health, one entry per configured origin, in
//! priority order. A failed attempt marks an origin down at once (the next
//! request must not wait for the same timeout); only background probes bring
//! it back, after `rise` good ones in a row, so a flapping origin is not
//! handed traffic on a single lucky answer.

use crate::classify::Failure;
use crate::streak::{Streak, Verdict};

/// One flip of an origin's verdict, for the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    pub origin: usize,
    pub from: Verdict,
    pub to: Verdict,
    pub reason: String,
}

/// What the map knows about one origin.
#[derive(Clone, Debug)]
pub struct OriginHealth {
    streak: Streak,
    last_error: Option<Failure>,
    last_change_ms: Option<u64>,
    next_probe_ms: u64,
    probe_in_flight: bool,
}

impl OriginHealth {
    pub fn verdict(&self) -> Verdict {
        self.streak.verdict()
    }
    pub fn good_streak(&self) -> u32 {
        self.streak.good_streak()
    }
    pub fn bad_streak(&self) -> u32 {
        self.streak.bad_streak()
    }
    pub fn last_error(&self) -> Option<Failure> {
        self.last_error
    }
    /// When the verdict last flipped, None since the isolate started.
    pub fn last_change_ms(&self) -> Option<u64> {
        self.last_change_ms
    }
}

/// Health of every origin, as seen by one isolate.
#[derive(Clone, Debug)]
pub struct HealthMap {
    origins: Vec<OriginHealth>,
    probe_interval_ms: u64,
}

impl HealthMap {
    /// A cold isolate presumes every origin healthy: it has no evidence
    /// otherwise, and the first failure costs one attempt at most.
    pub fn new(origin_count: usize, rise: u32, probe_interval_ms: u64) -> HealthMap {
        let fresh = OriginHealth {
            streak: Streak::new(Verdict::Up, rise, 1),
            last_error: None,
            last_change_ms: None,
            next_probe_ms: 0,
            probe_in_flight: false,
        };
        HealthMap {
            origins: vec![fresh; origin_count],
            probe_interval_ms,
        }
    }

    pub fn origins(&self) -> &[OriginHealth] {
        &self.origins
    }

    pub fn is_up(&self, origin: usize) -> bool {
        self.origins.get(origin).is_some_and(|o| o.streak.is_up())
    }

    /// Healthy origins first, then down ones, each group in priority order:
    /// when everything is down the request still tries every origin.
    pub fn attempt_order(&self) -> Vec<usize> {
        let up = (0..self.origins.len()).filter(|&i| self.is_up(i));
        let down = (0..self.origins.len()).filter(|&i| !self.is_up(i));
        up.chain(down).collect()
    }

    /// Records a failed client attempt: the origin is down from now on.
    pub fn record_failure(&mut self, origin: usize, failure: Failure, now_ms: u64) -> Option<Transition> {
        let interval = self.probe_interval_ms;
        let entry = self.origins.get_mut(origin)?;
        entry.last_error = Some(failure);
        let flipped = entry.streak.observe(false)?;
        entry.last_change_ms = Some(now_ms);
        entry.next_probe_ms = now_ms.saturating_add(interval);
        Some(Transition {
            origin,
            from: Verdict::Up,
            to: flipped,
            reason: failure.label(),
        })
    }

    /// Down origins whose probe is due at `now_ms`. They are marked as being
    /// probed, so concurrent requests in the isolate do not probe them again;
    /// every one must be answered with `record_probe`.
    pub fn take_due_probes(&mut self, now_ms: u64) -> Vec<usize> {
        let interval = self.probe_interval_ms;
        let mut due = Vec::new();
        for (i, entry) in self.origins.iter_mut().enumerate() {
            if !entry.streak.is_up() && !entry.probe_in_flight && now_ms >= entry.next_probe_ms {
                entry.probe_in_flight = true;
                entry.next_probe_ms = now_ms.saturating_add(interval);
                due.push(i);
            }
        }
        due
    }

    /// True when some probe is due; cheap enough for every request.
    pub fn probe_due(&self, now_ms: u64) -> bool {
        self.origins
            .iter()
            .any(|e| !e.streak.is_up() && !e.probe_in_flight && now_ms >= e.next_probe_ms)
    }

    /// Records a background probe's result (`None` for a good answer).
    pub fn record_probe(&mut self, origin: usize, result: Option<Failure>, now_ms: u64) -> Option<Transition> {
        let entry = self.origins.get_mut(origin)?;
        entry.probe_in_flight = false;
        if let Some(failure) = result {
            entry.last_error = Some(failure);
        }
        let before = entry.streak.verdict();
        let flipped = entry.streak.observe(result.is_none())?;
        entry.last_change_ms = Some(now_ms);
        let reason = match result {
            None => format!("{} good probes", entry.streak.good_streak()),
            Some(failure) => failure.label(),
        };
        Some(Transition {
            origin,
            from: before,
            to: flipped,
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const INTERVAL: u64 = 15_000;

    #[test]
    fn cold_isolate_trusts_every_origin() {
        let map = HealthMap::new(3, 2, INTERVAL);
        assert_eq!(map.attempt_order(), vec![0, 1, 2]);
        assert!(!map.probe_due(0));
    }

    #[test]
    fn one_failure_marks_down_and_reorders() {
        let mut map = HealthMap::new(2, 2, INTERVAL);
        let t = map.record_failure(0, Failure::Timeout, 1_000).expect("flips");
        assert_eq!((t.from, t.to, t.reason.as_str()), (Verdict::Up, Verdict::Down, "timeout"));
        assert_eq!(map.attempt_order(), vec![1, 0]);
        assert_eq!(map.record_failure(0, Failure::Refused, 1_001), None, "already down");
        assert_eq!(map.origins()[0].last_error(), Some(Failure::Refused));
    }

    #[test]
    fn all_down_keeps_priority_order() {
        let mut map = HealthMap::new(2, 2, INTERVAL);
        map.record_failure(1, Failure::Network, 0);
        map.record_failure(0, Failure::Network, 0);
        assert_eq!(map.attempt_order(), vec![0, 1]);
    }

    #[test]
    fn probes_wait_an_interval_and_do_not_overlap() {
        let mut map = HealthMap::new(2, 2, INTERVAL);
        map.record_failure(0, Failure::Status(530), 1_000);
        assert!(map.take_due_probes(1_000 + INTERVAL - 1).is_empty());
        assert!(map.probe_due(1_000 + INTERVAL));
        assert_eq!(map.take_due_probes(1_000 + INTERVAL), vec![0]);
        assert!(map.take_due_probes(1_000 + 3 * INTERVAL).is_empty(), "in flight");
        map.record_probe(0, Some(Failure::Refused), 1_000 + 3 * INTERVAL);
        assert_eq!(map.take_due_probes(1_000 + 3 * INTERVAL), vec![0], "overdue");
    }

    #[test]
    fn rise_good_probes_bring_it_back() {
        let mut map = HealthMap::new(2, 3, INTERVAL);
        map.record_failure(0, Failure::Timeout, 0);
        assert_eq!(map.record_probe(0, None, 1), None);
        assert_eq!(map.record_probe(0, None, 2), None);
        let t = map.record_probe(0, None, 3).expect("third good probe flips");
        assert_eq!((t.from, t.to, t.reason.as_str()), (Verdict::Down, Verdict::Up, "3 good probes"));
        assert_eq!(map.origins()[0].last_change_ms(), Some(3));
        assert_eq!(map.attempt_order(), vec![0, 1]);
    }

    #[test]
    fn a_bad_probe_restarts_the_count() {
        let mut map = HealthMap::new(1, 2, INTERVAL);
        map.record_failure(0, Failure::Timeout, 0);
        map.record_probe(0, None, 1);
        map.record_probe(0, Some(Failure::Status(502)), 2);
        assert_eq!(map.record_probe(0, None, 3), None);
        assert!(map.record_probe(0, None, 4).is_some());
    }

    #[test]
    fn unknown_origin_is_ignored() {
        let mut map = HealthMap::new(1, 2, INTERVAL);
        assert_eq!(map.record_failure(5, Failure::Timeout, 0), None);
        assert_eq!(map.record_probe(5, None, 0), None);
    }

    proptest! {
        /// Whatever happens, the attempt order is a permutation of all
        /// origins with the healthy ones first, each group by priority.
        #[test]
        fn attempt_order_is_a_prioritised_permutation(
            events in proptest::collection::vec((0usize..4, any::<bool>(), any::<bool>()), 0..200)
        ) {
            let mut map = HealthMap::new(4, 2, 10);
            for (step, (origin, is_probe, good)) in events.into_iter().enumerate() {
                let now = step as u64 * 7;
                if is_probe {
                    map.take_due_probes(now);
                    map.record_probe(origin, (!good).then_some(Failure::Timeout), now);
                } else if !good {
                    map.record_failure(origin, Failure::Network, now);
                }
                let order = map.attempt_order();
                let mut sorted = order.clone();
                sorted.sort_unstable();
                prop_assert_eq!(sorted, vec![0, 1, 2, 3]);
                let ups = order.iter().take_while(|&&i| map.is_up(i)).count();
                prop_assert!(order[ups..].iter().all(|&i| !map.is_up(i)));
                prop_assert!(order[..ups].windows(2).all(|w| w[0] < w[1]));
                prop_assert!(order[ups..].windows(2).all(|w| w[0] < w[1]));
            }
        }

        /// An origin is never back up with fewer than `rise` good probes
        /// since its last failure.
        #[test]
        fn no_fail_back_before_rise(results in proptest::collection::vec(any::<bool>(), 0..100), rise in 1u32..5) {
            let mut map = HealthMap::new(1, rise, 10);
            map.record_failure(0, Failure::Timeout, 0);
            let mut good_in_a_row = 0;
            for (step, good) in results.into_iter().enumerate() {
                let was_up = map.is_up(0);
                if !was_up {
                    map.record_probe(0, (!good).then_some(Failure::Timeout), step as u64);
                    good_in_a_row = if good { good_in_a_row + 1 } else { 0 };
                    if map.is_up(0) {
                        prop_assert!(good_in_a_row >= rise);
                    }
                } else if !good {
                    map.record_failure(0, Failure::Timeout, step as u64);
                    good_in_a_row = 0;
                }
            }
        }
    }
}
