//! The standby's clock: every `poll_interval` it looks at the peer's
//! connector. `takeover_after` misses in a row mean the peer does not serve;
//! `standdown_after` ready looks in a row mean it serves again.

use super::readiness::PeerView;
use super::timing::Timing;
use crate::streak::{Streak, Verdict};

/// A connector's readiness over consecutive looks: when it counts as down
/// and when as serving again. The standby watches its peer with one; a node
/// with its own tunnel watches its own running connector with another.
#[derive(Clone, Debug)]
pub struct PeerWatch {
    streak: Streak,
    takeover_after: u32,
    standdown_after: u32,
    misses_total: u64,
    last: Option<String>,
}

impl PeerWatch {
    /// The peer is presumed serving until it misses: a standby that starts
    /// (or restarts) must never take over on its first look.
    pub fn new(timing: &Timing) -> Self {
        PeerWatch {
            streak: Streak::new(Verdict::Up, timing.standdown_after, timing.takeover_after),
            takeover_after: timing.takeover_after.max(1),
            standdown_after: timing.standdown_after.max(1),
            misses_total: 0,
            last: None,
        }
    }

    /// Records one look; it is a miss unless either path saw the peer ready.
    pub fn observe(&mut self, view: &PeerView) {
        let ready = view.is_ready();
        if !ready {
            self.misses_total = self.misses_total.saturating_add(1);
        }
        self.streak.observe(ready);
        self.last = Some(view.describe());
    }

    /// The peer told us it serves (it stopped our connector after its own
    /// became ready): it is up until it misses `takeover_after` looks again.
    pub fn presume_serving(&mut self) {
        self.streak.reset(Verdict::Up);
    }

    /// The peer missed `takeover_after` looks in a row and has not been
    /// ready for `standdown_after` looks in a row since.
    pub fn peer_is_down(&self) -> bool {
        self.streak.verdict() == Verdict::Down
    }

    /// The peer has been ready for `standdown_after` looks in a row.
    pub fn peer_serves(&self) -> bool {
        self.streak.is_up() && self.streak.good_streak() >= self.standdown_after
    }

    /// Misses since the last ready look: the count toward a take-over.
    pub fn misses_in_a_row(&self) -> u32 {
        self.streak.bad_streak()
    }

    /// Ready looks since the last miss: the count toward a stand-down.
    pub fn ready_in_a_row(&self) -> u32 {
        self.streak.good_streak()
    }

    /// Misses since the watch was made, in a row or not, for `/metrics`.
    pub fn misses_total(&self) -> u64 {
        self.misses_total
    }

    /// Misses in a row that make the peer down (at least 1).
    pub fn takeover_after(&self) -> u32 {
        self.takeover_after
    }

    /// Ready looks in a row that make it serve again (at least 1).
    pub fn standdown_after(&self) -> u32 {
        self.standdown_after
    }

    /// The last look, described for logs and `/health`.
    pub fn last(&self) -> Option<&str> {
        self.last.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::readiness::Readiness;

    fn ready() -> PeerView {
        PeerView::relayed(Readiness::Ready { connections: 4 })
    }

    fn miss() -> PeerView {
        PeerView::relayed(Readiness::NotReady { status: 503 })
    }

    #[test]
    fn three_misses_in_a_row_mean_down_and_one_ready_resets() {
        let mut w = PeerWatch::new(&Timing::default());
        for view in [miss(), miss(), ready(), miss(), miss()] {
            w.observe(&view);
            assert!(!w.peer_is_down());
        }
        w.observe(&miss());
        assert!(w.peer_is_down());
        assert_eq!((w.misses_in_a_row(), w.misses_total()), (3, 5));
        w.observe(&ready());
        assert!(!w.peer_is_down());
        assert!(w.peer_serves());
    }

    #[test]
    fn a_fresh_watch_neither_takes_over_nor_stands_down() {
        let w = PeerWatch::new(&Timing::default());
        assert!(!w.peer_is_down());
        assert!(
            !w.peer_serves(),
            "no look yet: nothing proves the peer serves"
        );
    }
}
