//! `FALLBACK`: the page a GET or HEAD gets once every origin has failed
//! (what decides that, and what follows a fetch of it, is
//! [`crate::edge::fallback`]). `{ url = "https://..." }` names a page to
//! fetch as it is; `{ html_var = "NAME" }` a var or secret holding the page.
//!
//! The page is served under the site's own hostname, so whatever it holds
//! runs with the site's cookies in reach: a URL must be https (a page
//! fetched in clear text could be rewritten on the way), and carries no
//! credentials (they would sit in `[vars]`, readable by everyone with
//! access to the Worker's settings; the log is the only place they appear).

use std::fmt;

use serde_json::Value;

use super::error::{error, ConfigError};
use super::urls::parse_base_url;
use super::vars::SETTINGS;

/// The keys `FALLBACK` may have; exactly one of them.
const FALLBACK_KEYS: [&str; 2] = ["url", "html_var"];

/// What accepted `FALLBACK` values look like, for every error about it.
const ACCEPTED: &str =
    "expected { url = \"https://status.example.com/\" } or { html_var = \"FALLBACK_PAGE\" }";

/// The configured fallback page.
#[derive(Clone, PartialEq, Eq)]
pub enum Fallback {
    /// Fetched as it is, whatever the request's path (a checked https URL).
    Url(String),
    /// The page itself, from the var `html_var` names.
    Html(String),
}

impl Fallback {
    /// `url` or `html_var`: which kind, for the status endpoint.
    pub fn kind(&self) -> &'static str {
        match self {
            Fallback::Url(_) => "url",
            Fallback::Html(_) => "html_var",
        }
    }
}

// A page kept in a secret is the secret's business: `{:?}` of the config
// (a log line) shows its size, not its text.
impl fmt::Debug for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fallback::Url(url) => f.debug_tuple("Url").field(url).finish(),
            Fallback::Html(page) => write!(f, "Html(<{} bytes>)", page.len()),
        }
    }
}

/// `FALLBACK`'s text (JSON: an object binding arrives stringified), or None
/// when it is absent. `get` reads the var `html_var` names (a `dyn`: one
/// copy of this in the Wasm, not one per caller's lookup).
pub(super) fn parse_fallback(
    text: Option<String>,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Fallback>, ConfigError> {
    const SETTING: &str = "FALLBACK";
    let Some(text) = text else {
        return Ok(None);
    };
    let value: Value = serde_json::from_str(&text)
        .map_err(|_| error(SETTING, format!("is not valid JSON; {ACCEPTED}")).with_value(&text))?;
    let Value::Object(fields) = value else {
        return Err(error(SETTING, format!("must be an object; {ACCEPTED}")).with_value(&text));
    };
    if let Some(unknown) = fields.keys().find(|k| !FALLBACK_KEYS.contains(&k.as_str())) {
        return Err(error(
            SETTING,
            format!(
                "has a key that is not url or html_var (the Worker's log names it); {ACCEPTED}"
            ),
        )
        .with_value(unknown));
    }
    let text_of = |key: &'static str| -> Result<Option<&str>, ConfigError> {
        match fields.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim())),
            Some(other) => {
                Err(error(format!("FALLBACK.{key}"), "is not a string").with_value(other))
            }
        }
    };
    match (text_of("url")?, text_of("html_var")?) {
        (Some(url), None) => {
            check_url(url).map_err(|why| error("FALLBACK.url", why).with_value(url))?;
            Ok(Some(Fallback::Url(url.to_string())))
        }
        (None, Some(var)) => page_in(var, get).map(|page| Some(Fallback::Html(page))),
        _ => Err(error(
            SETTING,
            format!("must have exactly one of url and html_var; {ACCEPTED}"),
        )
        .with_value(&text)),
    }
}

