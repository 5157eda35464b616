//! When the checker probes. Every origin each round, `HEALTH_INTERVAL_MS`
//! apart; and one origin at once when an isolate saw it fail on live
//! traffic (a *suspicion*), then again every [`FOLLOW_UP`] until the
//! checker's own probes settle it: down after `HEALTH_FALL` failures in a
//! row, or cleared by one good probe. So the first `origin.down` leaves
//! about `HEALTH_FALL` probes after the first failed request, not a probe
//! interval later, and the checker still trusts nothing but its own probes
//! (one confused isolate cannot take an origin down for the world).

use std::time::Duration;

use crate::edge::time::{after, millis};

/// The pause between the probes of a suspicion: long enough for a
/// connection refused twice in a row to mean something, short enough that
/// `HEALTH_FALL` = 2 decides within a couple of seconds.
pub const FOLLOW_UP: Duration = Duration::from_secs(1);

/// A suspicion whose probe never reported back (its alarm was cut short)
/// is forgotten after this long, so a new one can start.
const LOST_AFTER: Duration = Duration::from_secs(120);

/// One origin's suspicion: probes left, and when the next is due (None
/// while one is out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Suspicion {
    left: u32,
    due_ms: Option<u64>,
    since_ms: u64,
}

/// See the module doc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    interval: Duration,
    next_round_ms: u64,
    suspicions: Vec<Option<Suspicion>>,
}

impl Schedule {
    /// The first round is due at once.
    pub fn new(origins: usize, interval: Duration) -> Schedule {
        Schedule {
            interval,
            next_round_ms: 0,
            suspicions: vec![None; origins],
        }
    }

    /// An isolate saw `origin` fail: probe it now and up to `fall` times.
    /// True when this starts a suspicion (the shell wakes the checker);
    /// false while one is already running for that origin.
    pub fn suspect(&mut self, origin: usize, fall: u32, now_ms: u64) -> bool {
        let Some(slot) = self.suspicions.get_mut(origin) else {
            return false;
        };
        if let Some(s) = slot {
            if now_ms.saturating_sub(s.since_ms) < millis(LOST_AFTER) {
                return false;
            }
        }
        *slot = Some(Suspicion {
            left: fall.max(1),
            due_ms: Some(now_ms),
            since_ms: now_ms,
        });
        true
    }

    /// The origins to probe now, and whether that is a full round (the
    /// verdicts' `confirmed` time moves only with one).
    pub fn take_due(&mut self, now_ms: u64) -> (Vec<usize>, bool) {
        let round = now_ms >= self.next_round_ms;
        if round {
            self.next_round_ms = after(now_ms, self.interval);
        }
        let mut due = Vec::new();
        for (origin, slot) in self.suspicions.iter_mut().enumerate() {
            let suspected = match slot {
                Some(s)
                    if s.due_ms.is_some_and(|at| at <= now_ms) || round && s.due_ms.is_some() =>
                {
                    s.due_ms = None;
                    true
                }
                _ => false,
            };
            if round || suspected {
                due.push(origin);
            }
        }
        (due, round)
    }

    /// A probe of `origin` reported: `failed`, and whether the origin is
    /// down now (nothing left to decide). A running suspicion ends with a
    /// good probe or the verdict, else follows up after [`FOLLOW_UP`].
    pub fn probed(&mut self, origin: usize, failed: bool, down: bool, now_ms: u64) {
        let Some(slot) = self.suspicions.get_mut(origin) else {
            return;
        };
        let Some(s) = slot else {
            return;
        };
        s.left = s.left.saturating_sub(1);
        if !failed || down || s.left == 0 {
            *slot = None;
            return;
        }
        s.due_ms = Some(after(now_ms, FOLLOW_UP));
    }

    /// When the next probe is due: the next round, or a suspicion's.
    pub fn next_due_ms(&self) -> u64 {
        self.suspicions
            .iter()
            .flatten()
            .filter_map(|s| s.due_ms)
            .fold(self.next_round_ms, u64::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY: Duration = Duration::from_secs(15);

    #[test]
    fn rounds_come_every_interval_with_the_first_at_once() {
        let mut s = Schedule::new(2, EVERY);
        assert_eq!(s.next_due_ms(), 0);
        assert_eq!(s.take_due(1_000), (vec![0, 1], true));
        assert_eq!(s.next_due_ms(), 16_000);
        assert_eq!(s.take_due(15_999), (vec![], false));
        assert_eq!(s.take_due(16_000), (vec![0, 1], true));
    }

    #[test]
    fn a_suspicion_probes_at_once_and_follows_up_until_the_verdict() {
        let mut s = Schedule::new(2, EVERY);
        s.take_due(0);
        assert!(s.suspect(1, 2, 3_000));
        assert!(!s.suspect(1, 2, 3_001), "one at a time per origin");
        assert_eq!(s.next_due_ms(), 3_000);
        assert_eq!(s.take_due(3_000), (vec![1], false));
        assert_eq!(s.take_due(3_000), (vec![], false), "out: not twice");
        s.probed(1, true, false, 3_050);
        assert_eq!(s.next_due_ms(), 4_050, "follow-up");
        assert_eq!(s.take_due(4_050), (vec![1], false));
        s.probed(1, true, true, 4_100);
        assert_eq!(s.next_due_ms(), 15_000, "settled: back to rounds");
        assert!(s.suspect(1, 2, 20_000), "a new suspicion may start");
    }

    #[test]
    fn a_good_probe_clears_a_suspicion_and_so_do_exhausted_follow_ups() {
        let mut s = Schedule::new(1, EVERY);
        s.take_due(0);
        assert!(s.suspect(0, 3, 100));
        s.take_due(100);
        s.probed(0, false, false, 120);
        assert_eq!(s.next_due_ms(), 15_000);
        assert!(s.suspect(0, 1, 200));
        s.take_due(200);
        s.probed(0, true, false, 220);
        assert_eq!(s.next_due_ms(), 15_000, "fall probes spent");
    }

    #[test]
    fn a_round_takes_a_due_suspicion_along_and_a_lost_one_is_forgotten() {
        let mut s = Schedule::new(2, EVERY);
        s.take_due(0);
        assert!(s.suspect(0, 2, 14_999));
        assert_eq!(s.take_due(15_000), (vec![0, 1], true));
        assert_eq!(s.take_due(15_001), (vec![], false));
        // Its probe never reports back.
        assert!(!s.suspect(0, 2, 20_000));
        assert!(s.suspect(0, 2, 14_999 + 120_000));
        assert!(!s.suspect(7, 2, 0), "no such origin");
        s.probed(7, true, false, 0);
    }
}
