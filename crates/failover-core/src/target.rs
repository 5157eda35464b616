//! The only way an upstream URL is made: the configured origin (scheme and
//! authority, validated at config time, no path) followed by the request's
//! path and query. The path is forced to begin with `/`, so nothing in it can
//! be read as more authority (`@evil.example`, `.evil.example`, `:1@...`);
//! the result's authority is then checked against the origin's anyway.

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ORIGIN: &str = "https://primary.example.com";

    #[test]
    fn keeps_path_and_query_byte_for_byte() {
        let table = [
            ("https://site.example/", "https://primary.example.com/"),
            ("https://site.example", "https://primary.example.com/"),
            (
                "https://site.example/a/b?x=1&y=%2F%20+",
                "https://primary.example.com/a/b?x=1&y=%2F%20+",
            ),
            (
                "https://site.example:8443/p?q#frag",
                "https://primary.example.com/p?q",
            ),
            (
                "https://site.example?only=query",
                "https://primary.example.com/?only=query",
            ),
            (
                "http://site.example/%2e%2e/%2F/",
                "https://primary.example.com/%2e%2e/%2F/",
            ),
        ];
        for (incoming, expected) in table {
            assert_eq!(
                upstream_url(ORIGIN, incoming).as_deref(),
                Some(expected),
                "{incoming}"
            );
        }
    }

    #[test]
    fn hostile_paths_stay_on_the_origin() {
        let hostile = [
            "https://site.example//evil.example/x",
            "https://site.example/@evil.example",
            "https://site.example/\\evil.example",
            "https://site.example/..//evil.example",
            "https://site.example/http://evil.example/",
            "https://site.example/%2F%2Fevil.example",
            "https://site.example/?@evil.example",
        ];
        for incoming in hostile {
            let url = upstream_url(ORIGIN, incoming).expect("joined");
            assert_eq!(
                authority(&url),
                "primary.example.com",
                "{incoming} -> {url}"
            );
        }
    }

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
