//! Cloudflare Access service tokens in the config: an origin's
//! `access_client_id` and the Worker secret its `access_client_secret_var`
//! names. The secret never appears in an error, a log line or `Debug`.

use std::fmt;

use serde_json::Value;

use super::error::{error, ConfigError};
use super::vars::SETTINGS;

/// A Cloudflare Access service token (`CF-Access-Client-Id` and
/// `CF-Access-Client-Secret`). Its `Debug` never shows the secret, so a
/// `{:?}` of the config in a log cannot leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    /// `access_client_id`, sent as `CF-Access-Client-Id`.
    pub client_id: String,
    /// The value of the secret `access_client_secret_var` names, sent as
    /// `CF-Access-Client-Secret`.
    pub client_secret: String,
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessToken")
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .finish()
    }
}

/// `access_client_id` and `access_client_secret_var`: both or neither. The
/// secret itself is read from the var the second one names, and never
/// appears in an error.
pub(super) fn parse_access(
    at: &str,
    fields: &serde_json::Map<String, Value>,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Option<AccessToken>, ConfigError> {
    let id_setting = || format!("{at}.access_client_id");
    let var_setting = || format!("{at}.access_client_secret_var");
    let text = |key: &str, setting: String| -> Result<Option<String>, ConfigError> {
        match fields.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(other) => Err(error(setting, "is not a string").with_value(other)),
        }
    };
    let id = text("access_client_id", id_setting())?;
    let var = text("access_client_secret_var", var_setting())?;
    let (id, var) = match (id, var) {
        (None, None) => return Ok(None),
        (Some(_), None) => {
            return Err(error(
                var_setting(),
                "is missing; access_client_id is set, so name the Worker secret that holds the client secret",
            ))
        }
        (None, Some(_)) => {
            return Err(error(
                id_setting(),
                "is missing; access_client_secret_var is set, so give the service token's client id",
            ))
        }
        (Some(id), Some(var)) => (id, var),
    };
    // Sent as a header: visible ASCII only, so nothing can end the header.
    let header_safe = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic());
    if !header_safe(&id) {
        return Err(error(
            id_setting(),
            "must be a non-empty client id of visible ASCII characters, like \"0123abcd.access\"",
        )
        .with_value(&id));
    }
    let var_ok = !var.is_empty()
        && var.len() <= 128
        && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !var_ok {
        return Err(error(
            var_setting(),
            "is not a var name; expected letters, digits and '_', like \"ACCESS_SECRET_PRIMARY\"",
        )
        .with_value(&var));
    }
    if SETTINGS.contains(&var.as_str()) {
        return Err(error(
            var_setting(),
            "names one of the Worker's settings; give the secret a var of its own",
        )
        .with_value(&var));
    }
    // Secrets pasted with a trailing newline must still work.
    let secret = get(&var).map(|s| s.trim().to_string()).unwrap_or_default();
    if secret.is_empty() {
        return Err(error(
            var_setting(),
            "names a var that is missing or empty; set that Worker secret with `wrangler secret put <the var's name>`",
        )
        .with_value(&var));
    }
    if !header_safe(&secret) {
        return Err(error(
            var_setting(),
            "names a var whose value has characters a header cannot carry; expected visible ASCII",
        )
        .with_value(&var));
    }
    Ok(Some(AccessToken {
        client_id: id,
        client_secret: secret,
    }))
}
