//! `NOTIFY` and `NOTIFY_MIN_INTERVAL_S`: where the global checker sends
//! its events. Each entry names the Worker secrets holding its URL
//! (`url_var`) and, for `json`, its signing key (`secret_var`); their
//! values are read here and never appear in an error, a log line or
//! `Debug` (errors name the var, and the log gets the var's name as the
//! value, not the URL).

use serde_json::{Map, Value};

use super::error::{error, ConfigError};
use super::vars::SETTINGS;
use crate::notify::webhook::check_url;
use crate::notify::{Format, Webhook};

/// `NOTIFY_MIN_INTERVAL_S` unset: one message per origin per 5 minutes.
pub const DEFAULT_NOTIFY_MIN_INTERVAL_S: u64 = 300;

/// The most receivers: each event is one POST per receiver.
const MAX_WEBHOOKS: usize = 10;

/// The keys a `NOTIFY` entry may have.
const NOTIFY_KEYS: [&str; 3] = ["format", "url_var", "secret_var"];

/// The name of the global checker's Durable Object binding. The config's
/// lookup answers it with any text when the binding exists: the checker
/// is the one that sends, so `NOTIFY` without it is an error.
pub const CHECKER_BINDING: &str = "HEALTH_CHECKER";

/// `NOTIFY`, its secrets read through `get`; empty when unset.
pub(super) fn parse_notify(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Vec<Webhook>, ConfigError> {
    let Some(text) = get("NOTIFY") else {
        return Ok(Vec::new());
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        error(
            "NOTIFY",
            format!(
                "is not valid JSON (at line {}, column {}); expected an array of {{format, url_var}} objects",
                e.line(),
                e.column()
            ),
        )
        .with_value(&text)
    })?;
    let Value::Array(items) = value else {
        return Err(error(
            "NOTIFY",
            "must be an array of {format, url_var, secret_var} objects",
        ));
    };
    if items.len() > MAX_WEBHOOKS {
        return Err(error(
            "NOTIFY",
            format!("has more than {MAX_WEBHOOKS} entries"),
        ));
    }
    if !items.is_empty() && get(CHECKER_BINDING).is_none() {
        return Err(error(
            "NOTIFY",
            "needs the HEALTH_CHECKER Durable Object binding: the global checker sends the notifications; add its three blocks to wrangler.toml (README, \"Get told when it fails over\")",
        ));
    }
    let mut hooks: Vec<Webhook> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let hook = parse_entry(i, item, get)?;
        if hooks.iter().any(|h| h.name == hook.name) {
            return Err(error(
                format!("NOTIFY[{i}].url_var"),
                "is used twice; one entry per receiver",
            )
            .with_value(&hook.name));
        }
        hooks.push(hook);
    }
    Ok(hooks)
}

fn parse_entry(
    i: usize,
    item: &Value,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Webhook, ConfigError> {
    let Value::Object(fields) = item else {
        return Err(error(
            "NOTIFY",
            format!("entry {i} must be an object with format and url_var"),
        ));
    };
    if let Some(unknown) = fields.keys().find(|k| !NOTIFY_KEYS.contains(&k.as_str())) {
        return Err(error(
            format!("NOTIFY[{i}]"),
            format!(
                "has a key that is not one of {} (the Worker's log names it)",
                NOTIFY_KEYS.join(", ")
            ),
        )
        .with_value(unknown));
    }
    let format_text = text(fields, i, "format")?.ok_or_else(|| {
        error(
            format!("NOTIFY[{i}].format"),
            "is missing; expected one of json, slack, discord, ntfy",
        )
    })?;
    let format = Format::parse(&format_text.to_ascii_lowercase()).ok_or_else(|| {
        error(
            format!("NOTIFY[{i}].format"),
            format!("is not accepted; expected one of {}", Format::NAMES),
        )
        .with_value(&format_text)
    })?;
    let url_var = text(fields, i, "url_var")?.ok_or_else(|| {
        error(
            format!("NOTIFY[{i}].url_var"),
            "is missing; name the Worker secret that holds the webhook URL",
        )
    })?;
    let url = secret(i, "url_var", &url_var, get)?;
    check_url(&url).map_err(|why| {
        error(
            format!("NOTIFY[{i}].url_var"),
            format!("names a secret whose URL {why}"),
        )
        // The var's name for the log, never the URL: it is a credential.
        .with_value(&url_var)
    })?;
    let secret = match text(fields, i, "secret_var")? {
        None => None,
        Some(_) if !format.signs() => {
            return Err(error(
                format!("NOTIFY[{i}].secret_var"),
                "applies only to format json: Slack, Discord and ntfy are authenticated by their secret URL",
            ))
        }
        Some(var) => Some(secret(i, "secret_var", &var, get)?),
    };
    Ok(Webhook {
        format,
        url,
        secret,
        name: url_var,
    })
}

/// A string field, trimmed; None when absent.
fn text(fields: &Map<String, Value>, i: usize, key: &str) -> Result<Option<String>, ConfigError> {
    match fields.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(other) => {
            Err(error(format!("NOTIFY[{i}].{key}"), "is not a string").with_value(other))
        }
    }
}

