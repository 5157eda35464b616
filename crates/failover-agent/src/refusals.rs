//! Refused orders, logged at most once a minute with a count: anyone who
//! can reach `listen` can send bad tokens as fast as the link allows, and a
//! line for each would bury the decisions in the journal.
//!
//! The first refusal is logged at once (an operator with a typo sees it
//! now); those that follow within the minute are counted and reported with
//! the first refusal after it. Pure: the clock is an argument.

/// One line a minute at most.
pub(crate) const EVERY_MS: u64 = 60_000;

#[derive(Debug, Default)]
pub(crate) struct RefusalLog {
    /// When the last line was written.
    last_line_ms: Option<u64>,
    /// Refusals since that line, not yet reported.
    unreported: u64,
}

impl RefusalLog {
    /// Counts one refusal at `now_ms`; `Some(n)` when a line is due now,
    /// reporting `n` refusals (this one and the unreported before it).
    pub(crate) fn record(&mut self, now_ms: u64) -> Option<u64> {
        self.unreported += 1;
        let due = self
            .last_line_ms
            .is_none_or(|last| now_ms.saturating_sub(last) >= EVERY_MS);
        if !due {
            return None;
        }
        self.last_line_ms = Some(now_ms);
        Some(std::mem::take(&mut self.unreported))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (time of a refusal, the count a line reports then, if any).
    #[test]
    fn one_line_a_minute_with_the_count() {
        let mut log = RefusalLog::default();
        let table: &[(u64, Option<u64>)] = &[
            (0, Some(1)),
            (1, None),
            (500, None),
            (59_999, None),
            (60_000, Some(4)),
            (60_001, None),
            (200_000, Some(2)),
            (260_000, Some(1)),
        ];
        for (now, expected) in table {
            assert_eq!(log.record(*now), *expected, "at {now} ms");
        }
    }

    #[test]
    fn a_flood_costs_one_line_a_minute() {
        let mut log = RefusalLog::default();
        let lines = (0..600_000u64)
            .step_by(10)
            .filter(|now| log.record(*now).is_some())
            .count();
        assert_eq!(lines, 10);
    }
}
