//! Starts that did not stick. A connector that exits right after each
//! start (a bad credentials file, a crash-looping cloudflared, a status
//! command that never says "running") used to be started again at every
//! look: a fail-back or take-over decision each poll, each told to the
//! operator's webhook and written to the history, which then held nothing
//! else (2,880 messages a day at the defaults). Here a start counts as
//! failed when the first look after it finds the connector not running.
//! One failed start is retried at once, as before (a stop between the
//! start and the look looks the same); after `n` ≥ 2 in a row the next
//! one waits `poll_interval` × 2^(n−2), at most ×16 (8 minutes at the
//! defaults: about 180 starts a day). A look that finds it running ends
//! the streak.

/// The pause doubles at most this many times: 1, 2, 4, 8, 16 polls.
const MAX_DOUBLINGS: u32 = 4;

/// The start streak of one node's connector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartBackoff {
    poll_ms: u64,
    /// Starts in a row that the next look found not running.
    failed_in_a_row: u32,
    /// A start was carried out and no look has come since.
    awaiting_look: bool,
    /// When the last failed start was seen, and the pause that follows it.
    paused_from_ms: Option<u64>,
}

impl StartBackoff {
    /// No start yet; pauses are counted in `poll_ms` (`poll_interval`).
    pub fn new(poll_ms: u64) -> StartBackoff {
        StartBackoff {
            poll_ms,
            failed_in_a_row: 0,
            awaiting_look: false,
            paused_from_ms: None,
        }
    }

    /// The connector was just started (a decision, an order, a handover).
    pub fn started(&mut self) {
        self.awaiting_look = true;
    }

    /// A look at the local connector's process at `now_ms`.
    pub fn observed(&mut self, now_ms: u64, running: bool) {
        if running {
            self.failed_in_a_row = 0;
            self.paused_from_ms = None;
        } else if self.awaiting_look {
            self.failed_in_a_row = self.failed_in_a_row.saturating_add(1);
            self.paused_from_ms = Some(now_ms);
        }
        self.awaiting_look = false;
    }

    /// Starts in a row the first look after found not running.
    pub fn failed_in_a_row(&self) -> u32 {
        self.failed_in_a_row
    }

    /// How long the next start waits after the last failed one: none
    /// before the first failure.
    pub fn pause_ms(&self) -> u64 {
        match self.failed_in_a_row {
            0 | 1 => 0,
            n => self.poll_ms.saturating_mul(1 << (n - 2).min(MAX_DOUBLINGS)),
        }
    }

    /// Whether a start must wait at `now_ms`.
    pub fn holds(&self, now_ms: u64) -> bool {
        self.paused_from_ms
            .is_some_and(|from| now_ms < from.saturating_add(self.pause_ms()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLL: u64 = 30_000;

    #[test]
    fn the_pause_doubles_per_failed_start_up_to_sixteen_polls() {
        let mut b = StartBackoff::new(POLL);
        assert_eq!(b.pause_ms(), 0);
        let mut now = POLL;
        b.started();
        b.observed(now, false);
        assert_eq!(b.pause_ms(), 0, "one failed start is retried at once");
        assert!(!b.holds(now));
        for (n, polls) in [(2, 1), (3, 2), (4, 4), (5, 8), (6, 16), (7, 16), (40, 16)] {
            while b.failed_in_a_row() < n {
                b.started();
                now += POLL;
                b.observed(now, false);
            }
            assert_eq!(b.pause_ms(), polls * POLL, "{n} failed starts");
            assert!(b.holds(now + polls * POLL - 1));
            assert!(!b.holds(now + polls * POLL));
        }
    }

    #[test]
    fn a_look_that_finds_it_running_ends_the_streak() {
        let mut b = StartBackoff::new(POLL);
        b.started();
        b.observed(POLL, false);
        b.started();
        b.observed(2 * POLL, false);
        assert!(b.holds(2 * POLL + 1));
        b.started();
        b.observed(5 * POLL, true);
        assert_eq!(b.failed_in_a_row(), 0);
        assert!(!b.holds(5 * POLL));
    }

    #[test]
    fn only_the_first_look_after_a_start_judges_it() {
        let mut b = StartBackoff::new(POLL);
        // Not running, with no start since: a stop, not a failed start.
        b.observed(POLL, false);
        assert_eq!(b.failed_in_a_row(), 0);
        b.started();
        b.observed(2 * POLL, false);
        b.observed(3 * POLL, false);
        b.observed(4 * POLL, false);
        assert_eq!(b.failed_in_a_row(), 1, "one start, one failure");
    }
}