/// The value of the secret `var` names, trimmed (pasted secrets end in a
/// newline). Errors name the var, never the value.
fn secret(
    i: usize,
    key: &str,
    var: &str,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<String, ConfigError> {
    let setting = || format!("NOTIFY[{i}].{key}");
    let var_ok = !var.is_empty()
        && var.len() <= 128
        && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !var_ok {
        return Err(error(
            setting(),
            "is not a var name; expected letters, digits and '_', like \"SLACK_WEBHOOK_URL\"",
        )
        .with_value(var));
    }
    if SETTINGS.contains(&var) || var == CHECKER_BINDING {
        return Err(error(
            setting(),
            "names one of the Worker's settings; give the secret a var of its own",
        )
        .with_value(var));
    }
    let value = get(var).map(|s| s.trim().to_string()).unwrap_or_default();
    if value.is_empty() {
        return Err(error(
            setting(),
            "names a var that is missing or empty; set that Worker secret with `wrangler secret put <the var's name>`",
        )
        .with_value(var));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const URL: &str = "https://hooks.example.com/services/hunter2";

    fn parse(vars: &[(&str, &str)]) -> Result<Vec<Webhook>, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        parse_notify(&|k: &str| map.get(k).cloned())
    }

    #[test]
    fn unset_or_empty_is_off() {
        assert_eq!(parse(&[]), Ok(Vec::new()));
        assert_eq!(
            parse(&[("NOTIFY", "[]")]),
            Ok(Vec::new()),
            "no binding needed"
        );
    }

    #[test]
    fn entries_read_their_secrets() {
        let hooks = parse(&[
            (
                "NOTIFY",
                r#"[{"format":"slack","url_var":"SLACK_URL"},
                    {"format":"JSON","url_var":"HOOK_URL","secret_var":"HOOK_KEY"}]"#,
            ),
            ("HEALTH_CHECKER", "bound"),
            ("SLACK_URL", &format!("{URL}\n")),
            ("HOOK_URL", "http://127.0.0.1:9999/in"),
            ("HOOK_KEY", " k3y "),
        ])
        .expect("valid");
        assert_eq!(hooks.len(), 2);
        assert_eq!(
            (hooks[0].format, hooks[0].url.as_str()),
            (Format::Slack, URL)
        );
        assert_eq!(hooks[0].name, "SLACK_URL");
        assert_eq!(hooks[0].secret, None);
        assert_eq!(hooks[1].format, Format::Json);
        assert_eq!(hooks[1].secret.as_deref(), Some("k3y"));
    }

    /// The vars, the setting the error must name, a phrase it must contain.
    type Bad<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);

    #[test]
    fn bad_entries_name_the_setting_and_never_the_url_or_secret() {
        let bound = ("HEALTH_CHECKER", "bound");
        let url = ("HOOK", URL);
        let cases: &[Bad] = &[
            ("{}", &[bound], "NOTIFY", "must be an array"),
            ("[x", &[bound], "NOTIFY", "not valid JSON"),
            (r#"["slack"]"#, &[bound], "NOTIFY", "must be an object"),
            (
                r#"[{"format":"slack","url_var":"HOOK"}]"#,
                &[url],
                "NOTIFY",
                "needs the HEALTH_CHECKER Durable Object binding",
            ),
            (
                r#"[{"format":"teams","url_var":"HOOK"}]"#,
                &[bound, url],
                "NOTIFY[0].format",
                "expected one of json, slack, discord, ntfy",
            ),
            (
                r#"[{"url_var":"HOOK"}]"#,
                &[bound, url],
                "NOTIFY[0].format",
                "is missing",
            ),
            (
                r#"[{"format":"slack"}]"#,
                &[bound, url],
                "NOTIFY[0].url_var",
                "is missing",
            ),
            (
                r#"[{"format":"slack","url":"HOOK"}]"#,
                &[bound, url],
                "NOTIFY[0]",
                "has a key that is not one of",
            ),
            (
                r#"[{"format":"slack","url_var":"MISSING"}]"#,
                &[bound, url],
                "NOTIFY[0].url_var",
                "missing or empty",
            ),
            (
                r#"[{"format":"slack","url_var":"a-b"}]"#,
                &[bound, url],
                "NOTIFY[0].url_var",
                "is not a var name",
            ),
            (
                r#"[{"format":"slack","url_var":"STATUS_TOKEN"}]"#,
                &[bound, url, ("STATUS_TOKEN", URL)],
                "NOTIFY[0].url_var",
                "one of the Worker's settings",
            ),
            (
                r#"[{"format":"slack","url_var":7}]"#,
                &[bound, url],
                "NOTIFY[0].url_var",
                "is not a string",
            ),
            (
                r#"[{"format":"slack","url_var":"PLAIN"}]"#,
                &[bound, ("PLAIN", "http://hooks.example.com/hunter2")],
                "NOTIFY[0].url_var",
                "allowed only to localhost",
            ),
            (
                r#"[{"format":"slack","url_var":"CREDS"}]"#,
                &[bound, ("CREDS", "https://me:hunter2@hooks.example.com/x")],
                "NOTIFY[0].url_var",
                "credentials",
            ),
            (
                r#"[{"format":"slack","url_var":"HOOK","secret_var":"KEY"}]"#,
                &[bound, url, ("KEY", "hunter2")],
                "NOTIFY[0].secret_var",
                "applies only to format json",
            ),
            (
                r#"[{"format":"json","url_var":"HOOK","secret_var":"KEY"}]"#,
                &[bound, url],
                "NOTIFY[0].secret_var",
                "missing or empty",
            ),
            (
                r#"[{"format":"json","url_var":"HOOK"},{"format":"ntfy","url_var":"HOOK"}]"#,
                &[bound, url],
                "NOTIFY[1].url_var",
                "used twice",
            ),
        ];
        for (notify, vars, setting, needle) in cases {
            let mut all = vars.to_vec();
            all.push(("NOTIFY", notify));
            let e = parse(&all).expect_err(notify);
            assert_eq!(e.setting, *setting, "{notify}");
            assert!(e.problem.contains(needle), "{notify}: {}", e.problem);
            // Neither what a visitor reads nor what the log gets holds the
            // URL or the secret.
            let logged = e.value.clone().unwrap_or_default();
            for shown in [e.to_string(), logged] {
                assert!(!shown.contains("hunter2"), "{notify}: {shown}");
            }
        }
        let many = format!(
            "[{}]",
            [r#"{"format":"slack","url_var":"HOOK"}"#; 11].join(",")
        );
        let e = parse(&[bound, url, ("NOTIFY", &many)]).expect_err("too many");
        assert!(e.problem.contains("more than 10"), "{}", e.problem);
    }
}
