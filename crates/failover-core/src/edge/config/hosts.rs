//! A site's `hosts`, and the table a request's host is looked up in.
//!
//! A host is a hostname (`www.example.com`, matched case-insensitively,
//! the request's port ignored), a wildcard of one label
//! (`*.example.com`: `a.example.com`, not `example.com` nor
//! `a.b.example.com`, as a certificate's wildcard), or `*`: the default
//! site, for every host no other site claims (at most one). A name claims
//! before a wildcard, a wildcard before `*`. The lookup is a binary search
//! over a sorted list, so it barely grows with the number of sites.

/// One entry of a site's `hosts`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostPattern {
    /// A hostname, lower case.
    Name(String),
    /// `*.` and the rest, lower case: one label before `rest`.
    Wildcard(String),
    /// `*`.
    Any,
}

impl HostPattern {
    /// The pattern as it is written (lower case).
    pub fn as_text(&self) -> String {
        match self {
            HostPattern::Name(name) => name.clone(),
            HostPattern::Wildcard(rest) => format!("*.{rest}"),
            HostPattern::Any => "*".to_string(),
        }
    }
}

/// Reads one `hosts` entry; the reason it is not one, if it is not.
pub fn parse_host(text: &str) -> Result<HostPattern, &'static str> {
    if text == "*" {
        return Ok(HostPattern::Any);
    }
    let (wildcard, name) = match text.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    if name.contains("://") || name.contains('/') {
        return Err("is a URL; give the hostname alone, like \"www.example.com\"");
    }
    if name.contains(':') {
        return Err("has a port; give the hostname alone (any port matches)");
    }
    if name.contains('*') {
        return Err("may have '*' only as \"*\" or a first label \"*.example.com\"");
    }
    if !is_hostname(&name) {
        return Err(
            "is not a hostname: labels of 1-63 letters, digits or '-' between dots, 253 \
             characters at most (write an international name in its xn-- form)",
        );
    }
    Ok(if wildcard {
        HostPattern::Wildcard(name)
    } else {
        HostPattern::Name(name)
    })
}

fn is_hostname(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// Which site each host belongs to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostTable {
    /// Hostnames and their site, sorted by name.
    names: Vec<(String, usize)>,
    /// Wildcards by what follows `*.`, sorted.
    wildcards: Vec<(String, usize)>,
    /// The `*` site.
    any: Option<usize>,
}

impl HostTable {
    /// A table where every host is `site`'s (`ORIGINS`).
    pub fn every_host(site: usize) -> HostTable {
        HostTable {
            any: Some(site),
            ..HostTable::default()
        }
    }

    /// Adds `pattern` for `site`; the site that claimed it already, if one
    /// did (then nothing changes).
    pub fn claim(&mut self, pattern: &HostPattern, site: usize) -> Result<(), usize> {
        let list = match pattern {
            HostPattern::Any => {
                return match self.any {
                    Some(other) => Err(other),
                    None => {
                        self.any = Some(site);
                        Ok(())
                    }
                }
            }
            HostPattern::Name(name) => (&mut self.names, name),
            HostPattern::Wildcard(rest) => (&mut self.wildcards, rest),
        };
        let (entries, key) = list;
        match entries.binary_search_by(|(k, _)| k.as_str().cmp(key)) {
            Ok(at) => Err(entries[at].1),
            Err(at) => {
                entries.insert(at, (key.clone(), site));
                Ok(())
            }
        }
    }

    /// The site whose `hosts` holds `host` (as a request names it: any
    /// case, with or without a port or a trailing dot); None: no site
    /// claims it.
    pub fn site_for(&self, host: &str) -> Option<usize> {
        let host = without_port(host);
        let host = host.strip_suffix('.').unwrap_or(host);
        let find = |entries: &[(String, usize)], key: &str| {
            entries
                .binary_search_by(|(k, _)| cmp_ignore_case(k, key))
                .ok()
                .map(|at| entries[at].1)
        };
        find(&self.names, host)
            .or_else(|| {
                let (_, rest) = host.split_once('.')?;
                find(&self.wildcards, rest)
            })
            .or(self.any)
    }

    /// Whether every host is one site's (no names, no wildcards).
    pub fn is_single(&self) -> bool {
        self.names.is_empty() && self.wildcards.is_empty()
    }
}

