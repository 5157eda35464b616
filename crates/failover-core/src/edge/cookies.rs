//! The `Cookie` request header, read the way the fast path's twin
//! (`eachCookie` in src/js/steer.mjs) reads it; both are held to
//! tests/fixtures/steering.json. Linear in the header's length: a header
//! is client input, up to the platform's 128 KB.

/// The `name=value` pairs of a `Cookie` header, in order: pairs split at
/// `;`, name and value trimmed of spaces and tabs, one pair of double quotes
/// around the value removed, and pieces without `=` or a name skipped.
pub fn cookies(header: &str) -> impl Iterator<Item = (&str, &str)> {
    header.split(';').filter_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        let name = name.trim_matches([' ', '\t']);
        let value = value.trim_matches([' ', '\t']);
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        (!name.is_empty()).then_some((name, value))
    })
}

/// The value of the first cookie called `name` (case-sensitive).
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    cookies(header).find(|(n, _)| *n == name).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_lookup() {
        assert_eq!(cookie("a=1; b=2", "b"), Some("2"));
        assert_eq!(cookie("a=1; b=2", "B"), None);
        assert_eq!(cookie("a=1; b=x=y", "b"), Some("x=y"));
        assert_eq!(cookie("b; b=3", "b"), Some("3"));
        assert_eq!(cookie("=1; b=\"\"", "b"), Some(""));
        assert_eq!(cookie("", "b"), None);
    }

    #[test]
    fn a_huge_header_of_separators_is_read_whole() {
        let header = format!("{}sid=abc", ";".repeat(128 * 1024));
        assert_eq!(cookie(&header, "sid"), Some("abc"));
        assert_eq!(cookies(&";".repeat(128 * 1024)).count(), 0);
        assert_eq!(cookie(&"=".repeat(128 * 1024), "sid"), None);
    }
}
