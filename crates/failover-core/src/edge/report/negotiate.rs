//! Which representation of the status document a client gets, from its
//! `Accept` header: the JSON every script and monitor reads, the HTML page
//! (a browser), or the plain text (scripts/status.mjs).

/// One URL, three bodies (so the answer varies on `Accept`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Representation {
    /// `application/json`: the document itself.
    Json,
    /// `text/html`: [`super::page::html`].
    Html,
    /// `text/plain`: [`super::text::render`].
    Text,
}

impl Representation {
    /// Its name across the seam to the operator module, which renders the
    /// two for a person (src/status.rs, src/operator/render.rs).
    pub fn name(self) -> &'static str {
        match self {
            Representation::Json => "json",
            Representation::Html => "html",
            Representation::Text => "text",
        }
    }

    /// The representation `name` names, if any.
    pub fn from_name(name: &str) -> Option<Representation> {
        [
            Representation::Json,
            Representation::Html,
            Representation::Text,
        ]
        .into_iter()
        .find(|r| r.name() == name)
    }
}

/// JSON unless the client weighs another representation strictly above it:
/// a tie (`*/*`, no header, both named) keeps the JSON every script and
/// monitor already reads. Between the two for a person, `text/plain` wins
/// only when weighed above `text/html` as well, so `text/*` and a browser's
/// `text/html,...,*/*;q=0.8` keep the page.
pub fn representation(accept: Option<&str>) -> Representation {
    let Some(a) = accept else {
        return Representation::Json;
    };
    let json = weight(a, "application", "json");
    let html = weight(a, "text", "html");
    let text = weight(a, "text", "plain");
    if text > json && text > html {
        Representation::Text
    } else if html > json {
        Representation::Html
    } else {
        Representation::Json
    }
}

/// The realm a browser shows when it asks for the credentials (and keys
/// what it remembers by).
pub const REALM: &str = "tunnel-failover status";

/// The `WWW-Authenticate` challenge of a 401 from the status endpoint. A
/// client that would get the page (a browser) is asked for Basic
/// credentials, so it shows its login dialog once and remembers them (the
/// password is `STATUS_TOKEN`, the user name anything); every other client
/// (a script, a monitor, `make status`) keeps the `Bearer` challenge it
/// always got, which no browser answers with a dialog.
pub fn challenge(representation: Representation) -> &'static str {
    match representation {
        Representation::Html => "Basic realm=\"tunnel-failover status\"",
        Representation::Json | Representation::Text => "Bearer",
    }
}

/// The q (in thousandths) that `accept` gives `kind/sub`: that of the most
/// specific range matching it (`kind/sub` over `kind/*` over `*/*`), 0 when
/// none does. A range with an unreadable q is ignored.
fn weight(accept: &str, kind: &str, sub: &str) -> u16 {
    let mut best: Option<(u8, u16)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let Some((k, s)) = parts.next().and_then(|media| media.split_once('/')) else {
            continue;
        };
        let (k, s) = (k.trim(), s.trim());
        let specificity = if k.eq_ignore_ascii_case(kind) && s.eq_ignore_ascii_case(sub) {
            2
        } else if k.eq_ignore_ascii_case(kind) && s == "*" {
            1
        } else if k == "*" && s == "*" {
            0
        } else {
            continue;
        };
        let mut q = Some(1000);
        for param in parts {
            if let Some((name, value)) = param.split_once('=') {
                if name.trim().eq_ignore_ascii_case("q") {
                    q = quality(value.trim());
                }
            }
        }
        let Some(q) = q else { continue };
        best = match best {
            Some((sp, old)) if sp > specificity || (sp == specificity && old >= q) => best,
            _ => Some((specificity, q)),
        };
    }
    best.map_or(0, |(_, q)| q)
}

