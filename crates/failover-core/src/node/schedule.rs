//! When each of the node's checks is next due. The node owns its clocks, as
//! quinn-proto's connection does: the driver asks [`Schedule::next_due_ms`],
//! sleeps until then, takes the due checks, runs them and feeds the results
//! back. The simulation drives the very same schedule on a virtual clock.

/// One kind of look the driver takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// The local app's health URL (`[app]`).
    App,
    /// The maintenance flag, the connector's process state and, in the
    /// tunnel-per-node topology, its readiness.
    Local,
    /// The peer's connector readiness (standby).
    Peer,
    /// Egress to Cloudflare, directly (primary, and a node with its own
    /// tunnel).
    Egress,
}

impl Check {
    /// The order a turn runs the due checks in: the app and the local state
    /// first, so that a decision about the peer or egress sees them fresh.
    pub const ALL: [Check; 4] = [Check::App, Check::Local, Check::Peer, Check::Egress];

    fn index(self) -> usize {
        match self {
            Check::App => 0,
            Check::Local => 1,
            Check::Peer => 2,
            Check::Egress => 3,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Clock {
    every_ms: u64,
    next_ms: u64,
}

/// A fixed-rate clock per check; a late turn does not make up for the
/// missed ticks. A turn late by less than an interval keeps the check on
/// its grid; a later one restarts it one interval from now, as tokio's
/// `MissedTickBehavior::Delay` does.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Schedule {
    clocks: [Option<Clock>; 4],
}

impl Schedule {
    /// `check` runs every `every_ms`, first at `first_ms`.
    pub fn every(mut self, check: Check, every_ms: u64, first_ms: u64) -> Self {
        self.clocks[check.index()] = Some(Clock {
            every_ms: every_ms.max(1),
            next_ms: first_ms,
        });
        self
    }

    /// The earliest time a check is due (`u64::MAX` with none scheduled).
    pub fn next_due_ms(&self) -> u64 {
        self.clocks
            .iter()
            .flatten()
            .map(|c| c.next_ms)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The checks due at `now_ms`, in [`Check::ALL`] order; each one's next
    /// time moves on by its interval (or to one interval from now, when the
    /// turn ran late).
    pub fn take_due(&mut self, now_ms: u64) -> Vec<Check> {
        let mut due = Vec::new();
        for check in Check::ALL {
            if let Some(clock) = &mut self.clocks[check.index()] {
                if clock.next_ms <= now_ms {
                    clock.next_ms = clock.next_ms.saturating_add(clock.every_ms);
                    if clock.next_ms <= now_ms {
                        clock.next_ms = now_ms.saturating_add(clock.every_ms);
                    }
                    due.push(check);
                }
            }
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rate_with_late_turns_delayed_not_bunched() {
        let mut s =
            Schedule::default()
                .every(Check::Local, 1_000, 0)
                .every(Check::Egress, 3_000, 500);
        assert_eq!(s.next_due_ms(), 0);
        assert_eq!(s.take_due(0), vec![Check::Local]);
        assert_eq!(s.next_due_ms(), 500);
        assert_eq!(s.take_due(500), vec![Check::Egress]);
        assert_eq!(s.take_due(999), vec![]);
        assert_eq!(s.take_due(1_000), vec![Check::Local]);
        // A turn 2.5 s late: each check once, then one interval from now.
        assert_eq!(s.take_due(4_500), vec![Check::Local, Check::Egress]);
        assert_eq!(s.next_due_ms(), 5_500);
        assert_eq!(s.take_due(5_500), vec![Check::Local]);
    }

    #[test]
    fn nothing_scheduled_is_never_due() {
        let mut s = Schedule::default();
        assert_eq!(s.next_due_ms(), u64::MAX);
        assert!(s.take_due(u64::MAX - 1).is_empty());
    }
}
