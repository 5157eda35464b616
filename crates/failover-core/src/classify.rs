//! What counts as a failed attempt. A failure is a reason to try another
//! origin; anything else is the origin's answer and goes to the client as is.

use std::fmt;

/// Why one attempt against one origin did not produce a usable answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The connection was never made (refused, DNS failure): the origin
    /// cannot have seen the request.
    Refused,
    /// The connection broke at some other point: the origin may have seen,
    /// and acted on, the request.
    Network,
    /// No response headers within the attempt timeout.
    Timeout,
    /// The origin (or Cloudflare in front of it) answered with a 5xx.
    Status(u16),
}

impl Failure {
    /// True when the failure proves the origin never received the request, so
    /// that even a POST may go to the next origin. 521 (origin refused the
    /// edge's connection), 523 (origin unreachable) and 530 (a Tunnel with no
    /// connector, error 1033) are Cloudflare's equivalents of "refused".
    pub fn origin_never_saw_request(self) -> bool {
        matches!(self, Failure::Refused | Failure::Status(521 | 523 | 530))
    }

    /// A short stable label for logs and the status endpoint.
    pub fn label(self) -> String {
        match self {
            Failure::Refused => "refused".to_string(),
            Failure::Network => "network".to_string(),
            Failure::Timeout => "timeout".to_string(),
            Failure::Status(code) => format!("status {code}"),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// Classifies a response status. Every 5xx is a failure, which covers
/// Cloudflare's origin errors 520-527 and 530 (a down Tunnel). 4xx, 404
/// included, is an answer.
pub fn classify_status(status: u16) -> Option<Failure> {
    (500..=599)
        .contains(&status)
        .then_some(Failure::Status(status))
}

/// Classifies the error a runtime's `fetch` threw. Only errors that name a
/// refused connection or a failed name lookup prove the request never left;
/// anything else (reset, lost connection, TLS failure) might have happened
/// after the origin read the request, so it is `Network`.
pub fn classify_fetch_error(message: &str) -> Failure {
    let lower = message.to_ascii_lowercase();
    const NEVER_CONNECTED: [&str; 6] = [
        "connection refused",
        "econnrefused",
        "dns lookup",
        "enotfound",
        "name resolution",
        "no such host",
    ];
    if NEVER_CONNECTED.iter().any(|needle| lower.contains(needle)) {
        Failure::Refused
    } else {
        Failure::Network
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        let table = [
            (200, None),
            (204, None),
            (301, None),
            (404, None),
            (429, None),
            (499, None),
            (500, Some(Failure::Status(500))),
            (502, Some(Failure::Status(502))),
            (503, Some(Failure::Status(503))),
            (520, Some(Failure::Status(520))),
            (522, Some(Failure::Status(522))),
            (524, Some(Failure::Status(524))),
            (530, Some(Failure::Status(530))),
            (599, Some(Failure::Status(599))),
        ];
        for (status, expected) in table {
            assert_eq!(classify_status(status), expected, "status {status}");
        }
    }

    #[test]
    fn fetch_errors() {
        let table = [
            ("connect(): Connection refused", Failure::Refused),
            ("TypeError: fetch failed: ECONNREFUSED", Failure::Refused),
            ("DNS lookup failed", Failure::Refused),
            ("upstream sent dns-prefetch-control", Failure::Network),
            ("getaddrinfo ENOTFOUND example.invalid", Failure::Refused),
            ("Network connection lost.", Failure::Network),
            ("peer reset the connection", Failure::Network),
            ("", Failure::Network),
        ];
        for (message, expected) in table {
            assert_eq!(classify_fetch_error(message), expected, "{message:?}");
        }
    }

    #[test]
    fn never_saw_request() {
        assert!(Failure::Refused.origin_never_saw_request());
        for code in [521, 523, 530] {
            assert!(Failure::Status(code).origin_never_saw_request(), "{code}");
        }
        for f in [
            Failure::Network,
            Failure::Timeout,
            Failure::Status(500),
            Failure::Status(502),
            Failure::Status(520),
            Failure::Status(522),
            Failure::Status(524),
        ] {
            assert!(!f.origin_never_saw_request(), "{f}");
        }
    }
}
