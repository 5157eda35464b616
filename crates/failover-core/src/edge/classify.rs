//! What counts as a failed attempt. A failure is a reason to try another
//! origin; anything else is the origin's answer and goes to the client as is.
//! The fast path's copy of the response rules is src/js/rules.mjs; both are
//! held to tests/fixtures/fast-path.json (tests/fast_path_fixture.rs here,
//! tests/lease.test.mjs there).

use std::fmt;

use crate::edge::target::authority;

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
    /// Cloudflare Access in front of the origin redirected to its login page:
    /// our service token is missing or wrong, and Access stopped the request
    /// before the origin saw it.
    AccessLogin,
}

impl Failure {
    /// True when the failure is evidence against the origin's whole node,
    /// not its app: a 530 is Cloudflare saying the Tunnel has no connector
    /// (error 1033), and a node's connector serves every origin on it, in
    /// every site. Its own 5xx, a timeout or a refusal stays the origin's.
    pub fn against_the_node(self) -> bool {
        self == Failure::Status(530)
    }

    /// True when the failure proves the origin never received the request, so
    /// that even a POST may go to the next origin. 521 (origin refused the
    /// edge's connection), 523 (origin unreachable) and 530 (a Tunnel with no
    /// connector, error 1033) are Cloudflare's equivalents of "refused"; an
    /// Access login redirect comes from Access, which let nothing through.
    pub fn origin_never_saw_request(self) -> bool {
        matches!(
            self,
            Failure::Refused | Failure::AccessLogin | Failure::Status(521 | 523 | 530)
        )
    }

    /// True for an HTTP 5xx the app (or a connector in front of it)
    /// generated, as opposed to Cloudflare's own origin errors (520-527)
    /// and a Tunnel with no connector (530). Such an answer fails the
    /// attempt over, but it is one page's answer, not a verdict on the
    /// origin: a bad query or a bug in one handler must not let any client
    /// mark every origin down. Only a health probe that agrees does
    /// (`HealthMap::record_confirmation`).
    pub fn is_app_error(self) -> bool {
        matches!(self, Failure::Status(code) if !is_cloudflare_status(code))
    }

    /// True when the failure may be the request's own rather than the
    /// origin's, so that a probe of the health path must agree before the
    /// origin is called down (`HealthMap::record_confirmation`): the app's
    /// own 5xx, and a timeout (one slow page, a report or a long poll,
    /// would otherwise mark the origin down, and, replayed, every origin).
    /// A hung origin meanwhile is skipped by `SILENCE_MS`, and its probe
    /// times out too. Refusals, broken connections, Cloudflare's 52x/530
    /// and Access logins are about the origin: verdicts at once.
    pub fn needs_confirmation(self) -> bool {
        self.is_app_error() || self == Failure::Timeout
    }

