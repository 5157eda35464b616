//! Where a notification goes. The URL of a chat webhook is its password
//! (Slack, Discord and ntfy authenticate by it), so neither type here
//! shows it: `Debug` says only whether it is set, and nothing else in the
//! agent formats it.

use std::fmt;
use std::path::PathBuf;

use failover_core::notify::Format;

use crate::url::Url;

/// A secret read from the config or a file: never shown.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Hidden(pub String);

impl fmt::Debug for Hidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(hidden)")
    }
}

/// Where the URL is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum UrlFrom {
    /// `url` in the config, already parsed (a bad one is a config error).
    Inline(Hidden),
    /// `url_file`: read by `run` and `check-config`, like the token.
    File(PathBuf),
}

/// One `[notify]` table as the config gives it: files are not read yet
/// (`status` and `maintenance` load the config without them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub format: Format,
    pub url: UrlFrom,
    /// `secret_file` (json only): the HMAC key of the signature header.
    pub secret_file: Option<PathBuf>,
}

/// A destination ready to send to: its URL parsed, its secret read.
#[derive(Clone)]
pub(crate) struct Destination {
    pub format: Format,
    pub url: Url,
    pub secret: Option<Hidden>,
}

impl fmt::Debug for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Destination")
            .field("format", &self.format.as_str())
            .field("url", &"(hidden)")
            .field("signed", &self.secret.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_neither_the_url_nor_the_secret() {
        let d = Destination {
            format: Format::Json,
            url: Url::parse_secret("https://hooks.example/T0/B0/SECRETPATH").unwrap(),
            secret: Some(Hidden("SECRETKEY".into())),
        };
        let t = Target {
            format: Format::Slack,
            url: UrlFrom::Inline(Hidden("https://hooks.example/SECRETPATH".into())),
            secret_file: None,
        };
        for shown in [format!("{d:?}"), format!("{t:?}")] {
            assert!(!shown.contains("SECRET"), "{shown}");
        }
    }
}
