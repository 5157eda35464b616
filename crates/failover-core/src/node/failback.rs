//! The primary's clock: every `failback_interval` it checks egress to
//! Cloudflare directly (not through the tunnel). `failback_after` good checks
//! in a row let it start its connector again when it is not running.
//!
//! The checks run while the connector runs too, so that a bare stop of the
//! connector on a healthy primary is undone at the next local look instead of
//! two fail-back periods later: that is why a stop-only test exercises
//! fail-back, not failover. A stop ordered by the peer (a take-over) of a
//! running connector starts the count again from zero, and a take-over that reverses a recent
//! fail-back doubles the count needed next time: a flapping link passes two
//! checks in a row often, sixteen rarely.

use super::timing::Timing;
use crate::streak::{Streak, Verdict};

/// The required streak doubles at most this many times (2 → 16 checks with
/// the defaults).
const MAX_PENALTY: u32 = 3;

/// The fail-back clock of a primary or of a node with its own tunnel: the
/// egress streak that proves the uplink, and the penalty that lengthens it
/// after a reversed fail-back.
#[derive(Clone, Debug)]
pub struct FailBack {
    egress: Streak,
    base: u32,
    penalty: u32,
    window_ms: u64,
    last_failback_ms: Option<u64>,
    last_check: Option<bool>,
}

impl FailBack {
    /// Egress is presumed bad until checked: a primary that just booted
    /// proves its uplink before it takes the tunnel back.
    pub fn new(timing: &Timing) -> Self {
        let base = timing.failback_after.max(1);
        FailBack {
            egress: Streak::new(Verdict::Down, base, 1),
            base,
            penalty: 0,
            window_ms: timing.reversal_window_ms(),
            last_failback_ms: None,
            last_check: None,
        }
    }

    /// Records one egress check; `good` when Cloudflare answered directly,
    /// in time. One failed check is enough to doubt egress again.
    pub fn observe(&mut self, good: bool) {
        self.egress.observe(good);
        self.last_check = Some(good);
    }

    /// Egress held for the required number of checks in a row.
    pub fn egress_proven(&self) -> bool {
        self.egress.is_up()
    }

    /// Good checks in a row a fail-back needs now: `failback_after`,
    /// doubled once per penalty.
    pub fn required(&self) -> u32 {
        self.base.saturating_mul(1 << self.penalty)
    }

    /// Good checks since the last failed one or since the count restarted,
    /// whichever came later.
    pub fn good_in_a_row(&self) -> u32 {
        self.egress.good_streak()
    }

    /// Whether the last egress check was good; `None` before the first.
    pub fn last_check(&self) -> Option<bool> {
        self.last_check
    }

    /// How many times the required streak is doubled (0 to 3): one more
    /// per reversed fail-back; back to none at a planned hand-over, or at a
    /// take-over that comes after the last fail-back held for the reversal
    /// window.
    pub fn penalty(&self) -> u32 {
        self.penalty
    }

    /// The primary started its connector on this clock.
    pub fn record_failback(&mut self, now_ms: u64) {
        self.last_failback_ms = Some(now_ms);
    }

    /// The peer took over and ordered our connector stopped. Only taking a
    /// RUNNING connector away soon after a fail-back is a reversal; a stop
    /// sent to a connector that was already down (drained, crashed, or a
    /// standby retrying) takes nothing away: it neither damps nor restarts
    /// the count, or a peer repeating it could hold the primary down forever.
    pub fn peer_ordered_stop(&mut self, now_ms: u64, was_running: bool) {
        if !was_running {
            return;
        }
        let reversed = self
            .last_failback_ms
            .is_some_and(|at| now_ms.saturating_sub(at) < self.window_ms);
        self.penalty = if reversed {
            (self.penalty + 1).min(MAX_PENALTY)
        } else {
            0
        };
        self.restart_count();
    }

    /// A planned hand-over (the maintenance flag) is no flapping link: the
    /// penalty goes and egress is proven again from zero.
    pub fn planned_handover(&mut self) {
        self.penalty = 0;
        self.restart_count();
    }

    fn restart_count(&mut self) {
        self.egress = Streak::new(Verdict::Down, self.required(), 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_good_checks_in_a_row_prove_egress() {
        let mut f = FailBack::new(&Timing::default());
        f.observe(true);
        f.observe(false);
        f.observe(true);
        assert!(!f.egress_proven());
        f.observe(true);
        assert!(f.egress_proven());
        f.observe(false);
        assert!(
            !f.egress_proven(),
            "one bad check is enough to doubt egress"
        );
    }

    #[test]
    fn a_takeover_soon_after_a_failback_doubles_the_count() {
        let t = Timing::default();
        let mut f = FailBack::new(&t);
        f.record_failback(0);
        f.peer_ordered_stop(60_000, true);
        assert_eq!(f.required(), 4);
        f.record_failback(300_000);
        f.peer_ordered_stop(400_000, true);
        assert_eq!(f.required(), 8);
        f.record_failback(1_000_000);
        f.peer_ordered_stop(1_000_000 + t.reversal_window_ms(), true);
        assert_eq!(
            f.required(),
            2,
            "a fail-back that held for the window clears the penalty"
        );
    }

    #[test]
    fn a_stop_of_a_connector_already_down_or_a_planned_handover_is_no_reversal() {
        let mut f = FailBack::new(&Timing::default());
        f.record_failback(0);
        f.observe(true);
        f.peer_ordered_stop(1_000, false);
        assert_eq!(f.required(), 2);
        assert_eq!(
            f.good_in_a_row(),
            1,
            "a stop of a stopped connector keeps the count"
        );
        f.record_failback(2_000);
        f.peer_ordered_stop(3_000, true);
        assert_eq!(f.required(), 4);
        f.planned_handover();
        assert_eq!(f.required(), 2);
    }

    #[test]
    fn the_penalty_is_capped() {
        let mut f = FailBack::new(&Timing::default());
        for at in 0..10 {
            f.record_failback(at * 1000);
            f.peer_ordered_stop(at * 1000 + 500, true);
        }
        assert_eq!(f.required(), 16);
    }
}
