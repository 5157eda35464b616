//! The message bodies, one per receiver kind. The shell POSTs `body` with
//! `content_type` and `headers` to the secret URL; for `json` with a signing
//! secret it adds [`SIGNATURE_HEADER`] (HMAC-SHA256 of exactly `body`) and
//! [`TIMESTAMP_HEADER`].

use serde_json::json;

use super::event::Event;

/// `X-Tunnel-Failover-Signature: sha256=<hex>`: the GitHub/Stripe
/// convention; a receiver recomputes the HMAC of the raw body with the
/// shared secret and compares in constant time.
pub const SIGNATURE_HEADER: &str = "X-Tunnel-Failover-Signature";
/// `X-Tunnel-Failover-Timestamp: <unix seconds>` of the delivery attempt,
/// so a receiver can refuse stale replays (the body's `at` is signed too).
pub const TIMESTAMP_HEADER: &str = "X-Tunnel-Failover-Timestamp";

/// `X-Tunnel-Failover-Id: <event id>` on every delivery, whatever the
/// format: the chat bodies carry no id, and a receiver (or a relay in front
/// of a chat service) drops a retried duplicate by it.
pub const ID_HEADER: &str = "X-Tunnel-Failover-Id";

/// Chat messages stay short: Discord refuses content over 2000 characters.
const MAX_TEXT: usize = 1000;

/// Where a message goes, which decides its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The event's own JSON; signed when a secret is configured.
    Json,
    /// A Slack incoming webhook: `{"text": ...}`.
    Slack,
    /// A Discord webhook: `{"content": ...}`, with mentions disabled.
    Discord,
    /// An ntfy topic URL: the sentence as the body, title and priority in
    /// headers.
    Ntfy,
}

impl Format {
    /// The accepted names, for error messages.
    pub const NAMES: &'static str = "json, slack, discord, ntfy";

    /// Parses a config value.
    pub fn parse(text: &str) -> Option<Format> {
        match text {
            "json" => Some(Format::Json),
            "slack" => Some(Format::Slack),
            "discord" => Some(Format::Discord),
            "ntfy" => Some(Format::Ntfy),
            _ => None,
        }
    }

    /// The config name.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Slack => "slack",
            Format::Discord => "discord",
            Format::Ntfy => "ntfy",
        }
    }

    /// Whether a signing secret applies (only the generic JSON is signed;
    /// the chat services authenticate by their secret URL).
    pub fn signs(self) -> bool {
        self == Format::Json
    }
}

/// One HTTP body to POST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The request body.
    pub body: String,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Extra headers: [`ID_HEADER`] always, ntfy's title, priority and tags.
    pub headers: Vec<(&'static str, String)>,
}

/// The body for `format`.
pub fn render(format: Format, event: &Event) -> Message {
    let mut message = body(format, event);
    message.headers.push((ID_HEADER, header_safe(&event.id)));
    message
}

fn body(format: Format, event: &Event) -> Message {
    let text = bounded(&event.sentence());
    match format {
        Format::Json => Message {
            body: event.to_json().to_string(),
            content_type: "application/json",
            headers: Vec::new(),
        },
        Format::Slack => Message {
            body: json!({ "text": format!("{} {}", icon(event), slack_escape(&text)) }).to_string(),
            content_type: "application/json",
            headers: Vec::new(),
        },
        Format::Discord => Message {
            // Mentions off: a name or reason containing "@everyone" must
            // not ping a whole server.
            body: json!({
                "content": format!("{} {}", icon(event), text),
                "allowed_mentions": { "parse": [] },
            })
            .to_string(),
            content_type: "application/json",
            headers: Vec::new(),
        },
        Format::Ntfy => Message {
            body: text,
            content_type: "text/plain; charset=utf-8",
            headers: vec![
                (
                    "Title",
                    header_safe(&format!("tunnel-failover: {}", event.kind.as_str())),
                ),
                (
                    "Priority",
                    (if event.kind.is_bad() {
                        "high"
                    } else {
                        "default"
                    })
                    .into(),
                ),
                (
                    "Tags",
                    (if event.kind.is_bad() {
                        "warning"
                    } else {
                        "white_check_mark"
                    })
                    .into(),
                ),
            ],
        },
    }
}

/// `sha256=<lowercase hex>` of an HMAC the shell computed over the body.
pub fn signature_value(mac: &[u8]) -> String {
    let mut out = String::with_capacity(7 + mac.len() * 2);
    out.push_str("sha256=");
    for byte in mac {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

fn icon(event: &Event) -> &'static str {
    if event.kind.is_bad() {
        "\u{1F534}" // red circle
    } else {
        "\u{1F7E2}" // green circle
    }
}

/// Slack reads `<...>` as links and mentions and `&` as an entity: escape
/// all three, as its documentation asks.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// At most [`MAX_TEXT`] characters, cut on a character boundary.
fn bounded(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Header values: printable ASCII only, so nothing in an origin name can
/// end a header or start another.
fn header_safe(text: &str) -> String {
    text.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::event::tests::down;
    use serde_json::Value;

    #[test]
    fn names_parse_back_and_junk_does_not() {
        for f in [Format::Json, Format::Slack, Format::Discord, Format::Ntfy] {
            assert_eq!(Format::parse(f.as_str()), Some(f));
        }
        for junk in ["", "JSON", "teams", "json "] {
            assert_eq!(Format::parse(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn each_format_carries_the_sentence() {
        let e = down("e-1", "primary", 0);
        let json: Value = serde_json::from_str(&render(Format::Json, &e).body).unwrap();
        assert_eq!(json["id"], "e-1");
        let slack: Value = serde_json::from_str(&render(Format::Slack, &e).body).unwrap();
        assert!(slack["text"]
            .as_str()
            .unwrap()
            .contains("origin primary is down"));
        let discord: Value = serde_json::from_str(&render(Format::Discord, &e).body).unwrap();
        assert!(discord["content"].as_str().unwrap().contains("is down"));
        assert_eq!(discord["allowed_mentions"]["parse"], serde_json::json!([]));
        let ntfy = render(Format::Ntfy, &e);
        assert!(ntfy.body.contains("is down"));
        assert!(ntfy.headers.contains(&("Priority", "high".into())));
        for f in [Format::Json, Format::Slack, Format::Discord, Format::Ntfy] {
            assert!(
                render(f, &e).headers.contains(&(ID_HEADER, "e-1".into())),
                "{f:?}"
            );
        }
    }

    #[test]
    fn hostile_text_stays_text() {
        let mut e = down("e-1", "pri<!channel>", 0);
        e.reason = "x".repeat(5000);
        let slack = render(Format::Slack, &e).body;
        assert!(!slack.contains("<!channel>"), "{slack}");
        assert!(slack.len() < 1500, "bounded: {}", slack.len());
        e.kind = crate::notify::Kind::TakeOver;
        e.origin = None;
        e.node = Some("node\r\nX-Evil: 1".into());
        for (_, value) in render(Format::Ntfy, &e).headers {
            assert!(value.chars().all(|c| (' '..='~').contains(&c)), "{value:?}");
        }
    }

    #[test]
    fn signature_is_lowercase_hex_with_its_prefix() {
        assert_eq!(signature_value(&[0x00, 0xab, 0xff]), "sha256=00abff");
    }
}
