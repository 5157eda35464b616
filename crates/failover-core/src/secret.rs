//! Token checks that take the same time wherever the first wrong byte is,
//! so the token cannot be guessed one byte at a time from timings: a bearer
//! token, or the password of HTTP Basic credentials (what a browser can
//! send).

use crate::base64;

/// The longest `Authorization` value [`basic_matches`] decodes: far above
/// any real credentials, and the bound on what a hostile header makes the
/// Worker allocate.
pub const MAX_BASIC_HEADER_BYTES: usize = 4096;

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

/// True when an `Authorization` header value carries `Basic <base64 of
/// user:password>` (RFC 7617) whose password is exactly `token`, whatever
/// the user name. The password is compared as bytes, so credentials that
/// are not UTF-8 are simply wrong, and it is everything after the first
/// colon (a user name has none; a password may).
pub fn basic_matches(header: Option<&str>, token: &str) -> bool {
    let credentials = header
        .filter(|h| h.len() <= MAX_BASIC_HEADER_BYTES)
        .map(str::trim)
        .and_then(|h| h.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
        .and_then(|(_, encoded)| base64::decode(encoded.trim()));
    let password = credentials
        .as_deref()
        .and_then(|c| c.iter().position(|&b| b == b':').map(|at| &c[at + 1..]))
        .unwrap_or(b"");
    // Compare even when absent or malformed, as bearer_matches does.
    constant_time_eq(password, token.as_bytes()) && !token.is_empty()
}

/// True when the header carries `token` either way: as a bearer token
/// (scripts, monitors) or as the password of Basic credentials (a browser,
/// which can send nothing else by itself).
pub fn bearer_or_basic_matches(header: Option<&str>, token: &str) -> bool {
    // Both, always: the time taken does not say which scheme was tried.
    let bearer = bearer_matches(header, token);
    let basic = basic_matches(header, token);
    bearer | basic
}

/// True when the header carries any of `tokens` either way (the Worker's
/// own `STATUS_TOKEN` and `ADMIN_TOKEN`, before an attempt: a browser that
/// was given the status page's Basic credentials sends them to every path
/// in that folder, and a client with a mistyped status path sends its
/// token to the app). Every token is compared, in time that does not say
/// which one matched; an absent token (`None`) matches nothing.
pub fn carries_any(header: Option<&str>, tokens: &[Option<&str>]) -> bool {
    let mut found = false;
    for token in tokens {
        found |= bearer_or_basic_matches(header, token.unwrap_or(""));
    }
    found
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

    #[test]
    fn any_of_the_workers_tokens_either_way() {
        let tokens = [Some("status-token-0123"), Some("admin-token-01234"), None];
        for header in [
            "Bearer status-token-0123".to_string(),
            "bearer admin-token-01234".to_string(),
            basic(b"ops:status-token-0123"),
            basic(b":admin-token-01234"),
        ] {
            assert!(carries_any(Some(&header), &tokens), "{header}");
        }
        for header in [
            "Bearer the-apps-own-token".to_string(),
            basic(b"status-token-0123:app-password"),
            "status-token-0123".to_string(),
            "Bearer ".to_string(),
            String::new(),
        ] {
            assert!(!carries_any(Some(&header), &tokens), "{header}");
        }
        assert!(!carries_any(None, &tokens));
        assert!(!carries_any(Some("Bearer "), &[None, None]));
    }

    /// `Basic` + base64 of `credentials`, as a browser sends it.
    fn basic(credentials: &[u8]) -> String {
        format!("Basic {}", crate::base64::tests::encode(credentials))
    }

    #[test]
    fn basic_takes_the_password_whatever_the_user() {
        let token = "s3cret";
        let accepted: &[&[u8]] = &[b"ops:s3cret", b":s3cret", b"anyone at all:s3cret"];
        for credentials in accepted {
            let header = basic(credentials);
            assert!(basic_matches(Some(&header), token), "{header}");
            assert!(bearer_or_basic_matches(Some(&header), token), "{header}");
            // The scheme name is case-insensitive; space around is not part
            // of the credentials.
            let lower = format!("  basic {} ", &header[6..]);
            assert!(basic_matches(Some(&lower), token), "{lower}");
        }
        // A password may hold colons: it is everything after the first.
        assert!(basic_matches(Some(&basic(b"u:a:b")), "a:b"));
        assert!(bearer_or_basic_matches(Some("Bearer s3cret"), token));
    }

    #[test]
    fn hostile_basic_credentials_are_refused() {
        let token = "s3cret";
        let huge = basic(&[b"u:s3cret".as_slice(), &[b' '; MAX_BASIC_HEADER_BYTES]].concat());
        let refused: Vec<(&str, String)> = vec![
            ("a wrong password", basic(b"ops:s3cre")),
            ("the token as the user name", basic(b"s3cret:")),
            ("no colon: the token alone", basic(b"s3cret")),
            ("the password with a trailing space", basic(b"ops:s3cret ")),
            ("not UTF-8", basic(b"ops:s3cr\xffet")),
            (
                "unpadded",
                basic(b"ops:s3cret").trim_end_matches('=').to_string(),
            ),
            ("bad padding", format!("{}=", basic(b"ops:s3cret"))),
            ("padding inside", "Basic b3Bz=OnMzY3JldA=".to_string()),
            ("not base64", "Basic ops:s3cret".to_string()),
            ("the token in the clear", "Basic s3cret".to_string()),
            ("no credentials", "Basic".to_string()),
            ("empty credentials", "Basic ".to_string()),
            (
                "another scheme",
                basic(b"ops:s3cret").replacen("Basic", "Digest", 1),
            ),
            ("no scheme", basic(b"ops:s3cret")[6..].to_string()),
            ("over the size bound, right password", huge),
        ];
        for (what, header) in &refused {
            assert!(!basic_matches(Some(header), token), "{what}: {header:.80}");
            assert!(!bearer_or_basic_matches(Some(header), token), "{what}");
        }
        assert!(!basic_matches(None, token));
        // A UTF-8 token matches its UTF-8 bytes only, not Latin-1's.
        assert!(basic_matches(
            Some(&basic("u:s3cr\u{e9}t".as_bytes())),
            "s3cr\u{e9}t"
        ));
        assert!(!basic_matches(Some(&basic(b"u:s3cr\xe9t")), "s3cr\u{e9}t"));
        // The size bound is the header's, not the password's.
        let long_token = "x".repeat(MAX_BASIC_HEADER_BYTES / 2);
        let long = basic(format!("u:{long_token}").as_bytes());
        assert!(long.len() <= MAX_BASIC_HEADER_BYTES);
        assert!(basic_matches(Some(&long), &long_token));
        // An empty token never matches, by either scheme.
        for header in [basic(b"u:"), basic(b":"), "Bearer ".to_string()] {
            assert!(!bearer_or_basic_matches(Some(&header), ""), "{header}");
        }
    }
}
