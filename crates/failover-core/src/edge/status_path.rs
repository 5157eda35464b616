//! What a `STATUS_PATH` may be: one grammar for the Worker's own setting
//! and for every client of its admin API (the agent's `worker.status_path`,
//! `scripts/origin.mjs` holds its JS twin). A path the runtime would
//! rewrite never matches the Worker's, so the status page and the admin API,
//! tokens and all, would go to the origin instead.

/// Why `path` would not match requests byte for byte as the runtime hands
/// them over (`target::is_status_path`), if it would not. The runtime
/// percent-encodes a space or a non-ASCII letter and resolves "." and ".."
/// segments, so only what it leaves alone is taken: letters, digits and
/// `-._~!$&'()*+,;=:@` between single slashes, no trailing slash (`/ops/`
/// would leave `/ops` to the origin).
pub fn check(path: &str) -> Result<(), &'static str> {
    let Some(rest) = path.strip_prefix('/') else {
        return Err("must be a path starting with '/'");
    };
    if rest.is_empty() {
        return Err("must be a path other than '/' itself");
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:@".contains(c);
    for segment in rest.split('/') {
        if segment.is_empty() {
            return Err("has an empty segment (\"//\" or a trailing '/'); write it without");
        }
        if segment == "." || segment == ".." {
            return Err("has a '.' or '..' segment, which the runtime resolves away");
        }
        if !segment.chars().all(allowed) {
            return Err(
                "may hold only letters, digits and -._~!$&'()*+,;=:@ between slashes (no \
                 space, '%', '?', '#' or non-ASCII letter: the runtime would encode them, and \
                 the path would never match)",
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn only_a_path_the_runtime_leaves_alone_is_taken() {
        for good in ["/__failover/status", "/ops", "/a.b/c~d/e:f@g", "/..a/b.."] {
            assert_eq!(check(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "ops",
            "/",
            "/ops/",
            "//ops",
            "/a//b",
            "/a/./b",
            "/a/../b",
            "/.",
            "/..",
            "/a%2e",
            "/a b",
            "/\u{e9}tat",
            "/s?x",
            "/s#x",
            "/a\\b",
        ] {
            assert!(check(bad).is_err(), "{bad:?} taken");
        }
    }
}
