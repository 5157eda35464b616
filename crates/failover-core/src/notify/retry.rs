//! Delivery is at least once: a message is tried until its receiver takes
//! it (any 2xx), tried again after a growing pause while the receiver is
//! unreachable or failing, and given up only when the answer says no retry
//! can ever succeed ([`Refusal`]) or after a day. Receivers drop duplicates
//! by the event's `id`.
//!
//! Which answers are for good, and why (the same request is sent on every
//! try, byte for byte, so an answer about the request itself comes back the
//! same):
//! - 3xx: redirects are never followed (a receiver, or whoever took over
//!   its host, must not steer a signed POST to an address the operator
//!   never configured), so the same request meets the same redirect.
//! - 401, 403: the receiver does not accept the URL's token (revoked, or
//!   wrong); 404, 410: it has no such webhook (deleted; Slack answers 410
//!   for an archived channel). Only a config change heals these.
//! - 400, 413, 422 and every other 4xx: the request is wrong in the
//!   receiver's eyes (a body in the wrong format for it, too large), and
//!   it will be the same request next time.
//!
//! Retried: no answer, 5xx, 408 (the receiver timed out reading: a slow
//! path), 425 (too early: sent again later it is fine), 429 (throttled; its
//! `Retry-After` is honoured, see [`Answer::new`]), and anything outside
//! 200-499 (1xx as a final answer, a made-up 6xx: not a statement about
//! the request).

use std::time::Duration;

/// A message still undelivered this long after it was first tried is
/// dropped (and logged by the shell): a day-old page helps nobody.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(24 * 3600);

/// The longest wait a receiver's `Retry-After` is obeyed for. Chat
/// services throttle for seconds to a minute; a receiver asking for more
/// (or for a year: it is the receiver's word, and a hostile one's) is
/// asked again after ten minutes, and a notification later than that is
/// of little use anyway.
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(600);

/// One try's answer, as the shells saw it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// Its status; None when there was no answer (refused, reset, timed
    /// out, or the request could not be made).
    pub status: Option<u16>,
    /// How long the receiver asked to be left alone, at most
    /// [`RETRY_AFTER_MAX`]; None when it did not ask.
    pub wait: Option<Duration>,
}

impl Answer {
    /// `status` and the answer's `Retry-After` header, if any. The header
    /// is read only on a 429 or a 503 (the statuses RFC 6585 and RFC 9110
    /// give it to), and only as delta-seconds (`120`, the form throttling
    /// receivers send); the HTTP-date form would trust the receiver's
    /// clock to agree with ours and is ignored, as is anything else:
    /// the usual backoff applies then.
    pub fn new(status: Option<u16>, retry_after: Option<&str>) -> Answer {
        let wait = match status {
            Some(429 | 503) => retry_after.and_then(delta_seconds),
            _ => None,
        };
        Answer { status, wait }
    }
}

impl From<Option<u16>> for Answer {
    /// An answer without a `Retry-After`.
    fn from(status: Option<u16>) -> Answer {
        Answer { status, wait: None }
    }
}

/// `Retry-After: 120` as a wait, at most [`RETRY_AFTER_MAX`]; digits only
/// (no sign, no fraction), as RFC 9110 writes delta-seconds. A number too
/// long for a u64 is still a number: the longest wait.
fn delta_seconds(text: &str) -> Option<Duration> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seconds = text.parse::<u64>().unwrap_or(u64::MAX);
    Some(Duration::from_secs(seconds).min(RETRY_AFTER_MAX))
}

/// What one delivery attempt's answer means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Taken: drop it from the outbox.
    Delivered,
    /// Try again later (5xx, 408, 425, 429, no answer).
    Retry,
    /// The receiver refuses this request for good: retrying cannot help.
    Refused(Refusal),
}

/// Why an answer can never turn into a delivery (the module's header says
/// which status is which, and why).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A 3xx: redirects are never followed.
    Redirect,
    /// 401 or 403: the receiver refuses the URL's credentials.
    Unauthorized,
    /// 404 or 410: no such webhook (any more).
    NotFound,
    /// Any other 4xx: the request itself is wrong for this receiver.
    Rejected,
}

impl Refusal {
    /// A short name for structured logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Redirect => "redirect",
            Refusal::Unauthorized => "unauthorized",
            Refusal::NotFound => "not found",
            Refusal::Rejected => "rejected",
        }
    }

    /// What the operator should do, for the log line that drops the
    /// delivery (it names the receiver by its config entry, never its URL).
    pub fn advice(self) -> &'static str {
        match self {
            Refusal::Redirect => {
                "the receiver answered with a redirect, which is never followed (it could carry \
                 the message somewhere else): configure the URL it redirects to"
            }
            Refusal::Unauthorized => {
                "the receiver refuses the URL's credentials (revoked or wrong): set the URL again"
            }
            Refusal::NotFound => {
                "the receiver has no such webhook (deleted, or its channel archived): check the URL"
            }
            Refusal::Rejected => {
                "the receiver rejects the message itself: check the format is the receiver's kind"
            }
        }
    }
}

/// The answer's status (`None`: no answer: refused, reset, timed out).
pub fn outcome(status: Option<u16>) -> Outcome {
    match status {
        Some(200..=299) => Outcome::Delivered,
        Some(300..=399) => Outcome::Refused(Refusal::Redirect),
        Some(408 | 425 | 429) | None => Outcome::Retry,
        Some(401 | 403) => Outcome::Refused(Refusal::Unauthorized),
        Some(404 | 410) => Outcome::Refused(Refusal::NotFound),
        Some(400..=499) => Outcome::Refused(Refusal::Rejected),
        Some(_) => Outcome::Retry,
    }
}