    /// A short stable label for logs and the status endpoint.
    pub fn label(self) -> String {
        match self {
            Failure::Refused => "refused".to_string(),
            Failure::Network => "network".to_string(),
            Failure::Timeout => "timeout".to_string(),
            Failure::Status(code) => format!("status {code}"),
            Failure::AccessLogin => "access login".to_string(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// Cloudflare's own answers about an origin it could not use: 520-527
/// (origin errors: refused, unreachable, timed out, TLS) and 530 (a Tunnel
/// with no connector, error 1033). They are evidence about the connection,
/// not about one page.
pub fn is_cloudflare_status(status: u16) -> bool {
    matches!(status, 520..=527 | 530)
}

/// Classifies a response status. Every 5xx is a failure, which covers
/// Cloudflare's origin errors 520-527 and 530 (a down Tunnel). 4xx, 404
/// included, is an answer. So is 101 (a WebSocket). A status no Response
/// can carry to the client fails like a 5xx of the app's: an interim 1xx
/// (workerd's fetch resolves with an origin's 100 Continue or 103 Early
/// Hints) and anything above 599.
pub fn classify_status(status: u16) -> Option<Failure> {
    let forwardable = status == 101 || (200..=499).contains(&status);
    (!forwardable).then_some(Failure::Status(status))
}

// What src/js/attempt.mjs resolves to instead of a Response, named the same
// in src/js/rules.mjs. Any other non-Response is the fetch error's message,
// for `classify_fetch_error`.

/// Our own timer fired before the response headers came: `Failure::Timeout`.
pub const ATTEMPT_TIMED_OUT: f64 = 0.0;
/// `fetch` threw a TypeError: the runtime would not send the request at all,
/// which is the request's fault, not the origin's.
pub const ATTEMPT_REFUSED: f64 = 1.0;

/// Classifies a response from its status and `Location` header: a 5xx (see
/// `classify_status`), or a redirect to an Access login page. The Worker
/// holds no Access session, so following that redirect could never reach
/// the origin; for the client it would be a login page for a host it never
/// asked for.
pub fn classify_response(status: u16, location: Option<&str>) -> Option<Failure> {
    classify_status(status).or_else(|| {
        (matches!(status, 302 | 303 | 307) && location.is_some_and(is_access_login))
            .then_some(Failure::AccessLogin)
    })
}

/// The domain under which Cloudflare Access serves every team's login page.
const ACCESS_LOGIN_DOMAIN: &str = ".cloudflareaccess.com";

/// The path under which Access serves its login page on a team's domain.
/// Nothing else there means "Access turned the request away": the team
/// root, `/cdn-cgi/access/logout` (where an app behind Access sends a user
/// after `POST /logout`) and any other path are the app's own redirects.
const ACCESS_LOGIN_PATH: &str = "/cdn-cgi/access/login";

/// Whether `location` is an absolute URL (any scheme) to the login page
/// of an Access team domain, `<team>.cloudflareaccess.com`, whose path
/// begins with `/cdn-cgi/access/login`. The host is the authority
/// after a valid `scheme://`, less any userinfo and port, so a look-alike
/// elsewhere is not one: in the path or query
/// (`https://evil.example/?x=.cloudflareaccess.com`, or a relative
/// `/login?next=https://team.cloudflareaccess.com/`), in the userinfo
/// (`https://team.cloudflareaccess.com@evil.example/`), or a longer host
/// (`cloudflareaccess.com.evil.example`). The team is one DNS label of
/// letters, digits and `-`.
///
/// Read byte for byte, without a URL parser's percent-decoding or IDNA
/// mapping (the core has no URL parser): Access writes its hosts plainly,
/// and src/js/rules.mjs, which parses with WHATWG `URL`, agrees on every
/// case in tests/fixtures/fast-path.json.
pub fn is_access_login(location: &str) -> bool {
    // What a WHATWG parser strips from both ends before parsing.
    let location = location.trim_matches(|c: char| c <= ' ');
    let Some((scheme, _)) = location.split_once("://") else {
        return false;
    };
    let mut scheme = scheme.bytes();
    let scheme_ok = scheme.next().is_some_and(|b| b.is_ascii_alphabetic())
        && scheme.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !scheme_ok {
        return false;
    }
    let authority = authority(location);
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.rsplit_once(':') {
        Some((host, port))
            if port.bytes().all(|b| b.is_ascii_digit())
                && (port.is_empty() || port.parse::<u16>().is_ok()) =>
        {
            host
        }
        _ => host_port,
    };
    let host = host.to_ascii_lowercase();
    let team_host = host.strip_suffix(ACCESS_LOGIN_DOMAIN).is_some_and(|team| {
        !team.is_empty() && team.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    team_host && path_of(location, authority).starts_with(ACCESS_LOGIN_PATH)
}

/// The path of an absolute URL whose authority is `authority`: what
/// follows it up to `?` or `#`, with `\` read as `/` as a WHATWG parser
/// reads it for http(s). Dot segments and percent escapes are left as they
/// are (Access writes its login path plainly).
fn path_of(url: &str, authority: &str) -> String {
    let rest = url
        .find("://")
        .and_then(|i| url.get(i + 3 + authority.len()..))
        .unwrap_or("");
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    rest[..end].replace('\\', "/")
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
    fn only_a_tunnel_without_connector_is_evidence_against_the_node() {
        assert!(Failure::Status(530).against_the_node());
        for f in [
            Failure::Status(500),
            Failure::Status(502),
            Failure::Status(521),
            Failure::Status(523),
            Failure::Refused,
            Failure::Network,
            Failure::Timeout,
            Failure::AccessLogin,
        ] {
            assert!(!f.against_the_node(), "{f:?}");
        }
    }

    #[test]
    fn what_one_request_cannot_decide_alone() {
        // (failure, needs a probe to agree before the origin is down)
        let table = [
            (Failure::Status(500), true),
            (Failure::Status(503), true),
            (Failure::Timeout, true),
            (Failure::Status(502), true),
            (Failure::Status(530), false),
            (Failure::Status(521), false),
            (Failure::Refused, false),
            (Failure::Network, false),
            (Failure::AccessLogin, false),
        ];
        for (failure, confirmed) in table {
            assert_eq!(failure.needs_confirmation(), confirmed, "{failure}");
        }
    }

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

    // The response rules (classify_response, is_access_login) are tested
    // from tests/fixtures/fast-path.json, with the fast path's JS twins.

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
        assert!(Failure::AccessLogin.origin_never_saw_request());
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
