//! The few URLs the agent calls: `http://` on the LAN, `https://` for the
//! egress check. Parsed once at config time by `http::Uri`, then held to a
//! narrower shape than RFC 3986 allows, because a URL that parses but is not
//! what the operator meant passes `check-config` and surfaces 90 s later as a
//! take-over.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use hyper::http::Uri;

/// Appended to every rejection: what a good value looks like.
const ACCEPTED: &str = "expected http:// or https://, a host (DNS name, IPv4 address or \
                        [IPv6] literal), an optional :port and an optional path, e.g. \
                        \"http://10.0.0.2:8790\", \"http://[fd00::2]:8790\" or \
                        \"https://host/path\"";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub https: bool,
    /// As written, without the brackets of an IPv6 literal: the form
    /// `TcpStream::connect` and TLS server names take.
    pub host: String,
    pub port: u16,
    /// Always starts with `/`.
    pub path: String,
}

impl Url {
    pub fn parse(text: &str) -> Result<Url, String> {
        parse(text).map_err(|why| format!("{why}; {ACCEPTED}"))
    }

    /// A URL that carries a secret (a webhook's token in its path or its
    /// query): held to the same shape as [`Url::parse`], except that a
    /// query is allowed (kept in `path`, sent as part of the request
    /// target), and no error repeats the value: it would put the token in
    /// `check-config`'s output and the journal.
    pub fn parse_secret(text: &str) -> Result<Url, String> {
        const HINT: &str = "expected http(s)://host[:port]/path with an optional ?query; the \
                            value is not shown, it may carry a token";
        let (base, query) = match text.split_once('?') {
            Some((base, query)) => (base, Some(query)),
            None => (text, None),
        };
        if text.contains('#') {
            return Err(format!("the URL has a fragment (\"#...\"); {HINT}"));
        }
        if query.is_some_and(|q| q.chars().any(|c| c.is_whitespace() || c.is_control())) {
            return Err(format!("the URL's query contains whitespace; {HINT}"));
        }
        let authority = base
            .split_once("://")
            .map_or("", |(_, rest)| rest.split('/').next().unwrap_or(""));
        if authority.contains('@') {
            return Err(format!(
                "the URL carries user info before \"@\"; put credentials in the path or \
                 query the service gives you; {HINT}"
            ));
        }
        let mut url = parse(base)
            .map_err(|why| format!("{}; {HINT}", why.replace(&format!("{base:?}"), "the URL")))?;
        if !url.https && !url.is_local_network() {
            return Err(format!(
                "the URL is http:// to a host that is neither this machine nor a private \
                 network, so its token would cross the internet in clear text; use https://, \
                 or http:// only to loopback, a private address (10/8, 172.16/12, \
                 192.168/16, 100.64/10, fc00::/7) or a LAN name (one label, or under .lan, \
                 .local, .home.arpa, .internal); {HINT}"
            ));
        }
        if let Some(query) = query {
            url.path = format!("{}?{query}", url.path);
        }
        Ok(url)
    }

    /// Whether the host is this machine: `localhost` (or a name under
    /// it), 127.0.0.0/8 or ::1.
    pub fn is_loopback(&self) -> bool {
        let host = self.host.trim_end_matches('.').to_ascii_lowercase();
        if host == "localhost" || host.ends_with(".localhost") {
            return true;
        }
        match (host.parse::<Ipv4Addr>(), host.parse::<Ipv6Addr>()) {
            (Ok(v4), _) => v4.is_loopback(),
            (_, Ok(v6)) => v6.is_loopback(),
            _ => false,
        }
    }