/// When to try again after `failures` failed tries (1 = the first failed),
/// or `None` to give up: `base` doubled per failure, at most `cap`, and
/// never sooner than the receiver asked (`asked`: [`Answer::wait`]).
pub fn next_try_ms(
    first_try_ms: u64,
    failures: u32,
    now_ms: u64,
    base: Duration,
    cap: Duration,
    asked: Option<Duration>,
) -> Option<u64> {
    let elapsed = now_ms.saturating_sub(first_try_ms);
    if u128::from(elapsed) >= GIVE_UP_AFTER.as_millis() {
        return None;
    }
    let doubling = failures.saturating_sub(1).min(20);
    let backoff = base.saturating_mul(1 << doubling).min(cap);
    let pause = asked.map_or(backoff, |asked| backoff.max(asked.min(RETRY_AFTER_MAX)));
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
        use Refusal::*;
        let rows = [
            (Some(200), Outcome::Delivered),
            (Some(204), Outcome::Delivered),
            (Some(299), Outcome::Delivered),
            // Never followed, so never anything else next time.
            (Some(300), Outcome::Refused(Redirect)),
            (Some(301), Outcome::Refused(Redirect)),
            (Some(302), Outcome::Refused(Redirect)),
            (Some(304), Outcome::Refused(Redirect)),
            (Some(307), Outcome::Refused(Redirect)),
            (Some(308), Outcome::Refused(Redirect)),
            (Some(399), Outcome::Refused(Redirect)),
            (Some(400), Outcome::Refused(Rejected)),
            (Some(401), Outcome::Refused(Unauthorized)),
            (Some(403), Outcome::Refused(Unauthorized)),
            (Some(404), Outcome::Refused(NotFound)),
            (Some(405), Outcome::Refused(Rejected)),
            (Some(410), Outcome::Refused(NotFound)),
            (Some(413), Outcome::Refused(Rejected)),
            (Some(422), Outcome::Refused(Rejected)),
            (Some(499), Outcome::Refused(Rejected)),
            (Some(408), Outcome::Retry),
            (Some(425), Outcome::Retry),
            (Some(429), Outcome::Retry),
            (Some(500), Outcome::Retry),
            (Some(502), Outcome::Retry),
            (Some(503), Outcome::Retry),
            (Some(599), Outcome::Retry),
            (Some(100), Outcome::Retry),
            (Some(999), Outcome::Retry),
            (None, Outcome::Retry),
        ];
        for (status, want) in rows {
            assert_eq!(outcome(status), want, "{status:?}");
        }
    }

    #[test]
    fn retry_after_is_read_on_429_and_503_as_seconds_bounded() {
        let s = Duration::from_secs;
        let rows = [
            (Some(429), Some("120"), Some(s(120))),
            (Some(429), Some(" 7 "), Some(s(7))),
            (Some(429), Some("0"), Some(s(0))),
            (Some(503), Some("30"), Some(s(30))),
            // A hostile or confused receiver: bounded, or ignored.
            (Some(429), Some("86400"), Some(RETRY_AFTER_MAX)),
            (
                Some(429),
                Some("99999999999999999999999999"),
                Some(RETRY_AFTER_MAX),
            ),
            (Some(429), Some("-5"), None),
            (Some(429), Some("1.5"), None),
            (Some(429), Some("soon"), None),
            (Some(429), Some(""), None),
            (Some(429), Some("Wed, 21 Oct 2015 07:28:00 GMT"), None),
            (Some(429), None, None),
            // Not a status that carries it.
            (Some(500), Some("120"), None),
            (Some(302), Some("120"), None),
            (None, Some("120"), None),
        ];
        for (status, header, want) in rows {
            assert_eq!(
                Answer::new(status, header).wait,
                want,
                "{status:?} {header:?}"
            );
        }
    }

    #[test]
    fn a_receivers_wait_lengthens_the_pause_and_never_shortens_it() {
        let next =
            |failures, asked| next_try_ms(0, failures, 1000, BASE, CAP, asked).unwrap() - 1000;
        assert_eq!(next(1, Some(Duration::from_secs(120))), 120_000);
        assert_eq!(next(1, Some(Duration::from_secs(1))), 2_000, "our pause");
        assert_eq!(next(5, Some(Duration::ZERO)), 30_000);
        assert_eq!(
            next(1, Some(Duration::from_secs(u64::MAX))),
            600_000,
            "bounded here too"
        );
        // A day is still a day.
        let day = 24 * 3600 * 1000;
        assert_eq!(
            next_try_ms(0, 1, day, BASE, CAP, Some(Duration::from_secs(5))),
            None
        );
    }

    #[test]
    fn pauses_double_up_to_the_cap() {
        let pauses: Vec<u64> = (1..=6)
            .map(|n| next_try_ms(0, n, 1000, BASE, CAP, None).unwrap() - 1000)
            .collect();
        assert_eq!(pauses, [2000, 4000, 8000, 16000, 30000, 30000]);
        assert_eq!(next_try_ms(0, u32::MAX, 0, BASE, CAP, None), Some(30_000));
    }

    #[test]
    fn a_receiver_down_for_a_minute_is_retried_within_the_cap_of_recovering() {
        // Failures at each retry for 60 s: the first try after 60 s comes
        // at most CAP later.
        let (mut now, mut failures) = (0u64, 0u32);
        while now < 60_000 {
            failures += 1;
            now = next_try_ms(0, failures, now, BASE, CAP, None).unwrap();
        }
        assert!(now <= 60_000 + 30_000, "{now}");
    }

    #[test]
    fn gives_up_after_a_day() {
        let day = 24 * 3600 * 1000;
        assert!(next_try_ms(0, 3, day - 1, BASE, CAP, None).is_some());
        assert_eq!(next_try_ms(0, 3, day, BASE, CAP, None), None);
    }
}