/// The host of an absolute URL, port included, userinfo not: what follows
/// `://` up to the first `/`, `\\`, `?` or `#` (as `target::authority`
/// delimits it), after any `@`.
pub fn host_of_url(url: &str) -> &str {
    let Some((_, rest)) = url.split_once("://") else {
        return "";
    };
    let authority = rest
        .find(['/', '\\', '?', '#'])
        .map_or(rest, |end| &rest[..end]);
    authority.rsplit('@').next().unwrap_or(authority)
}

/// `host` without a `:port` (an IPv6 literal keeps its brackets).
fn without_port(host: &str) -> &str {
    if let Some(end) = host.strip_prefix('[').and_then(|h| h.find(']')) {
        return &host[..end + 2];
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// Compares a stored (lower-case) key with a request's host, ignoring the
/// host's case, without allocating.
fn cmp_ignore_case(stored: &str, host: &str) -> std::cmp::Ordering {
    stored
        .bytes()
        .cmp(host.bytes().map(|b| b.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(sites: &[&[&str]]) -> HostTable {
        let mut t = HostTable::default();
        for (site, hosts) in sites.iter().enumerate() {
            for h in *hosts {
                let p = parse_host(h).unwrap_or_else(|e| panic!("{h}: {e}"));
                t.claim(&p, site)
                    .unwrap_or_else(|o| panic!("{h} claimed by {o}"));
            }
        }
        t
    }

    #[test]
    fn names_before_wildcards_before_the_default() {
        let t = table(&[
            &["www.example.com", "Example.com."],
            &["*.example.com"],
            &["*"],
        ]);
        for (host, site) in [
            ("www.example.com", Some(0)),
            ("WWW.Example.COM", Some(0)),
            ("www.example.com:8443", Some(0)),
            ("www.example.com.", Some(0)),
            ("example.com", Some(0)),
            ("git.example.com", Some(1)),
            ("a.b.example.com", Some(2)),
            ("other.org", Some(2)),
            ("", Some(2)),
        ] {
            assert_eq!(t.site_for(host), site, "{host}");
        }
        let no_default = table(&[&["www.example.com"], &["*.example.com"]]);
        for host in [
            "example.com",
            "a.b.example.com",
            "www.example.com.evil.org",
            "evil.org",
        ] {
            assert_eq!(no_default.site_for(host), None, "{host}");
        }
    }

    #[test]
    fn a_host_claimed_twice_names_the_first_claim() {
        let mut t = table(&[&["www.example.com", "*.example.com", "*"]]);
        for h in ["WWW.example.com", "*.EXAMPLE.com", "*"] {
            assert_eq!(t.claim(&parse_host(h).expect("valid"), 1), Err(0), "{h}");
        }
    }

    #[test]
    fn what_is_not_a_host_says_why() {
        for (text, why) in [
            ("https://www.example.com", "URL"),
            ("www.example.com/x", "URL"),
            ("www.example.com:443", "port"),
            ("a.*.example.com", "'*'"),
            ("**", "'*'"),
            ("", "not a hostname"),
            ("exa mple.com", "not a hostname"),
            ("-a.example.com", "not a hostname"),
            ("a..example.com", "not a hostname"),
            ("bücher.example", "not a hostname"),
            ("*.", "not a hostname"),
        ] {
            let e = parse_host(text).expect_err(text);
            assert!(e.contains(why), "{text}: {e}");
        }
        assert_eq!(
            parse_host("xn--bcher-kva.example"),
            Ok(HostPattern::Name("xn--bcher-kva.example".to_string()))
        );
    }

    #[test]
    fn the_host_of_a_request_url() {
        for (url, host) in [
            ("https://www.example.com/a/b?c", "www.example.com"),
            ("http://www.example.com:8787", "www.example.com:8787"),
            ("https://user:pw@www.example.com/", "www.example.com"),
            ("https://evil.org\\@www.example.com/", "evil.org"),
            ("https://a.example.com?x=@b.example.com", "a.example.com"),
            ("https://[::1]:8787/", "[::1]:8787"),
            ("not a url", ""),
        ] {
            assert_eq!(host_of_url(url), host, "{url}");
        }
    }

    #[test]
    fn ports_and_ipv6_literals() {
        assert_eq!(without_port("a.example:80"), "a.example");
        assert_eq!(without_port("a.example"), "a.example");
        assert_eq!(without_port("[::1]:8787"), "[::1]");
        assert_eq!(without_port("[::1]"), "[::1]");
    }
}
