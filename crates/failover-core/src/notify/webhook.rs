//! Where messages go: a receiver's format, its URL and an optional signing
//! secret. Both halves read the URL from a secret (a Worker secret, the
//! agent's config), because a webhook URL is a credential: Slack's and
//! Discord's carry their token in the path, ntfy's topic name is the only
//! thing between a stranger and your phone. So nothing here ever shows the
//! URL or the secret: `Debug` redacts them, [`check_url`]'s errors never
//! quote them, and logs name a webhook by [`Webhook::name`] alone.

use std::fmt;

use super::format::Format;

/// One receiver.
#[derive(Clone, PartialEq, Eq)]
pub struct Webhook {
    /// What the body looks like.
    pub format: Format,
    /// Where it is POSTed; a credential.
    pub url: String,
    /// The HMAC key of the signature header (`Format::Json` only).
    pub secret: Option<String>,
    /// How logs, errors and the status page name this receiver: the name
    /// of the secret holding the URL, never the URL.
    pub name: String,
}

impl fmt::Debug for Webhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Webhook")
            .field("format", &self.format)
            .field("url", &"<redacted>")
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("name", &self.name)
            .finish()
    }
}

/// The longest URL accepted: far above any real webhook, far below what
/// could hurt.
const MAX_URL: usize = 2048;

/// Whether `url` may receive events: `https://` anywhere, or `http://` to
/// this machine only (`localhost`, `127.0.0.1`, `[::1]`: a receiver in a
/// test or beside the agent), with a host, no credentials, no fragment and
/// no whitespace or control characters. The error says what is wrong and
/// never quotes the URL.
pub fn check_url(url: &str) -> Result<(), &'static str> {
    if url.len() > MAX_URL {
        return Err("is longer than 2048 characters");
    }
    if url.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err("contains whitespace or control characters");
    }
    let lower = url.to_ascii_lowercase();
    let (https, rest) = if let Some(rest) = lower.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = lower.strip_prefix("http://") {
        (false, rest)
    } else {
        return Err("is not an https:// URL");
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err(
            "must not carry credentials (user@host); most receivers put their token in the path",
        );
    }
    if lower.contains('#') {
        return Err("must not have a fragment (#...)");
    }
    let host = host_of(authority);
    let host_ok = !host.is_empty()
        && host.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'[' | b']' | b':')
        });
    if !host_ok {
        return Err("has no valid host name");
    }
    if !https && !matches!(host, "localhost" | "127.0.0.1" | "[::1]") {
        return Err("is http://, which is allowed only to localhost or 127.0.0.1; use https://");
    }
    Ok(())
}

/// The host of an authority, without its port.
fn host_of(authority: &str) -> &str {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) => &authority[..=end],
            None => "",
        };
    }
    authority.split(':').next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_http_only_here() {
        for good in [
            "https://hooks.slack.com/services/T0/B0/xyz",
            "https://discord.com/api/webhooks/1/abc?wait=true",
            "https://ntfy.sh/my-topic",
            "HTTPS://Example.COM:8443/x",
            "http://127.0.0.1:8080/hook",
            "http://localhost/hook",
            "http://[::1]:9/x",
        ] {
            assert_eq!(check_url(good), Ok(()), "{good}");
        }
        let bad = [
            ("http://hooks.example.com/x", "allowed only to localhost"),
            ("http://127.0.0.2/x", "allowed only to localhost"),
            (
                "http://localhost.evil.example/x",
                "allowed only to localhost",
            ),
            ("ftp://example.com/x", "not an https://"),
            ("hooks.slack.com/x", "not an https://"),
            ("https://user:hunter2@example.com/x", "credentials"),
            ("https://example.com/x#frag", "fragment"),
            ("https:///x", "no valid host"),
            ("https://exa mple.com/x", "whitespace"),
            ("https://example.com/x\n", "whitespace"),
            ("https://ex<ample.com/", "no valid host"),
        ];
        for (url, why) in bad {
            let e = check_url(url).expect_err(url);
            assert!(e.contains(why), "{url}: {e}");
            assert!(!e.contains("hunter2") && !e.contains("example"), "{e}");
        }
        assert!(check_url(&format!("https://a.example/{}", "x".repeat(3000))).is_err());
    }

    #[test]
    fn debug_never_shows_the_url_or_the_secret() {
        let hook = Webhook {
            format: Format::Json,
            url: "https://example.com/hunter2".into(),
            secret: Some("s3cr3t".into()),
            name: "HOOK_URL".into(),
        };
        let shown = format!("{hook:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("s3cr3t"),
            "{shown}"
        );
        assert!(shown.contains("HOOK_URL"), "{shown}");
    }
}
