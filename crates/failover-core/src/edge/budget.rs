//! The isolate-wide budget for request bodies held for replay. Each body up
//! to `REPLAY_BODY_MAX_BYTES` is held whole so a retry can resend it; with no
//! overall bound, a hundred concurrent 1 MiB uploads would exhaust the
//! isolate's 128 MB, and Cloudflare would kill it with every request in
//! flight and the health map. Envoy and nginx bound buffering per request
//! and overall; this is the overall bound. A body the budget cannot take is
//! streamed to one origin (never replayed, never truncated), and that is
//! reported at most once a minute.

/// Reports of bodies streamed for the budget are this far apart at least.
pub const REPORT_EVERY_MS: u64 = 60_000;

/// Bytes of request bodies the isolate holds for replay, against
/// `REPLAY_BUFFER_BUDGET_BYTES`, and when a streamed body was last reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayBudget {
    limit: u64,
    held: u64,
    peak: u64,
    /// Bodies streamed for the budget since the last report.
    streamed: u64,
    last_report_ms: Option<u64>,
}

/// What a report of the budget says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverBudget {
    /// The body that did not fit, in bytes.
    pub wanted: u64,
    /// Bytes held for other requests when it came.
    pub held: u64,
    /// The budget.
    pub limit: u64,
    /// Bodies streamed for the budget since the last report, this one
    /// included.
    pub streamed: u64,
}

impl ReplayBudget {
    /// An empty budget of `limit` bytes; 0 holds only empty bodies.
    pub fn new(limit: u64) -> Self {
        ReplayBudget {
            limit,
            held: 0,
            peak: 0,
            streamed: 0,
            last_report_ms: None,
        }
    }

    /// Takes `bytes` from the budget if they fit: true when the body may be
    /// held. Every true must be matched by one `release` of the same bytes.
    pub fn try_hold(&mut self, bytes: u64) -> bool {
        match self.held.checked_add(bytes) {
            Some(total) if total <= self.limit => {
                self.held = total;
                self.peak = self.peak.max(total);
                true
            }
            _ => false,
        }
    }

    /// Gives back bytes a request held, however it ended.
    pub fn release(&mut self, bytes: u64) {
        self.held = self.held.saturating_sub(bytes);
    }

    /// A body of `wanted` bytes did not fit and is streamed instead: a
    /// report when the last one is a minute old or more.
    pub fn streamed_for_budget(&mut self, now_ms: u64, wanted: u64) -> Option<OverBudget> {
        self.streamed = self.streamed.saturating_add(1);
        let due = self
            .last_report_ms
            .is_none_or(|at| now_ms.saturating_sub(at) >= REPORT_EVERY_MS);
        if !due {
            return None;
        }
        self.last_report_ms = Some(now_ms);
        let report = OverBudget {
            wanted,
            held: self.held,
            limit: self.limit,
            streamed: self.streamed,
        };
        self.streamed = 0;
        Some(report)
    }

    /// Bytes held now.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// The most bytes held at once since the isolate started.
    pub fn peak(&self) -> u64 {
        self.peak
    }

    /// The budget, `REPLAY_BUFFER_BUDGET_BYTES`.
    pub fn limit(&self) -> u64 {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_up_to_the_limit_and_releases() {
        let mut b = ReplayBudget::new(1_000);
        assert!(b.try_hold(600));
        assert!(!b.try_hold(600), "1200 > 1000");
        assert!(b.try_hold(400));
        assert_eq!((b.held(), b.peak()), (1_000, 1_000));
        b.release(600);
        assert!(b.try_hold(500));
        b.release(500);
        b.release(400);
        assert_eq!((b.held(), b.peak()), (0, 1_000));
        assert!(!b.try_hold(u64::MAX), "no overflow");
    }

    #[test]
    fn a_zero_budget_holds_only_empty_bodies() {
        let mut b = ReplayBudget::new(0);
        assert!(!b.try_hold(1));
        assert!(b.try_hold(0));
    }

    #[test]
    fn reports_at_most_once_a_minute_with_the_count_since() {
        let mut b = ReplayBudget::new(10);
        assert!(b.try_hold(10));
        let first = b.streamed_for_budget(0, 5).expect("first report");
        assert_eq!((first.wanted, first.held, first.streamed), (5, 10, 1));
        assert!(b.streamed_for_budget(1_000, 5).is_none());
        assert!(b.streamed_for_budget(59_999, 5).is_none());
        let next = b.streamed_for_budget(60_000, 7).expect("a minute later");
        assert_eq!(next.streamed, 3, "the two quiet ones and this one");
    }
}
