//! One client request's walk over the origins: which origin to try first,
//! and after each failure whether to try the next one, hand the failed
//! response to the client, or answer with an error of our own.

use crate::edge::classify::Failure;
use crate::edge::replay::{may_try_next, BodyPlan};

/// What the client reads when Access turned the Worker away.
const ACCESS_LOGIN_MESSAGE: &str =
    "the origin asked for an Access login: its service token is missing or wrong";

/// What to do after an attempt failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AfterFailure {
    /// Send the request to this origin (an index into the configured list).
    TryOrigin(usize),
    /// Retrying is not allowed: give the client the failed attempt's own
    /// response (only ever for a `Failure::Status`).
    PassThrough,
    /// Answer with this status and one-line text; it names no origin URL.
    GiveUp {
        /// 504 when time ran out (every attempt, or the one that could
        /// not be retried, timed out), 502 otherwise.
        status: u16,
        /// One line for the client.
        message: &'static str,
    },
    /// No origin is left to try, and this one answered with an HTTP 5xx of
    /// its own (the last such answer in the walk): the client gets that
    /// answer as the app sent it (its JSON error, its 503 maintenance page
    /// with `Retry-After`), not an error of ours. The shell keeps the
    /// response of every attempt whose failure `keeps_answer`.
    AppAnswer(usize),
}

/// The state of one request's attempts.
#[derive(Clone, Debug)]
pub struct Attempts {
    order: Vec<usize>,
    next: usize,
    body: BodyPlan,
    all_timed_out: bool,
    all_access_login: bool,
    method: String,
    /// The origin whose HTTP 5xx of its own came last, if any.
    app_answer: Option<usize>,
}

impl Attempts {
    /// `order` is the origins in the order to try them (see
    /// `HealthMap::attempt_order`); it must not be empty.
    pub fn new(order: Vec<usize>, method: &str, body: BodyPlan) -> Attempts {
        Attempts {
            order,
            next: 0,
            body,
            all_timed_out: true,
            all_access_login: true,
            method: method.to_string(),
            app_answer: None,
        }
    }

    /// The first origin to try, or None if there are no origins.
    pub fn first(&mut self) -> Option<usize> {
        let first = self.order.first().copied();
        if first.is_some() {
            self.next = 1;
        }
        first
    }

    /// Whether the shell must keep the failed attempt's response: an HTTP
    /// 5xx the app made may yet be the client's answer (`AppAnswer`).
    pub fn keeps_answer(failure: Failure) -> bool {
        failure.is_app_error()
    }

    /// Decides what follows a failed attempt (against the origin `first`
    /// or the last `TryOrigin` named).
    pub fn after_failure(&mut self, failure: Failure) -> AfterFailure {
        if Attempts::keeps_answer(failure) {
            self.app_answer = self
                .next
                .checked_sub(1)
                .and_then(|i| self.order.get(i).copied());
        }
        self.all_timed_out &= failure == Failure::Timeout;
        self.all_access_login &= failure == Failure::AccessLogin;
        if !may_try_next(&self.method, self.body, failure) {
            return match failure {
                Failure::Status(_) => AfterFailure::PassThrough,
                Failure::Timeout => AfterFailure::GiveUp {
                    status: 504,
                    message: "the origin did not answer in time",
                },
                Failure::Refused | Failure::Network => AfterFailure::GiveUp {
                    status: 502,
                    message: "the origin could not be reached",
                },
                // Not the login page itself: the client cannot log in to
                // Access on the Worker's behalf.
                Failure::AccessLogin => AfterFailure::GiveUp {
                    status: 502,
                    message: ACCESS_LOGIN_MESSAGE,
                },
            };
        }
        if let Some(origin) = self.order.get(self.next).copied() {
            self.next += 1;
            return AfterFailure::TryOrigin(origin);
        }
        // An app's own error page beats an error of ours, whatever the other
        // origins did.
        if let Some(origin) = self.app_answer {
            return AfterFailure::AppAnswer(origin);
        }
        if self.all_timed_out {
            return AfterFailure::GiveUp {
                status: 504,
                message: "no origin answered in time",
            };
        }
        // Every origin sent us to Access: a configuration fault worth
        // naming (the same token is usually set for all of them).
        if self.all_access_login {
            return AfterFailure::GiveUp {
                status: 502,
                message: ACCESS_LOGIN_MESSAGE,
            };
        }
        AfterFailure::GiveUp {
            status: 502,
            message: "no origin is available",
        }
    }