    /// Whether the host is on this machine or a private network, so that
    /// plain `http://` to it does not cross the internet: loopback, an
    /// address from a private range (10/8, 172.16/12, 192.168/16, the
    /// 100.64/10 that Tailscale and CGNAT hand out, 169.254/16, fc00::/7,
    /// fe80::/10), or a LAN name (one label, or under .lan, .local,
    /// .home.arpa, .internal). A public DNS name that resolves to a LAN
    /// address is not known to be one here, and is not.
    pub fn is_local_network(&self) -> bool {
        if self.is_loopback() {
            return true;
        }
        let host = self.host.trim_end_matches('.').to_ascii_lowercase();
        if let Ok(v4) = host.parse::<Ipv4Addr>() {
            let [a, b, ..] = v4.octets();
            return v4.is_private() || v4.is_link_local() || (a == 100 && (64..128).contains(&b));
        }
        if let Ok(v6) = host.parse::<Ipv6Addr>() {
            let first = v6.segments()[0];
            return first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfe80;
        }
        !host.contains('.')
            || [".lan", ".local", ".home.arpa", ".internal"]
                .iter()
                .any(|suffix| host.ends_with(suffix))
    }

    /// The same origin with another path (`/connector/ready` on the peer).
    pub fn with_path(&self, path: &str) -> Url {
        let base = self.path.trim_end_matches('/');
        Url {
            path: format!("{base}{path}"),
            ..self.clone()
        }
    }

    /// The authority as it goes on the wire: an IPv6 literal gets its
    /// brackets back, a default port is left out.
    pub fn host_header(&self) -> String {
        let default_port = if self.https { 443 } else { 80 };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == default_port {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.host_header(), self.path)
    }
}

/// The reason without the list of what is accepted.
fn parse(text: &str) -> Result<Url, String> {
    // Not trimmed: a stray space is as likely a sign of a pasted-together
    // value ("10.0.0.2 :8790") as of harmless padding.
    if let Some(c) = text.chars().find(|c| c.is_whitespace()) {
        return Err(format!(
            "{text:?} contains whitespace ({c:?}); it is not trimmed, remove it"
        ));
    }
    let (scheme, after_scheme) = match text.split_once("://") {
        Some((scheme, rest)) if is_scheme(scheme) => (scheme, rest),
        _ => {
            return Err(match text.split_once(':') {
                Some((scheme, _))
                    if scheme.eq_ignore_ascii_case("http")
                        || scheme.eq_ignore_ascii_case("https") =>
                {
                    format!("{text:?} lacks \"//\" after \"{scheme}:\"")
                }
                _ => format!("{text:?} has no scheme; it must start with http:// or https://"),
            })
        }
    };
    let https = if scheme.eq_ignore_ascii_case("https") {
        true
    } else if scheme.eq_ignore_ascii_case("http") {
        false
    } else {
        return Err(format!(
            "{text:?} has scheme {scheme:?}; only http and https are accepted"
        ));
    };
    // `http::Uri` drops a fragment without a word, and keeps a query that
    // `with_path` would then bury in the middle of the path.
    if let Some(at) = text.find('#') {
        return Err(format!(
            "{text:?} has a fragment ({:?}); the agent appends its own paths, give the URL \
             without \"#...\"",
            &text[at..]
        ));
    }
    if let Some(at) = text.find('?') {
        return Err(format!(
            "{text:?} has a query ({:?}); the agent appends its own paths, give the URL \
             without \"?...\"",
            &text[at..]
        ));
    }
    let raw_authority = after_scheme.split('/').next().unwrap_or("");
    if raw_authority.is_empty() {
        return Err(format!("{text:?} has no host"));
    }
    let uri: Uri = text.parse().map_err(|e| {
        if raw_authority.matches(':').count() > 1 && !raw_authority.contains('[') {
            format!(
                "{text:?} has more than one ':' in its host and port; an IPv6 address goes in \
                 brackets, [addr]:port"
            )
        } else {
            format!("{text:?} is not a valid URL ({e})")
        }
    })?;
    let authority = uri
        .authority()
        .ok_or_else(|| format!("{text:?} has no host"))?
        .as_str();
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        // The password must not reach a log line through this error.
        let rest = after_scheme.get(userinfo.len() + 1..).unwrap_or("");
        return Err(format!(
            "\"{scheme}://***@{rest}\" carries user info before \"@\"; credentials do not \
             belong in a URL in the config file"
        ));
    }
    let (host, after_host) = split_host(authority)
        .ok_or_else(|| format!("{text:?} has an unterminated \"[\" in its host"))?;
    let host = check_host(host).map_err(|why| format!("{text:?} {why}"))?;
    let port = port(after_host, https).map_err(|why| format!("{text:?} {why}"))?;
    Ok(Url {
        https,
        host: host.to_string(),
        port,
        // `Uri` keeps the path as written, percent-escapes included, and
        // gives "/" for none.
        path: uri.path().to_string(),
    })
}

/// RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ). Anything else before
/// "://" means there was no scheme ("10.0.0.2:8790/x://").
fn is_scheme(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// `("[::1]", ":8790")` from `"[::1]:8790"`; `("host", "")` from `"host"`.
fn split_host(authority: &str) -> Option<(&str, &str)> {
    if authority.starts_with('[') {
        let end = authority.find(']')? + 1;
        Some(authority.split_at(end))
    } else {
        Some(match authority.find(':') {
            Some(at) => authority.split_at(at),
            None => (authority, ""),
        })
    }
}

/// The host without IPv6 brackets, or why it is not one the agent can dial.
fn check_host(host: &str) -> Result<&str, String> {
    if let Some(inner) = host.strip_prefix('[') {
        let inner = inner.strip_suffix(']').unwrap_or(inner);
        // No zone IDs ("%25eth0"): `TcpStream::connect` would hand them to
        // the resolver, and a peer is never reached through a link-local
        // address anyway.
        return match inner.parse::<Ipv6Addr>() {
            Ok(_) => Ok(inner),
            Err(_) => Err(format!(
                "has {host:?} in brackets, which is not an IPv6 address"
            )),
        };
    }
    if host.is_empty() {
        return Err("has an empty host".into());
    }
    if let Some(c) = host
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')))
    {
        return Err(format!(
            "has {c:?} in host {host:?}; a host name has only letters, digits, '-', '_' and '.'"
        ));
    }
    // As in the WHATWG URL standard: a numeric last label means an IPv4
    // address was meant, and the resolver would read "10.0.2" or "167772162"
    // as some other address rather than fail.
    let last = host.trim_end_matches('.').rsplit('.').next().unwrap_or("");
    if !last.is_empty()
        && last.chars().all(|c| c.is_ascii_digit())
        && host.parse::<Ipv4Addr>().is_err()
    {
        return Err(format!(
            "has host {host:?}, which looks like an IPv4 address but is not one (a.b.c.d, \
             each 0-255)"
        ));
    }
    Ok(host)
}

/// `after_host` is what follows the host in the authority: nothing or
/// ":digits". `Uri` lets through "host:", "host:+80", "host:x" and
/// "[::1]junk:80" with no port or the wrong one.
fn port(after_host: &str, https: bool) -> Result<u16, String> {
    let Some(digits) = after_host.strip_prefix(':') else {
        return match after_host {
            "" => Ok(if https { 443 } else { 80 }),
            junk => Err(format!(
                "has {junk:?} after the host; only \":port\" may follow it"
            )),
        };
    };
    if digits.is_empty() {
        return Err("has \":\" but no port after it; give a port or leave out the \":\"".into());
    }
    if !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("has port {digits:?}, which is not a number"));
    }
    match digits.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(format!("has port {digits}; a port is 1-65535")),
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::time::Duration;

    use http_body_util::Full;
    use hyper::body::Bytes;
    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    use super::*;
    use crate::client::Client;

    #[test]
    fn a_secret_url_over_http_stays_on_the_lan() {
        for good in [
            "http://127.0.0.1:8080/hook",
            "http://localhost/hook",
            "http://[::1]:9/hook",
            "http://10.0.0.5/hook?token=x",
            "http://172.20.1.1/h",
            "http://192.168.1.10:8080/ntfy/topic",
            "http://100.100.1.2/h",
            "http://[fd00::2]/h",
            "http://ntfy/topic",
            "http://ntfy.lan/topic",
            "http://gotify.home.arpa/message",
            "http://hooks.internal/x",
            "https://hooks.slack.com/services/T0/B0/SECRET",
            "https://8.8.8.8/h",
        ] {
            assert!(
                Url::parse_secret(good).is_ok(),
                "{good}: {:?}",
                Url::parse_secret(good)
            );
        }
        for bad in [
            "http://hooks.slack.com/services/T0/B0/SECRET",
            "http://8.8.8.8/h",
            "http://172.32.0.1/h",
            "http://100.128.0.1/h",
            "http://[2001:db8::1]/h",
            "http://ntfy.sh/SECRET-topic",
            "http://lan.example.com/h",
        ] {
            let why = Url::parse_secret(bad).expect_err(bad);
            assert!(why.contains("clear text"), "{bad}: {why}");
            assert!(!why.contains("SECRET"), "the error repeats the URL: {why}");
        }
    }

    #[test]
    fn loopback_is_this_machine_only() {
        for (url, loopback) in [
            ("http://127.0.0.1:8787", true),
            ("http://127.9.9.9", true),
            ("http://localhost:8787", true),
            ("http://LOCALHOST", true),
            ("http://a.localhost", true),
            ("http://[::1]:8787", true),
            ("http://10.0.0.2", false),
            ("http://localhost.example.com", false),
            ("https://www.example.com", false),
        ] {
            assert_eq!(Url::parse(url).unwrap().is_loopback(), loopback, "{url}");
        }
    }

    #[test]
    fn parses_what_the_agent_needs() {
        let u = Url::parse("http://10.0.0.2:8790").unwrap();
        assert_eq!(
            (u.https, u.host.as_str(), u.port, u.path.as_str()),
            (false, "10.0.0.2", 8790, "/")
        );
        assert_eq!(
            u.with_path("/connector/ready").to_string(),
            "http://10.0.0.2:8790/connector/ready"
        );
        let u = Url::parse("https://www.cloudflare.com/cdn-cgi/trace").unwrap();
        assert_eq!((u.port, u.path.as_str()), (443, "/cdn-cgi/trace"));
        let u = Url::parse("http://[::1]:20241/ready").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 20241));
        for bad in [
            "ftp://x",
            "10.0.0.2:8790",
            "http://:80/",
            "http://a:b/",
            "http://u:p@h/",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    enum Want {
        /// https, host, port, path
        Parsed(bool, &'static str, u16, &'static str),
        /// A phrase the error must contain.
        Rejected(&'static str),
    }
    use Want::{Parsed, Rejected};

    const CASES: &[(&str, Want)] = &[
        // What the agent is configured with.
        ("http://10.0.0.2:8790", Parsed(false, "10.0.0.2", 8790, "/")),
        (
            "http://127.0.0.1:20241/ready",
            Parsed(false, "127.0.0.1", 20241, "/ready"),
        ),
        (
            "https://www.cloudflare.com/cdn-cgi/trace",
            Parsed(true, "www.cloudflare.com", 443, "/cdn-cgi/trace"),
        ),
        (
            "http://peer-b.lan_1:8790",
            Parsed(false, "peer-b.lan_1", 8790, "/"),
        ),
        // Missing port: the scheme's default.
        ("http://10.0.0.2", Parsed(false, "10.0.0.2", 80, "/")),
        ("https://example.com", Parsed(true, "example.com", 443, "/")),
        (
            "https://example.com:8443",
            Parsed(true, "example.com", 8443, "/"),
        ),
        ("http://h:65535", Parsed(false, "h", 65535, "/")),
        // Scheme is case-insensitive.
        ("HTTP://10.0.0.2:8790", Parsed(false, "10.0.0.2", 8790, "/")),
        (
            "HtTpS://Example.COM/x",
            Parsed(true, "Example.COM", 443, "/x"),
        ),
        // Paths as written; trailing slash kept.
        (
            "http://10.0.0.2:8790/",
            Parsed(false, "10.0.0.2", 8790, "/"),
        ),
        (
            "http://10.0.0.2:8790/agent/",
            Parsed(false, "10.0.0.2", 8790, "/agent/"),
        ),
        ("http://h/a/b/c", Parsed(false, "h", 80, "/a/b/c")),
        ("http://h/a%20b/%2F", Parsed(false, "h", 80, "/a%20b/%2F")),
        ("http://h//x", Parsed(false, "h", 80, "//x")),
        // IPv6 literals, stored without brackets.
        ("http://[::1]:8790", Parsed(false, "::1", 8790, "/")),
        ("http://[::1]", Parsed(false, "::1", 80, "/")),
        (
            "http://[fe80::1]/ready",
            Parsed(false, "fe80::1", 80, "/ready"),
        ),
        (
            "https://[2001:db8::2]:8443/x",
            Parsed(true, "2001:db8::2", 8443, "/x"),
        ),
        (
            "http://[::ffff:10.0.0.2]:8790",
            Parsed(false, "::ffff:10.0.0.2", 8790, "/"),
        ),
        (
            "http://::1:8790",
            Rejected("an IPv6 address goes in brackets"),
        ),
        ("http://[notv6]:8790", Rejected("not an IPv6 address")),
        (
            "http://[fe80::1%25eth0]:8790",
            Rejected("not an IPv6 address"),
        ),
        ("http://[::1:8790", Rejected("not a valid URL")),
        ("http://[::1]x:8790", Rejected("only \":port\" may follow")),
        // Whitespace anywhere, never trimmed.
        (
            "http://10.0.0.2 :8790",
            Rejected("contains whitespace (' ')"),
        ),
        (" http://10.0.0.2:8790", Rejected("contains whitespace")),
        ("http://10.0.0.2:8790 ", Rejected("contains whitespace")),
        (
            "http://10.0.0.2:8790\n",
            Rejected("contains whitespace ('\\n')"),
        ),
        ("http://h/a b", Rejected("contains whitespace")),
        ("http://h:8790/\t", Rejected("contains whitespace ('\\t')")),
        // Query and fragment.
        ("http://host?x=1", Rejected("has a query (\"?x=1\")")),
        ("http://h:8790/ready?x=1", Rejected("has a query")),
        ("http://h/?", Rejected("has a query")),
        ("http://h/#top", Rejected("has a fragment (\"#top\")")),
        ("http://h#", Rejected("has a fragment")),
        // User info.
        ("http://u:p@h/", Rejected("carries user info")),
        ("http://user@10.0.0.2:8790", Rejected("carries user info")),
        ("http://@h/", Rejected("carries user info")),
        // Schemes.
        ("ftp://x", Rejected("scheme \"ftp\"; only http and https")),
        ("ws://10.0.0.2:8790", Rejected("scheme \"ws\"")),
        ("file:///etc/passwd", Rejected("scheme \"file\"")),
        ("//host:8790", Rejected("has no scheme")),
        ("://host", Rejected("has no scheme")),
        ("10.0.0.2:8790", Rejected("has no scheme")),
        ("http:/h", Rejected("lacks \"//\" after \"http:\"")),
        ("HTTPS:h", Rejected("lacks \"//\" after \"HTTPS:\"")),
        ("localhost:8790", Rejected("has no scheme")),
        ("", Rejected("has no scheme")),
        // Hosts.
        ("http://", Rejected("has no host")),
        ("http:///ready", Rejected("has no host")),
        ("http://:80/", Rejected("empty host")),
        ("http://10.0.0.2,8790", Rejected("',' in host")),
        ("http://h!/", Rejected("'!' in host")),
        ("http://10.0.2:8790", Rejected("looks like an IPv4 address")),
        ("http://10.0.0.256", Rejected("looks like an IPv4 address")),
        ("http://167772162", Rejected("looks like an IPv4 address")),
        ("http://ho%41st", Rejected("not a valid URL")),
        // Ports.
        ("http://h:0", Rejected("port 0; a port is 1-65535")),
        ("http://h:65536", Rejected("port 65536; a port is 1-65535")),
        ("http://h:99999999999/", Rejected("a port is 1-65535")),
        ("http://a:b/", Rejected("port \"b\", which is not a number")),
        ("http://h:+80", Rejected("not a number")),
        ("http://h:-1", Rejected("not a number")),
        ("http://h:/", Rejected("no port after it")),
        ("http://h:8790:1", Rejected("more than one ':'")),
    ];

    #[test]
    fn accepts_and_rejects_as_the_table_says() {
        for (input, want) in CASES {
            let got = Url::parse(input);
            match (want, &got) {
                (Parsed(https, host, port, path), Ok(u)) => assert_eq!(
                    (u.https, u.host.as_str(), u.port, u.path.as_str()),
                    (*https, *host, *port, *path),
                    "{input:?}"
                ),
                (Rejected(phrase), Err(e)) => {
                    assert!(e.contains(phrase), "{input:?}: {e:?} lacks {phrase:?}");
                    assert!(e.contains("expected http://"), "{input:?}: {e:?}");
                }
                _ => panic!("{input:?}: got {got:?}"),
            }
        }
    }

    #[test]
    fn every_accepted_url_renders_to_text_that_parses_back_to_it() {
        for (input, _) in CASES {
            if let Ok(u) = Url::parse(input) {
                assert_eq!(
                    Url::parse(&u.to_string()),
                    Ok(u.clone()),
                    "{input:?} -> {u}"
                );
            }
        }
    }

    #[test]
    fn ipv6_gets_its_brackets_back_on_the_wire() {
        for (input, shown, host_header) in [
            ("http://[::1]:8790", "http://[::1]:8790/", "[::1]:8790"),
            (
                "http://[fe80::1]/ready",
                "http://[fe80::1]/ready",
                "[fe80::1]",
            ),
            (
                "https://[2001:db8::2]:443/",
                "https://[2001:db8::2]/",
                "[2001:db8::2]",
            ),
            ("http://10.0.0.2:80/", "http://10.0.0.2/", "10.0.0.2"),
        ] {
            let u = Url::parse(input).unwrap();
            assert_eq!(
                (u.to_string().as_str(), u.host_header().as_str()),
                (shown, host_header)
            );
        }
        let relay = Url::parse("http://[fd00::2]:8790/")
            .unwrap()
            .with_path("/connector/ready");
        assert_eq!(relay.to_string(), "http://[fd00::2]:8790/connector/ready");
    }

    #[test]
    fn the_password_in_rejected_user_info_is_not_echoed() {
        let e = Url::parse("http://admin:hunter2@10.0.0.2:8790/x").unwrap_err();
        assert!(!e.contains("hunter2") && !e.contains("admin"), "{e}");
        assert!(e.contains("\"http://***@10.0.0.2:8790/x\""), "{e}");
    }

    /// End to end through the agent's own client: connect to a bracketless
    /// host, send a bracketed Host header.
    #[tokio::test]
    async fn an_ipv6_url_reaches_a_server_on_ipv6_loopback() {
        let listener = match tokio::net::TcpListener::bind("[::1]:0").await {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("skipped: no IPv6 loopback here ({e})");
                return;
            }
        };
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let service = service_fn(
                |request: hyper::Request<hyper::body::Incoming>| async move {
                    let host = request.headers().get("host").cloned();
                    let seen = format!("{} {:?}", request.uri(), host);
                    Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from(seen))))
                },
            );
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
        let url = Url::parse(&format!("http://[::1]:{port}/agent/"))
            .unwrap()
            .with_path("/connector/ready");
        let response = Client::new()
            .unwrap()
            .get(&url, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(
            String::from_utf8_lossy(&response.body),
            format!("/agent/connector/ready Some(\"[::1]:{port}\")")
        );
    }

    /// A webhook URL's token is in its path or query: a bad one is refused
    /// for what is wrong with it, and the refusal never repeats it.
    #[test]
    fn a_secret_url_keeps_its_query_and_no_error_shows_it() {
        let u = Url::parse_secret("https://ntfy.example/SECRETTOPIC?auth=SECRETQ").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("ntfy.example", 443));
        assert_eq!(u.path, "/SECRETTOPIC?auth=SECRETQ");
        let u = Url::parse_secret("http://127.0.0.1:9/hooks/SECRET").unwrap();
        assert_eq!(u.path, "/hooks/SECRET");
        for bad in [
            "https://hooks.example/SECRET x",
            "ftp://hooks.example/SECRET",
            "https://user:SECRET@hooks.example/x",
            "https://hooks.example/x#SECRET",
            "https://hooks.example/x?SECRET q",
            "https://hooks.example:99999/SECRET",
            "hooks.example/SECRET",
            "https:///SECRET",
            "https://hooks.exa mple/SECRET",
        ] {
            let e = Url::parse_secret(bad).expect_err(bad);
            assert!(!e.contains("SECRET"), "{bad}: {e}");
            assert!(e.contains("not shown"), "{bad}: {e}");
        }
    }
}
