//! Whether a request may be sent to another origin after a failed attempt.
//! The rule that matters: never replay what an origin may have processed,
//! and never send a replica a body that is not the whole body.

use crate::edge::classify::Failure;

/// How the request body travels to the origins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyPlan {
    /// No body at all: any number of attempts can be made.
    Empty,
    /// Small enough to hold in memory (known length within the cap): every
    /// attempt gets the same complete bytes.
    Buffered,
    /// Too large, or of unknown length: streamed to the first origin only.
    /// A stream can be read once, so there is nothing whole to replay.
    Streamed,
}

impl BodyPlan {
    /// Chooses the plan from what the request says about its body.
    /// `content_length` is the raw header, if any; `cap` is the most bytes the
    /// Worker agrees to hold for a replay.
    pub fn choose(has_body: bool, content_length: Option<&str>, cap: u64) -> BodyPlan {
        if !has_body {
            return BodyPlan::Empty;
        }
        match content_length.and_then(|v| v.trim().parse::<u64>().ok()) {
            Some(0) => BodyPlan::Empty,
            Some(n) if n <= cap => BodyPlan::Buffered,
            _ => BodyPlan::Streamed,
        }
    }
}

/// Methods that RFC 9110 defines as idempotent: sending one twice has the
/// same effect as once, so a retry is safe whatever happened to the first.
pub fn is_idempotent(method: &str) -> bool {
    matches!(
        method.to_ascii_uppercase().as_str(),
        "GET" | "HEAD" | "OPTIONS" | "PUT" | "DELETE" | "TRACE"
    )
}

/// May a request that failed this way go to the next origin?
pub fn may_try_next(method: &str, body: BodyPlan, failure: Failure) -> bool {
    if body == BodyPlan::Streamed {
        return false;
    }
    is_idempotent(method) || failure.origin_never_saw_request()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAP: u64 = 1024;

    #[test]
    fn body_plans() {
        assert_eq!(BodyPlan::choose(false, None, CAP), BodyPlan::Empty);
        assert_eq!(BodyPlan::choose(false, Some("10"), CAP), BodyPlan::Empty);
        assert_eq!(BodyPlan::choose(true, Some("0"), CAP), BodyPlan::Empty);
        assert_eq!(
            BodyPlan::choose(true, Some("1024"), CAP),
            BodyPlan::Buffered
        );
        assert_eq!(
            BodyPlan::choose(true, Some(" 12 "), CAP),
            BodyPlan::Buffered
        );
        assert_eq!(
            BodyPlan::choose(true, Some("1025"), CAP),
            BodyPlan::Streamed
        );
        assert_eq!(
            BodyPlan::choose(true, None, CAP),
            BodyPlan::Streamed,
            "chunked"
        );
        assert_eq!(BodyPlan::choose(true, Some("-1"), CAP), BodyPlan::Streamed);
        assert_eq!(BodyPlan::choose(true, Some("x"), CAP), BodyPlan::Streamed);
    }

    #[test]
    fn idempotent_methods_retry_on_any_failure() {
        for method in ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "get", "Put"] {
            for failure in [
                Failure::Refused,
                Failure::Network,
                Failure::Timeout,
                Failure::Status(500),
                Failure::Status(530),
            ] {
                assert!(
                    may_try_next(method, BodyPlan::Buffered, failure),
                    "{method} {failure}"
                );
                assert!(
                    may_try_next(method, BodyPlan::Empty, failure),
                    "{method} {failure}"
                );
            }
        }
    }

    #[test]
    fn other_methods_retry_only_when_never_received() {
        for method in ["POST", "PATCH", "CONNECT", "PROPFIND"] {
            for (failure, retry) in [
                (Failure::Refused, true),
                (Failure::Status(521), true),
                (Failure::Status(523), true),
                (Failure::Status(530), true),
                (Failure::Network, false),
                (Failure::Timeout, false),
                (Failure::Status(500), false),
                (Failure::Status(502), false),
                (Failure::Status(520), false),
                (Failure::Status(522), false),
                (Failure::Status(524), false),
            ] {
                assert_eq!(
                    may_try_next(method, BodyPlan::Buffered, failure),
                    retry,
                    "{method} {failure}"
                );
            }
        }
    }

    #[test]
    fn streamed_bodies_are_never_replayed() {
        for method in ["GET", "PUT", "POST"] {
            assert!(!may_try_next(method, BodyPlan::Streamed, Failure::Refused));
            assert!(!may_try_next(
                method,
                BodyPlan::Streamed,
                Failure::Status(530)
            ));
        }
    }
}
