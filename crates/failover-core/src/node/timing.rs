//! The two clocks and their thresholds. Failover is the standby's clock
//! (`poll_interval` × `takeover_after`); fail-back is the primary's clock
//! (`failback_interval` × `failback_after`).

/// Intervals are in milliseconds; thresholds count consecutive checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// `poll_interval` (30 s): how often the standby looks at the peer's
    /// connector, and how often every node reads its flag and its own
    /// connector's state.
    pub poll_interval_ms: u64,
    /// `takeover_after` (3): peer looks missed in a row before the standby
    /// serves. With a tunnel per node it is also the not-ready looks at our
    /// own running connector that mean its uplink is lost.
    pub takeover_after: u32,
    /// `standdown_after` (1): ready peer looks in a row before the standby
    /// stops its connector again.
    pub standdown_after: u32,
    /// `failback_interval` (60 s): how often a node that fails back checks
    /// its egress; ten of them are the reversal window
    /// ([`Timing::reversal_window_ms`]).
    pub failback_interval_ms: u64,
    /// `failback_after` (2): good egress checks in a row before a stopped
    /// connector starts again; doubled after each reversed fail-back, at
    /// most three times (see [`failback`](super::failback)).
    pub failback_after: u32,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            poll_interval_ms: 30_000,
            takeover_after: 3,
            standdown_after: 1,
            failback_interval_ms: 60_000,
            failback_after: 2,
        }
    }
}

impl Timing {
    /// How long a fail-back must stay in place before a stop ordered by the
    /// peer no longer counts as the tunnel being handed straight back.
    pub fn reversal_window_ms(&self) -> u64 {
        self.failback_interval_ms.saturating_mul(10)
    }
}