/// RFC 9110's qvalue: `0`, `0.` and up to three digits, `1`, `1.000`.
fn quality(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(3)
        .fold(0u16, |acc, b| acc * 10 + u16::from(b - b'0'));
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROME: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
    const FIREFOX: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

    #[test]
    fn html_only_when_preferred_over_json() {
        // (Accept, whether it gets the page; JSON otherwise: none of these
        // weighs text/plain above both).
        let cases: &[(Option<&str>, bool)] = &[
            (Some(CHROME), true),
            (Some(FIREFOX), true),
            (Some("text/html"), true),
            (Some("TEXT/HTML"), true),
            (Some("text/*"), true),
            (
                Some(" text/html ; q=1.000 , application/json;q=0.999"),
                true,
            ),
            (Some("application/json;q=0.5, text/html;q=0.6"), true),
            // Ties and everything else stay JSON.
            (None, false),
            (Some(""), false),
            (Some("*/*"), false),
            (Some("application/json"), false),
            (Some("application/json, text/html"), false),
            (Some("text/html, application/json"), false),
            (Some("text/html;q=0.5, application/json"), false),
            (Some("text/html;q=0, */*"), false),
            (Some("text/html;q=0"), false),
            (Some("application/*, text/html;q=0.9"), false),
            // The most specific range decides, not the largest q.
            (
                Some("text/html;q=0.1, text/plain;q=0, text/*, application/json;q=0.2"),
                false,
            ),
            // Unreadable ranges count for nothing.
            (Some("text/html;q=2"), false),
            (Some("text/html;q=0.1234"), false),
            (Some("text/html;q=abc"), false),
            (Some("text/html;q=-1"), false),
            (Some("html"), false),
            (Some("*/html"), false),
            (Some(",,;;=,/"), false),
        ];
        for (accept, html) in cases {
            let expected = if *html {
                Representation::Html
            } else {
                Representation::Json
            };
            assert_eq!(representation(*accept), expected, "{accept:?}");
        }
    }

    #[test]
    fn text_only_when_preferred_over_both() {
        use Representation::{Html, Json, Text};
        let cases: &[(&str, Representation)] = &[
            ("text/plain", Text),
            ("TEXT/PLAIN; charset=utf-8", Text),
            ("text/plain, */*;q=0.1", Text),
            ("text/plain, application/json;q=0.9, text/html;q=0.9", Text),
            ("text/plain;q=0.5, text/*;q=0.4", Text),
            ("text/plain;q=0.5", Text),
            // A tie with JSON keeps the JSON, a tie with the page the page.
            ("text/plain, application/json", Json),
            ("application/json, text/plain", Json),
            ("text/plain;q=0.9, application/json", Json),
            ("text/plain, text/html", Html),
            ("text/*", Html),
            ("text/plain;q=0.8, text/html;q=0.9", Html),
            (CHROME, Html),
            ("*/*", Json),
            ("text/plain;q=0", Json),
            ("text/plain;q=0, text/*", Html),
            // The most specific range decides.
            ("text/plain;q=0.1, text/*, application/json;q=0.2", Html),
            ("text/html;q=0.1, text/*, application/json;q=0.2", Text),
            // Unreadable ranges count for nothing.
            ("text/plain;q=2", Json),
            ("text/plain;q=abc, text/html;q=0.1", Html),
            ("plain", Json),
            ("*/plain", Json),
        ];
        for (accept, expected) in cases {
            assert_eq!(representation(Some(accept)), *expected, "{accept:?}");
        }
    }

    #[test]
    fn browsers_are_asked_for_basic_credentials_and_scripts_for_a_bearer_token() {
        let cases: &[(Option<&str>, &str)] = &[
            (Some(CHROME), "Basic realm=\"tunnel-failover status\""),
            (Some(FIREFOX), "Basic realm=\"tunnel-failover status\""),
            (None, "Bearer"),
            (Some("*/*"), "Bearer"),
            (Some("application/json"), "Bearer"),
            (Some("text/plain"), "Bearer"),
        ];
        for (accept, expected) in cases {
            assert_eq!(challenge(representation(*accept)), *expected, "{accept:?}");
        }
        assert!(challenge(Representation::Html).contains(&format!("realm=\"{REALM}\"")));
    }

    #[test]
    fn qvalues() {
        let cases = [
            ("0", Some(0)),
            ("0.", Some(0)),
            ("0.8", Some(800)),
            ("0.05", Some(50)),
            ("0.123", Some(123)),
            ("1", Some(1000)),
            ("1.0", Some(1000)),
            ("1.000", Some(1000)),
            ("1.001", None),
            ("0.1234", None),
            ("2", None),
            ("", None),
            (".5", None),
            ("0.x", None),
            ("0.５", None),
        ];
        for (text, q) in cases {
            assert_eq!(quality(text), q, "{text:?}");
        }
    }
}