/// The page in the var `html_var` names.
fn page_in(var: &str, get: &dyn Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    const SETTING: &str = "FALLBACK.html_var";
    let var_ok = !var.is_empty()
        && var.len() <= 128
        && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !var_ok {
        return Err(error(
            SETTING,
            "is not a var name; expected letters, digits and '_', like \"FALLBACK_PAGE\"",
        )
        .with_value(var));
    }
    if SETTINGS.contains(&var) {
        return Err(error(
            SETTING,
            "names one of the Worker's settings; keep the page in a var of its own",
        )
        .with_value(var));
    }
    match get(var) {
        Some(page) if !page.trim().is_empty() => Ok(page),
        _ => Err(error(
            SETTING,
            "names a var that is missing or empty (the Worker's log names it); set it in [vars] or with `wrangler secret put <the var's name>`",
        )
        .with_value(var)),
    }
}

/// Whether `url` may be fetched as the fallback page: `https://`, a valid
/// host (and port), no credentials, no fragment, and nothing but visible
/// ASCII (an internationalised name or path goes percent-encoded). A path
/// and query are allowed and kept as they are. Redirects the fallback
/// answers with are held to the same rule
/// (`crate::edge::fallback::after_fetch`).
pub fn check_url(url: &str) -> Result<(), &'static str> {
    if !url.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(
            "has characters a URL cannot carry (spaces, controls, non-ASCII); percent-encode them",
        );
    }
    let Some(rest) = url
        .get(..8)
        .filter(|scheme| scheme.eq_ignore_ascii_case("https://"))
        .map(|_| &url[8..])
    else {
        return Err("must start with https://: the page is served under the site's own name");
    };
    if url.contains('#') {
        return Err("must not have a fragment");
    }
    let end = rest.find(['/', '\\', '?']).unwrap_or(rest.len());
    if rest[end..].starts_with('\\') {
        return Err("must not contain '\\'");
    }
    parse_base_url(&format!("https://{}", &rest[..end])).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, vars: &[(&str, &str)]) -> Result<Option<Fallback>, ConfigError> {
        parse_fallback(Some(text.to_string()), &|name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn a_url_or_a_page() {
        assert_eq!(
            parse(r#"{"url":"https://status.example.pages.dev/"}"#, &[]),
            Ok(Some(Fallback::Url(
                "https://status.example.pages.dev/".to_string()
            )))
        );
        assert_eq!(
            parse(
                r#"{"url":" HTTPS://Status.Example.com:8443/down?lang=en "}"#,
                &[]
            ),
            Ok(Some(Fallback::Url(
                "HTTPS://Status.Example.com:8443/down?lang=en".to_string()
            ))),
            "kept as written, surrounding spaces aside"
        );
        let page = "<!doctype html><p>Back soon.</p>";
        let parsed = parse(r#"{"html_var":"DOWN_PAGE"}"#, &[("DOWN_PAGE", page)]);
        assert_eq!(parsed, Ok(Some(Fallback::Html(page.to_string()))));
        assert_eq!(parse_fallback(None, &|_: &str| None), Ok(None));
    }

    #[test]
    fn a_page_from_a_secret_is_not_in_debug() {
        let fallback = Fallback::Html("hunter2 inside".to_string());
        let shown = format!("{fallback:?}");
        assert_eq!(shown, "Html(<14 bytes>)");
        assert_eq!(fallback.kind(), "html_var");
        assert_eq!(Fallback::Url("https://a.example/".into()).kind(), "url");
    }

    /// (FALLBACK, the setting named, a phrase of the problem, what only the log may show)
    type Case<'a> = (&'a str, &'a str, &'a str, &'a str);

    #[test]
    fn hostile_or_broken_values_name_the_setting_and_log_the_value() {
        let table: &[Case] = &[
            (
                r#"{"url":"http://status.example/hunter2"}"#,
                "FALLBACK.url",
                "must start with https://",
                "hunter2",
            ),
            (
                r#"{"url":"https://admin:hunter2@status.example/"}"#,
                "FALLBACK.url",
                "credentials",
                "hunter2",
            ),
            (
                r#"{"url":"https://hunter2@status.example/"}"#,
                "FALLBACK.url",
                "credentials",
                "hunter2",
            ),
            (
                r#"{"url":"https://status.example/#hunter2"}"#,
                "FALLBACK.url",
                "fragment",
                "hunter2",
            ),
            (
                r#"{"url":"https://status.example/a b?hunter2"}"#,
                "FALLBACK.url",
                "characters a URL cannot carry",
                "hunter2",
            ),
            (
                r#"{"url":"https://hunter2\u0000.example/"}"#,
                "FALLBACK.url",
                "characters a URL cannot carry",
                "hunter2",
            ),
            (
                r#"{"url":"https:///hunter2"}"#,
                "FALLBACK.url",
                "no valid host",
                "hunter2",
            ),
            (
                r#"{"url":"https://status.example:99999/hunter2"}"#,
                "FALLBACK.url",
                "invalid port",
                "hunter2",
            ),
            (
                r#"{"url":"https://status.example\\@evil.example/hunter2"}"#,
                "FALLBACK.url",
                "",
                "hunter2",
            ),
            (
                r#"{"url":"javascript:hunter2"}"#,
                "FALLBACK.url",
                "https://",
                "hunter2",
            ),
            (r#"{"url":7}"#, "FALLBACK.url", "is not a string", "7"),
            (
                r#"{"html_var":"HUNTER2"}"#,
                "FALLBACK.html_var",
                "names a var that is missing or empty",
                "HUNTER2",
            ),
            (
                r#"{"html_var":"EMPTY_PAGE"}"#,
                "FALLBACK.html_var",
                "missing or empty",
                "EMPTY_PAGE",
            ),
            (
                r#"{"html_var":"STATUS_TOKEN"}"#,
                "FALLBACK.html_var",
                "names one of the Worker's settings",
                "STATUS_TOKEN",
            ),
            (
                r#"{"html_var":"hunter2-page"}"#,
                "FALLBACK.html_var",
                "is not a var name",
                "hunter2-page",
            ),
            (
                r#"{"url":"https://a.example/","html_var":"HUNTER2"}"#,
                "FALLBACK",
                "exactly one of url and html_var",
                "HUNTER2",
            ),
            (
                r#"{"hunter2":"x"}"#,
                "FALLBACK",
                "has a key that is not url or html_var",
                "hunter2",
            ),
            (r#"{}"#, "FALLBACK", "exactly one of url and html_var", "{}"),
            (
                r#""https://status.example/hunter2""#,
                "FALLBACK",
                "must be an object",
                "hunter2",
            ),
            (
                "https://status.example/hunter2",
                "FALLBACK",
                "is not valid JSON",
                "hunter2",
            ),
            ("", "FALLBACK", "is not valid JSON", ""),
        ];
        for (text, setting, problem, logged) in table {
            let e = parse(text, &[("EMPTY_PAGE", " \n")]).expect_err(text);
            let shown = e.to_string();
            assert_eq!(e.setting, *setting, "{text}");
            assert!(
                shown.starts_with(&format!("configuration error in {setting}: ")),
                "{shown}"
            );
            assert!(e.problem.contains(problem), "{text}: {shown}");
            if !logged.is_empty() && *logged != "7" && *logged != "{}" {
                assert!(!shown.contains(logged), "{shown} shows the value");
            }
            let value = e.value.clone().unwrap_or_default();
            assert!(
                value.contains(logged),
                "{text}: the log lacks it: {value:?}"
            );
        }
    }

    #[test]
    fn urls_fetched_as_the_fallback() {
        for good in [
            "https://status.example.com",
            "https://status.example.com/",
            "https://status.example.com/down.html?from=worker&x=%20",
            "https://[2001:db8::1]:8443/",
            "HTTPS://A.EXAMPLE/",
        ] {
            assert_eq!(check_url(good), Ok(()), "{good}");
        }
        for bad in [
            "http://status.example.com/",
            "ftp://status.example.com/",
            "//status.example.com/",
            "/down.html",
            "https://",
            "https://user@status.example.com/",
            "https://status.example.com/é",
            "https://status.example.com\\evil.example/",
            "https://.example.com/",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
