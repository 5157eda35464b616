//! Time in the edge core. An instant is a `u64` of milliseconds since the
//! epoch (named `*_ms`, as the runtime's `Date.now()` gives it); a span is a
//! [`Duration`]. A span passed where an instant goes, or the other way round
//! (`adopt(.., now_ms, max_age)` took two `u64`s once), is then a type
//! error, not a verdict trusted for 50 years.

use std::time::Duration;

/// A span in whole milliseconds, saturating (no span here nears 584 million
/// years).
pub fn millis(span: Duration) -> u64 {
    u64::try_from(span.as_millis()).unwrap_or(u64::MAX)
}

/// The instant `span` after `at_ms`, saturating.
pub fn after(at_ms: u64, span: Duration) -> u64 {
    at_ms.saturating_add(millis(span))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_instants() {
        assert_eq!(millis(Duration::from_millis(1_500)), 1_500);
        assert_eq!(millis(Duration::MAX), u64::MAX);
        assert_eq!(after(1_000, Duration::from_secs(2)), 3_000);
        assert_eq!(after(u64::MAX - 1, Duration::from_secs(2)), u64::MAX);
    }
}
