//! Delivery is at least once: a message is tried until its receiver takes
//! it (any 2xx), tried again after a growing pause while the receiver is
//! unreachable or failing, and given up only when the receiver says the
//! request itself is wrong (a 4xx other than 408, 425, 429) or after a day.
//! Receivers drop duplicates by the event's `id`.

use std::time::Duration;

/// A message still undelivered this long after it was first tried is
/// dropped (and logged by the shell): a day-old page helps nobody.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(24 * 3600);

/// What one delivery attempt's answer means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Taken: drop it from the outbox.
    Delivered,
    /// Try again later (5xx, 408, 425, 429, no answer).
    Retry,
    /// The receiver refuses this request for good (wrong URL, bad auth):
    /// retrying cannot help.
    Refused,
}

/// The answer's status (`None`: no answer: refused, reset, timed out).
pub fn outcome(status: Option<u16>) -> Outcome {
    match status {
        Some(200..=299) => Outcome::Delivered,
        Some(408 | 425 | 429) | None => Outcome::Retry,
        Some(400..=499) => Outcome::Refused,
        Some(_) => Outcome::Retry,
    }
}

/// When to try again after `failures` failed tries (1 = the first failed),
/// or `None` to give up: `base` doubled per failure, at most `cap`.
pub fn next_try_ms(
    first_try_ms: u64,
    failures: u32,
    now_ms: u64,
    base: Duration,
    cap: Duration,
) -> Option<u64> {
    let elapsed = now_ms.saturating_sub(first_try_ms);
    if u128::from(elapsed) >= GIVE_UP_AFTER.as_millis() {
        return None;
    }
    let doubling = failures.saturating_sub(1).min(20);
    let pause = base.saturating_mul(1 << doubling).min(cap);
    let pause_ms = u64::try_from(pause.as_millis()).unwrap_or(u64::MAX);
    Some(now_ms.saturating_add(pause_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: Duration = Duration::from_secs(2);
    const CAP: Duration = Duration::from_secs(30);

    #[test]
    fn statuses() {
        let rows = [
            (Some(200), Outcome::Delivered),
            (Some(204), Outcome::Delivered),
            (Some(301), Outcome::Retry),
            (Some(404), Outcome::Refused),
            (Some(401), Outcome::Refused),
            (Some(429), Outcome::Retry),
            (Some(408), Outcome::Retry),
            (Some(500), Outcome::Retry),
            (Some(503), Outcome::Retry),
            (None, Outcome::Retry),
        ];
        for (status, want) in rows {
            assert_eq!(outcome(status), want, "{status:?}");
        }
    }

    #[test]
    fn pauses_double_up_to_the_cap() {
        let pauses: Vec<u64> = (1..=6)
            .map(|n| next_try_ms(0, n, 1000, BASE, CAP).unwrap() - 1000)
            .collect();
        assert_eq!(pauses, [2000, 4000, 8000, 16000, 30000, 30000]);
        assert_eq!(next_try_ms(0, u32::MAX, 0, BASE, CAP), Some(30_000));
    }

    #[test]
    fn a_receiver_down_for_a_minute_is_retried_within_the_cap_of_recovering() {
        // Failures at each retry for 60 s: the first try after 60 s comes
        // at most CAP later.
        let (mut now, mut failures) = (0u64, 0u32);
        while now < 60_000 {
            failures += 1;
            now = next_try_ms(0, failures, now, BASE, CAP).unwrap();
        }
        assert!(now <= 60_000 + 30_000, "{now}");
    }

    #[test]
    fn gives_up_after_a_day() {
        let day = 24 * 3600 * 1000;
        assert!(next_try_ms(0, 3, day - 1, BASE, CAP).is_some());
        assert_eq!(next_try_ms(0, 3, day, BASE, CAP), None);
    }
}
