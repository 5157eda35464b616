//! The fallback page (`FALLBACK`, parsed by [`crate::edge::config::fallback`]):
//! when a request gets it instead of today's error, and what follows each
//! fetch of a `url` fallback. The shell (src/fallback.rs) fetches and
//! streams; every choice is here.
//!
//! When: a GET or HEAD whose walk over the origins ended with no usable
//! answer, that is with an error of ours (every origin refused, timed out
//! or answered with Cloudflare's 52x/530), or with an app's own 5xx while
//! the health map calls no origin up (the apps' health paths fail too: the
//! site is down, not one page). One page's 5xx on a site that is up stays
//! the app's answer, as without a fallback. Other methods keep today's
//! error: a fallback page is no answer to a POST.
//!
//! Each fetch of a `url` fallback: a 2xx is the page; a redirect is
//! followed (at most [`MAX_REDIRECTS`], each target held to the configured
//! URL's rule, `check_url`); anything else, an Access login included, is a
//! failed fallback, and the client gets today's error after all.

use crate::edge::attempts::AfterFailure;
use crate::edge::classify::is_access_login;
use crate::edge::config::fallback::check_url;
use crate::edge::target::authority;

/// Redirects followed from the configured URL before the fallback counts
/// as failed: enough for `http`-less hosts that add a slash and a locale,
/// few enough that a loop costs little of the attempt timeout.
pub const MAX_REDIRECTS: u32 = 3;

/// Whether a request whose walk over the origins ended with `ended` gets
/// the fallback page instead (see the module's header). `any_origin_up` is
/// the health map's view once the walk's own failures are recorded, an
/// origin forced up by an override counting as up (`Isolate::any_serving`).
pub fn serves(method: &str, ended: &AfterFailure, any_origin_up: bool) -> bool {
    let readable = matches!(method, "GET" | "HEAD");
    readable
        && match ended {
            AfterFailure::GiveUp { .. } => true,
            AfterFailure::AppAnswer(_) => !any_origin_up,
            AfterFailure::TryOrigin(_) | AfterFailure::PassThrough => false,
        }
}

/// What follows one fetch of a `url` fallback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The response is the page: served with status 503.
    Serve,
    /// Fetch this URL next (a redirect, already checked).
    Follow(String),
    /// The fallback failed; why, for the log (no URL in it).
    Fail(String),
}

/// The fetch of `url` answered `status` (with its `Location`, if any), after
/// `redirects` redirects already followed.
pub fn after_fetch(status: u16, location: Option<&str>, url: &str, redirects: u32) -> Step {
    if (200..=299).contains(&status) {
        return Step::Serve;
    }
    if !matches!(status, 301 | 302 | 303 | 307 | 308) {
        return Step::Fail(format!("status {status}"));
    }
    let Some(location) = location else {
        return Step::Fail(format!("status {status} without a Location"));
    };
    if is_access_login(location) {
        return Step::Fail("access login".to_string());
    }
    if redirects >= MAX_REDIRECTS {
        return Step::Fail(format!("more than {MAX_REDIRECTS} redirects"));
    }
    match resolve(url, location) {
        Ok(next) => Step::Follow(next),
        Err(why) => Step::Fail(format!("a redirect the fallback does not follow: {why}")),
    }
}

/// `location` made absolute against `url`, and checked like the
/// configured URL. Absolute (`https://...`), scheme-relative (`//host/...`)
/// and absolute-path (`/path`) references are read; a relative path
/// (`page.html`, `../x`) is refused rather than resolved by a parser of our
/// own, and so is any `\`, which URL parsers read as `/` in some places and
/// not in others.
fn resolve(url: &str, location: &str) -> Result<String, &'static str> {
    let location = location.trim();
    if location.contains('\\') {
        return Err("it contains '\\'");
    }
    let absolute = if location.contains("://") {
        location.to_string()
    } else if location.starts_with("//") {
        format!("https:{location}")
    } else if location.starts_with('/') {
        format!("https://{}{location}", authority(url))
    } else {
        return Err("a relative path");
    };
    check_url(&absolute).map(|()| absolute)
}

