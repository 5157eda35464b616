//! The few URLs the agent calls: `http://` on the LAN, `https://` for the
//! egress check. Parsed once at config time.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub https: bool,
    pub host: String,
    pub port: u16,
    /// Always starts with `/`.
    pub path: String,
}

impl Url {
    pub fn parse(text: &str) -> Result<Url, String> {
        let bad = |why: &str| {
            format!(
                "{text:?} {why}; expected e.g. \"http://10.0.0.2:8790\" or \"https://host/path\""
            )
        };
        let (https, rest) = if let Some(rest) = text.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = text.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err(bad("is not an http:// or https:// URL"));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.contains('@') {
            return Err(bad("must not carry credentials"));
        }
        let default_port = if https { 443 } else { 80 };
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
                let port = port.parse::<u16>().map_err(|_| bad("has a bad port"))?;
                (host, port)
            }
            _ => (authority, default_port),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || port == 0 {
            return Err(bad("has no host or port"));
        }
        Ok(Url {
            https,
            host: host.to_string(),
            port,
            path: path.to_string(),
        })
    }

    /// The same origin with another path (`/connector/ready` on the peer).
    pub fn with_path(&self, path: &str) -> Url {
        let base = self.path.trim_end_matches('/');
        Url {
            path: format!("{base}{path}"),
            ..self.clone()
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
