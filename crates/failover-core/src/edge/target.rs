//! The only way an upstream URL is made: the configured origin (scheme and
//! authority, validated at config time, no path) followed by the request's
//! path and query. The path is forced to begin with `/`, so nothing in it can
//! be read as more authority (`@evil.example`, `.evil.example`, `:1@...`);
//! the result's authority is then checked against the origin's anyway.
//! Also which request goes to no origin at all: the status endpoint, and
//! every path under it (the admin API).
//!
//! The fast path's copy of both rules is `upstreamUrl` in src/js/lease.mjs;
//! both are held to tests/fixtures/fast-path.json (tests/fast_path_fixture.rs
//! here, tests/lease.test.mjs there).

/// The path-and-query part of an absolute request URL, byte for byte, without
/// any fragment: everything from the first `/` after `scheme://authority`.
/// Returns `/` when the URL has no path.
pub fn path_and_query(request_url: &str) -> &str {
    let after_scheme = match request_url.find("://") {
        Some(i) => &request_url[i + 3..],
        None => request_url,
    };
    let rest = match after_scheme.find(['/', '?', '#']) {
        Some(i) => &after_scheme[i..],
        None => "",
    };
    let rest = match rest.find('#') {
        Some(i) => &rest[..i],
        None => rest,
    };
    if rest.is_empty() {
        "/"
    } else {
        rest
    }
}

/// Joins an origin (`scheme://authority`, no trailing slash) with a request's
/// path and query. Returns None if, against all expectation, the result would
/// name another authority; the caller must then refuse the request.
pub fn upstream_url(origin: &str, request_url: &str) -> Option<String> {
    let tail = path_and_query(request_url);
    let mut url = String::with_capacity(origin.len() + tail.len() + 1);
    url.push_str(origin);
    if !tail.starts_with('/') {
        url.push('/');
    }
    url.push_str(tail);
    (authority(&url) == authority(origin)).then_some(url)
}

/// The authority of an absolute URL as a WHATWG parser would delimit it for
/// http(s): from after `://` to the first `/`, `\`, `?` or `#`.
pub fn authority(url: &str) -> &str {
    let after_scheme = match url.find("://") {
        Some(i) => &url[i + 3..],
        None => return "",
    };
    match after_scheme.find(['/', '\\', '?', '#']) {
        Some(i) => &after_scheme[..i],
        None => after_scheme,
    }
}

/// The URL a health probe of an origin GETs: its base and its
/// `health_path` (validated at config time to start with `/`), joined like
/// every other upstream URL.
pub fn probe_url(base: &str, health_path: &str) -> Option<String> {
    upstream_url(base, &format!("https://probe.invalid{health_path}"))
}

/// Whether a request is for the Worker's own status endpoint instead of an
/// origin: a GET or HEAD whose path, query aside, is exactly `status_path`.
/// `None` when the endpoint is off (no token is set): the path is then
/// proxied like any other.
pub fn is_status_request(request_url: &str, method: &str, status_path: Option<&str>) -> bool {
    matches!(method, "GET" | "HEAD") && is_status_path(request_url, status_path)
}

/// Whether a request's path, query aside, is exactly `status_path`, for
/// any method: the Worker's own whenever the status endpoint or the admin
/// API is on (`WorkerConfig::reserved_path`), never an origin's, so that an
/// operator's `POST {STATUS_PATH}` (the `/origins/{name}` forgotten) gets
/// our 405 instead of carrying `ADMIN_TOKEN` to the app and its logs.
pub fn is_status_path(request_url: &str, status_path: Option<&str>) -> bool {
    let Some(status_path) = status_path else {
        return false;
    };
    let path = path_and_query(request_url);
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    path == status_path
}

/// The part of a request's path after `{status_path}/` (query aside), for a
/// request under it: the Worker's own paths (the admin API, 404 for the
/// rest), for every method, never an origin's. `None` when the request is
/// not under it, or when `status_path` is `None` (neither `STATUS_TOKEN`
/// nor `ADMIN_TOKEN` is set: then those paths are proxied like any other).
pub fn reserved_subpath<'a>(request_url: &'a str, status_path: Option<&str>) -> Option<&'a str> {
    let path = path_and_query(request_url);
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    path.strip_prefix(status_path?)?.strip_prefix('/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ORIGIN: &str = "https://primary.example.com";

    // The URL joins, hostile paths and the status-path rule, with the
    // fast path's expectations beside them: tests/fixtures/fast-path.json,
    // read by tests/fast_path_fixture.rs.

    #[test]
    fn origin_with_port() {
        let url = upstream_url("http://127.0.0.1:8080", "https://x/y?z").expect("joined");
        assert_eq!(url, "http://127.0.0.1:8080/y?z");
    }

    proptest! {
        /// Whatever the runtime hands us as a request URL, the upstream
        /// authority is the configured origin's.
        #[test]
        fn never_another_host(tail in "\\PC*", host in "[a-z.@:]{0,12}") {
            let incoming = format!("https://{host}{tail}");
            if let Some(url) = upstream_url(ORIGIN, &incoming) {
                prop_assert_eq!(authority(&url), "primary.example.com");
                prop_assert!(url.starts_with("https://primary.example.com/"));
            }
        }

        #[test]
        fn never_another_host_raw(raw in "\\PC*") {
            if let Some(url) = upstream_url(ORIGIN, &raw) {
                prop_assert_eq!(authority(&url), "primary.example.com");
            }
        }
    }
}
