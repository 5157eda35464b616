//! `[notify]` (or `[[notify]]`, several): where the agent's decisions are
//! told. Parsed with the rest of the file; the files it names (`url_file`,
//! `secret_file`) are read by [`destinations`], which `run` and
//! `check-config` call and `status` and `maintenance` do not. No error
//! here repeats a URL or a secret: a webhook's URL is its password.

use std::path::{Path, PathBuf};

use failover_core::notify::Format;
use toml::Value;

use crate::notify::{Destination, Hidden, Target, UrlFrom};
use crate::url::Url;

use super::{err, secret_file, shown, ConfigError, Section};

/// More destinations than this is a config error: each is a task and a
/// queue, and a person rarely wants more than two places told.
pub(crate) const MAX_DESTINATIONS: usize = 8;
/// A signing secret shorter than this is refused, as a token is.
const MIN_SECRET_CHARS: usize = 16;

const KEYS: &[&str] = &["url", "url_file", "format", "secret_file"];

/// The `notify` value of the file's top table: absent, one table, or an
/// array of tables.
pub(super) fn parse(value: Option<&Value>) -> Result<Vec<Target>, ConfigError> {
    let tables: Vec<(String, &toml::Table)> = match value {
        None => return Ok(Vec::new()),
        Some(Value::Table(t)) => vec![("notify".to_string(), t)],
        Some(Value::Array(items)) => {
            if items.len() > MAX_DESTINATIONS {
                return Err(err(
                    "notify",
                    format!("{} destinations; at most {MAX_DESTINATIONS}", items.len()),
                ));
            }
            let mut tables = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::Table(t) => tables.push((format!("notify[{i}]"), t)),
                    other => {
                        return Err(err(
                            &format!("notify[{i}]"),
                            format!("{} is not a table; use [[notify]] sections", shown(other)),
                        ))
                    }
                }
            }
            tables
        }
        Some(other) => {
            return Err(err(
                "notify",
                format!(
                    "{} is not a table; use a [notify] section (or [[notify]] for several)",
                    shown(other)
                ),
            ))
        }
    };
    tables
        .into_iter()
        .map(|(prefix, table)| target(&Section::new(&prefix, table)))
        .collect()
}

fn target(section: &Section<'_>) -> Result<Target, ConfigError> {
    section.only(KEYS)?;
    let format = match section.string("format")? {
        None => Format::Json,
        Some(text) => Format::parse(&text).ok_or_else(|| {
            err(
                &section.key("format"),
                format!("{text:?} is not a format; use one of {}", Format::NAMES),
            )
        })?,
    };
    let url =
        match (section.string("url")?, section.string("url_file")?) {
            (Some(_), Some(_)) => {
                return Err(err(
                    &section.key("url_file"),
                    "set with url; give the URL in one place: url, or url_file naming a file that \
                 holds it",
                ))
            }
            (Some(text), None) => {
                Url::parse_secret(&text).map_err(|why| err(&section.key("url"), why))?;
                UrlFrom::Inline(Hidden(text))
            }
            (None, Some(path)) => UrlFrom::File(PathBuf::from(path)),
            (None, None) => return Err(err(
                &section.key("url"),
                "missing; the webhook URL (url), or url_file naming a file that holds it (mode \
                 0600: the URL is the receiver's password)",
            )),
        };
    let secret_file = section.string("secret_file")?.map(PathBuf::from);
    if secret_file.is_some() && !format.signs() {
        return Err(err(
            &section.key("secret_file"),
            format!(
                "means nothing with format = {:?}: only \"json\" is signed; Slack, Discord and \
                 ntfy authenticate by their secret URL",
                format.as_str()
            ),
        ));
    }
    Ok(Target {
        format,
        url,
        secret_file,
    })
}

/// The key a target's setting has in the file: `notify.url` for the one
/// `[notify]`, `notify[i].url` for the `i`-th `[[notify]]`.
fn key(targets: usize, index: usize, name: &str) -> String {
    if targets == 1 {
        format!("notify.{name}")
    } else {
        format!("notify[{index}].{name}")
    }
}

/// Reads the files the targets name and parses their URLs: what `run`
/// sends to. Errors name the key, never the value.
pub(crate) fn destinations(targets: &[Target]) -> Result<Vec<Destination>, ConfigError> {
    targets
        .iter()
        .enumerate()
        .map(|(i, target)| {
            let key = |name| key(targets.len(), i, name);
            let text = match &target.url {
                UrlFrom::Inline(Hidden(text)) => text.clone(),
                UrlFrom::File(path) => read(&key("url_file"), path, 1)?,
            };
            let url = Url::parse_secret(&text).map_err(|why| {
                let from = match &target.url {
                    UrlFrom::File(path) => format!(" (in {})", path.display()),
                    UrlFrom::Inline(_) => String::new(),
                };
                err(
                    &key(if matches!(target.url, UrlFrom::File(_)) {
                        "url_file"
                    } else {
                        "url"
                    }),
                    format!("{why}{from}"),
                )
            })?;
            let secret = match &target.secret_file {
                None => None,
                Some(path) => Some(Hidden(read(&key("secret_file"), path, MIN_SECRET_CHARS)?)),
            };
            Ok(Destination {
                format: target.format,
                url,
                secret,
            })
        })
        .collect()
}

fn read(key: &str, path: &Path, min_chars: usize) -> Result<String, ConfigError> {
    let use_ = secret_file::Use {
        readers_can: "can send messages in this agent's name (or read its receiver's password)",
        min_chars,
        why_long: "(it keys the messages' signature)",
    };
    secret_file::read(key, path, &use_)
}