/// `Retry-After` on the fallback page, in whole seconds: the probe
/// interval, after which a down origin has had its next chance to come back.
pub fn retry_after_s(health_interval_ms: u64) -> u64 {
    health_interval_ms.div_ceil(1000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_whose_walk_found_no_answer() {
        let give_up = AfterFailure::GiveUp {
            status: 502,
            message: "no origin is available",
        };
        let timed_out = AfterFailure::GiveUp {
            status: 504,
            message: "no origin answered in time",
        };
        let app = AfterFailure::AppAnswer(1);
        // (method, how the walk ended, some origin up, served the fallback)
        let table: &[(&str, &AfterFailure, bool, bool)] = &[
            ("GET", &give_up, false, true),
            ("HEAD", &give_up, false, true),
            ("GET", &timed_out, true, true),
            // An app's 5xx while the map calls an origin up: one page.
            ("GET", &app, true, false),
            // Every health path fails too: the site is down.
            ("GET", &app, false, true),
            ("HEAD", &app, false, true),
            ("POST", &give_up, false, false),
            ("PUT", &give_up, false, false),
            ("DELETE", &app, false, false),
            ("OPTIONS", &give_up, false, false),
            ("get", &give_up, false, false),
            ("GET", &AfterFailure::PassThrough, false, false),
            ("GET", &AfterFailure::TryOrigin(1), false, false),
        ];
        for (method, ended, up, expected) in table {
            assert_eq!(
                serves(method, ended, *up),
                *expected,
                "{method} {ended:?} up={up}"
            );
        }
    }

    #[test]
    fn a_page_a_redirect_or_a_failure() {
        let url = "https://status.example/down?x=1";
        let follow = |s: &str| Step::Follow(s.to_string());
        let fail = |s: &str| Step::Fail(s.to_string());
        // (status, Location, redirects so far, step)
        let table: &[(u16, Option<&str>, u32, Step)] = &[
            (200, None, 0, Step::Serve),
            (203, Some("https://x.example/"), 0, Step::Serve),
            (299, None, 3, Step::Serve),
            (500, None, 0, fail("status 500")),
            (503, None, 0, fail("status 503")),
            (404, None, 0, fail("status 404")),
            (304, Some("https://x.example/"), 0, fail("status 304")),
            (101, None, 0, fail("status 101")),
            (301, Some("https://cdn.example/a"), 0, follow("https://cdn.example/a")),
            (302, Some("/down/"), 0, follow("https://status.example/down/")),
            (303, Some("//other.example/p?q"), 1, follow("https://other.example/p?q")),
            (307, Some("  https://b.example/  "), 2, follow("https://b.example/")),
            (308, Some("https://b.example/"), 3, fail("more than 3 redirects")),
            (302, None, 0, fail("status 302 without a Location")),
            (
                302,
                Some("https://team.cloudflareaccess.com/cdn-cgi/access/login/x"),
                0,
                fail("access login"),
            ),
            (
                301,
                Some("http://status.example/"),
                0,
                fail("a redirect the fallback does not follow: must start with https://: the page is served under the site's own name"),
            ),
            (
                302,
                Some("https://user:pw@evil.example/"),
                0,
                fail("a redirect the fallback does not follow: must not contain credentials (user@host)"),
            ),
            (
                302,
                Some("down.html"),
                0,
                fail("a redirect the fallback does not follow: a relative path"),
            ),
            (
                302,
                Some("/\\evil.example/"),
                0,
                fail("a redirect the fallback does not follow: it contains '\\'"),
            ),
            (
                302,
                Some("javascript:alert(1)"),
                0,
                fail("a redirect the fallback does not follow: a relative path"),
            ),
        ];
        for (status, location, redirects, step) in table {
            assert_eq!(
                after_fetch(*status, *location, url, *redirects),
                *step,
                "{status} {location:?}"
            );
        }
    }

    #[test]
    fn retry_after_is_the_probe_interval_in_seconds() {
        for (ms, s) in [(15_000, 15), (100, 1), (1_001, 2), (3_600_000, 3_600)] {
            assert_eq!(retry_after_s(ms), s, "{ms}");
        }
    }
}
