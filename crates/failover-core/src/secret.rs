//! Bearer-token checks that take the same time wherever the first wrong byte
//! is, so the token cannot be guessed one byte at a time from timings.

/// Compares two secrets in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

/// True when an `Authorization` header value carries exactly `Bearer <token>`.
pub fn bearer_matches(header: Option<&str>, token: &str) -> bool {
    // The scheme name is case-insensitive (RFC 9110 section 11.1).
    let presented = header
        .map(str::trim)
        .and_then(|h| h.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map_or("", |(_, token)| token);
    // Compare even when absent, so a missing header costs the same time.
    constant_time_eq(presented.trim().as_bytes(), token.as_bytes()) && !token.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equality() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(!constant_time_eq(b"ab", b"abc"));
    }

    #[test]
    fn bearer() {
        assert!(bearer_matches(Some("Bearer s3cret"), "s3cret"));
        assert!(bearer_matches(Some("bearer s3cret"), "s3cret"));
        assert!(bearer_matches(Some("BEARER  s3cret "), "s3cret"));
        assert!(!bearer_matches(Some("Bearer wrong"), "s3cret"));
        assert!(!bearer_matches(Some("s3cret"), "s3cret"));
        assert!(!bearer_matches(Some("Basic s3cret"), "s3cret"));
        assert!(!bearer_matches(None, "s3cret"));
        assert!(
            !bearer_matches(Some("Bearer "), ""),
            "an empty token never matches"
        );
    }
}