    /// How many attempts have been started so far.
    pub fn started(&self) -> usize {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn give_up(status: u16) -> impl Fn(&AfterFailure) -> bool {
        move |a| matches!(a, AfterFailure::GiveUp { status: s, .. } if *s == status)
    }

    #[test]
    fn get_walks_every_origin_then_gives_502() {
        let mut a = Attempts::new(vec![0, 1, 2], "GET", BodyPlan::Empty);
        assert_eq!(a.first(), Some(0));
        assert_eq!(
            a.after_failure(Failure::Status(530)),
            AfterFailure::TryOrigin(1)
        );
        assert_eq!(
            a.after_failure(Failure::Timeout),
            AfterFailure::TryOrigin(2)
        );
        assert!(give_up(502)(&a.after_failure(Failure::Network)));
        assert_eq!(a.started(), 3);
    }

    #[test]
    fn every_origin_erring_gives_the_last_apps_own_answer() {
        let mut a = Attempts::new(vec![2, 0, 1], "GET", BodyPlan::Empty);
        assert_eq!(a.first(), Some(2));
        assert_eq!(
            a.after_failure(Failure::Status(500)),
            AfterFailure::TryOrigin(0)
        );
        assert_eq!(
            a.after_failure(Failure::Status(503)),
            AfterFailure::TryOrigin(1)
        );
        assert_eq!(
            a.after_failure(Failure::Status(500)),
            AfterFailure::AppAnswer(1)
        );
    }

    #[test]
    fn an_apps_answer_beats_our_error_whatever_came_after() {
        // Cloudflare's own 52x/530, timeouts and refusals are not answers
        // of the app: the one app 5xx in the walk is.
        for last in [
            Failure::Status(530),
            Failure::Status(522),
            Failure::Timeout,
            Failure::Refused,
            Failure::AccessLogin,
        ] {
            let mut a = Attempts::new(vec![0, 1], "GET", BodyPlan::Empty);
            a.first();
            assert_eq!(
                a.after_failure(Failure::Status(502)),
                AfterFailure::TryOrigin(1)
            );
            assert_eq!(a.after_failure(last), AfterFailure::AppAnswer(0), "{last}");
        }
    }

    #[test]
    fn only_cloudflares_errors_give_our_502() {
        let mut a = Attempts::new(vec![0, 1], "GET", BodyPlan::Empty);
        a.first();
        assert_eq!(
            a.after_failure(Failure::Status(530)),
            AfterFailure::TryOrigin(1)
        );
        assert!(give_up(502)(&a.after_failure(Failure::Status(521))));
        assert!(!Attempts::keeps_answer(Failure::Status(530)));
        assert!(Attempts::keeps_answer(Failure::Status(500)));
        assert!(Attempts::keeps_answer(Failure::Status(502)));
    }

    #[test]
    fn all_timeouts_give_504() {
        let mut a = Attempts::new(vec![1, 0], "GET", BodyPlan::Empty);
        assert_eq!(a.first(), Some(1));
        assert_eq!(
            a.after_failure(Failure::Timeout),
            AfterFailure::TryOrigin(0)
        );
        assert!(give_up(504)(&a.after_failure(Failure::Timeout)));
    }

    #[test]
    fn post_gets_the_primarys_own_5xx() {
        let mut a = Attempts::new(vec![0, 1], "POST", BodyPlan::Buffered);
        a.first();
        assert_eq!(
            a.after_failure(Failure::Status(500)),
            AfterFailure::PassThrough
        );
        assert_eq!(a.started(), 1, "the replica never got it");
    }

    #[test]
    fn post_timeout_is_504_without_replay() {
        let mut a = Attempts::new(vec![0, 1], "POST", BodyPlan::Buffered);
        a.first();
        assert!(give_up(504)(&a.after_failure(Failure::Timeout)));
        assert_eq!(a.started(), 1);
    }

    #[test]
    fn post_moves_on_when_the_tunnel_is_down() {
        let mut a = Attempts::new(vec![0, 1], "POST", BodyPlan::Buffered);
        a.first();
        assert_eq!(
            a.after_failure(Failure::Status(530)),
            AfterFailure::TryOrigin(1)
        );
        assert!(give_up(502)(&a.after_failure(Failure::Refused)));
    }

    #[test]
    fn streamed_body_is_never_replayed() {
        let mut a = Attempts::new(vec![0, 1], "PUT", BodyPlan::Streamed);
        a.first();
        assert!(give_up(502)(&a.after_failure(Failure::Refused)));
        assert_eq!(a.started(), 1);
    }

    #[test]
    fn single_origin() {
        let mut a = Attempts::new(vec![0], "GET", BodyPlan::Empty);
        assert_eq!(a.first(), Some(0));
        assert!(give_up(502)(&a.after_failure(Failure::Status(520))));
        let mut a = Attempts::new(vec![0], "GET", BodyPlan::Empty);
        a.first();
        assert_eq!(
            a.after_failure(Failure::Status(502)),
            AfterFailure::AppAnswer(0)
        );
    }

    #[test]
    fn access_login_everywhere_is_named() {
        let mut a = Attempts::new(vec![0, 1], "GET", BodyPlan::Empty);
        a.first();
        assert_eq!(
            a.after_failure(Failure::AccessLogin),
            AfterFailure::TryOrigin(1)
        );
        assert_eq!(
            a.after_failure(Failure::AccessLogin),
            AfterFailure::GiveUp {
                status: 502,
                message: ACCESS_LOGIN_MESSAGE
            }
        );
    }

    #[test]
    fn access_login_after_another_failure_is_no_origin_available() {
        let mut a = Attempts::new(vec![0, 1], "GET", BodyPlan::Empty);
        a.first();
        a.after_failure(Failure::Status(530));
        assert_eq!(
            a.after_failure(Failure::AccessLogin),
            AfterFailure::GiveUp {
                status: 502,
                message: "no origin is available"
            }
        );
    }

    #[test]
    fn post_moves_on_from_an_access_login() {
        // Access stopped it, so the primary never processed the POST.
        let mut a = Attempts::new(vec![0, 1], "POST", BodyPlan::Buffered);
        a.first();
        assert_eq!(
            a.after_failure(Failure::AccessLogin),
            AfterFailure::TryOrigin(1)
        );
    }

    #[test]
    fn streamed_access_login_is_a_502_not_the_login_page() {
        let mut a = Attempts::new(vec![0, 1], "PUT", BodyPlan::Streamed);
        a.first();
        assert_eq!(
            a.after_failure(Failure::AccessLogin),
            AfterFailure::GiveUp {
                status: 502,
                message: ACCESS_LOGIN_MESSAGE
            }
        );
        assert_eq!(a.started(), 1);
    }

    #[test]
    fn no_origins() {
        let mut a = Attempts::new(vec![], "GET", BodyPlan::Empty);
        assert_eq!(a.first(), None);
    }
}
