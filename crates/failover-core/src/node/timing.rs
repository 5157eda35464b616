//! The two clocks and their thresholds. Failover is the standby's clock
//! (`poll_interval` × `takeover_after`); fail-back is the primary's clock
//! (`failback_interval` × `failback_after`).

/// Intervals are in milliseconds; thresholds count consecutive checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    pub poll_interval_ms: u64,
    pub takeover_after: u32,
    pub standdown_after: u32,
    pub failback_interval_ms: u64,
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
