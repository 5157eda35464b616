//! The Worker's settings (`[vars]` in wrangler.toml), parsed once into typed
//! values. Every value may arrive as a string (`wrangler dev --var`) or as
//! TOML/JSON; the shell hands each one over as text. An error names the
//! setting, the bad value and what would be accepted.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::expect::HealthExpect;
use crate::steering::{Candidate, HashKey, Policy};

pub const DEFAULT_ATTEMPT_TIMEOUT_MS: u64 = 6_000;
pub const DEFAULT_HEALTH_INTERVAL_MS: u64 = 15_000;
pub const DEFAULT_HEALTH_RISE: u32 = 2;
pub const DEFAULT_STATUS_PATH: &str = "/__failover/status";
pub const DEFAULT_REPLAY_BODY_MAX_BYTES: u64 = 1024 * 1024;
pub const DEFAULT_HEALTH_PATH: &str = "/";
pub const DEFAULT_HEALTH_FALL: u32 = 2;
pub const DEFAULT_WEIGHT: u32 = 1;
pub const MAX_WEIGHT: u32 = 1000;
/// 23 hours, as Cloudflare Load Balancing's cookie affinity defaults to.
pub const DEFAULT_AFFINITY_TTL_S: u32 = 82_800;
/// One year, the longest Max-Age worth stating.
pub const MAX_AFFINITY_TTL_S: u32 = 31_536_000;

/// The names of every setting, for the shell to read. The config may also
/// ask the lookup for the var an origin's `access_client_secret_var` names.
pub const SETTINGS: [&str; 16] = [
    "ORIGINS",
    "ATTEMPT_TIMEOUT_MS",
    "HEALTH_INTERVAL_MS",
    "HEALTH_RISE",
    "HEALTH_FALL",
    "STATUS_PATH",
    "STATUS_TOKEN",
    "REPLAY_BODY_MAX_BYTES",
    "COLO_HEALTH",
    "STEERING",
    "HASH_KEY",
    "AFFINITY",
    "AFFINITY_TTL_S",
    "AFFINITY_FAILOVER",
    "REPLAY_BUFFER_BUDGET_BYTES",
    "SILENCE_MS",
];

/// 32 MiB: a quarter of an isolate's 128 MB for bodies held for replay.
pub const DEFAULT_REPLAY_BUFFER_BUDGET_BYTES: u64 = 32 * 1024 * 1024;
pub const DEFAULT_SILENCE_MS: u64 = 2_000;

/// The keys an `ORIGINS` entry may have.
const ORIGIN_KEYS: [&str; 7] = [
    "name",
    "url",
    "health_path",
    "weight",
    "health_expect",
    "access_client_id",
    "access_client_secret_var",
];

/// One upstream, in priority order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Unique; appears in `X-Served-By`, `x-failover`, logs and status.
    pub name: String,
    /// `scheme://authority`, lower-case scheme, no trailing slash.
    pub base: String,
    /// Path probed while the origin is down; starts with `/`.
    pub health_path: String,
    /// Share of `weighted` and `hash` traffic, 0 to 1000; 0 is used only
    /// when no origin of weight above 0 is healthy.
    pub weight: u32,
    /// Which probe statuses mean healthy.
    pub health_expect: HealthExpect,
    /// A Cloudflare Access service token sent to this origin.
    pub access: Option<AccessToken>,
}

/// A Cloudflare Access service token (`CF-Access-Client-Id` and
/// `CF-Access-Client-Secret`). Its `Debug` never shows the secret, so a
/// `{:?}` of the config in a log cannot leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    pub client_id: String,
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

/// `AFFINITY`: whether clients are pinned to an origin by cookie.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AffinityMode {
    #[default]
    Off,
    Cookie,
}

/// `AFFINITY_FAILOVER`: what a pin becomes while its origin is down.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AffinityFailover {
    /// Keep the pin; the client returns when its origin recovers.
    #[default]
    Temporary,
    /// Re-pin the client to the origin that served it instead.
    Sticky,
}

impl AffinityMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AffinityMode::Off => "off",
            AffinityMode::Cookie => "cookie",
        }
    }
}

impl AffinityFailover {
    pub fn as_str(self) -> &'static str {
        match self {
            AffinityFailover::Temporary => "temporary",
            AffinityFailover::Sticky => "sticky",
        }
    }
}

/// The affinity settings together (see [`crate::affinity`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Affinity {
    pub mode: AffinityMode,
    /// `AFFINITY_TTL_S`: the cookie's Max-Age.
    pub ttl_s: u32,
    pub failover: AffinityFailover,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerConfig {
    pub origins: Vec<Origin>,
    pub attempt_timeout_ms: u64,
    pub health_interval_ms: u64,
    pub health_rise: u32,
    /// Consecutive failed probes before the global checker calls an origin
    /// down (a failed client attempt marks it down in the isolate at once).
    pub health_fall: u32,
    /// Share verdicts with the other isolates of the location (Cache API).
    pub colo_health: bool,
    pub status_path: String,
    /// None: the status path is proxied like any other.
    pub status_token: Option<String>,
    pub replay_body_max_bytes: u64,
    /// The most body bytes the isolate holds for replay at once, across all
    /// requests; a body that would exceed it is streamed to one origin.
    pub replay_buffer_budget_bytes: u64,
    /// An origin with an attempt outstanding this long and no response
    /// headers to anyone since is skipped by new requests; 0 = off.
    pub silence_ms: u64,
    pub steering: Policy,
    pub hash_key: HashKey,
    pub affinity: Affinity,
}

/// A setting that cannot be used, and why. What it displays (the body of
/// every response while the config is broken, seen by any visitor) names
/// the setting and the problem, never the value: a value can hold a
/// password (`https://user:pass@host`) or a secret's name. The value goes
/// to the Worker's log only (`value`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// A `[vars]` name, or one origin's key: `ORIGINS[1].weight`.
    pub setting: Cow<'static, str>,
    /// What is wrong, without the value.
    pub problem: String,
    /// The offending value as written, for the log alone.
    pub value: Option<String>,
}

impl ConfigError {
    /// The offending value, quoted as written, for the log.
    fn with_value(mut self, value: impl fmt::Debug) -> ConfigError {
        self.value = Some(format!("{value:?}"));
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "configuration error in {}: {}",
            self.setting, self.problem
        )
    }
}

impl std::error::Error for ConfigError {}

fn error(setting: impl Into<Cow<'static, str>>, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        setting: setting.into(),
        problem: problem.into(),
        value: None,
    }
}

impl WorkerConfig {
    /// Builds the config from a lookup of each setting's text (None when the
    /// setting is absent). Besides [`SETTINGS`], the lookup is asked for the
    /// vars that origins' `access_client_secret_var` name.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<WorkerConfig, ConfigError> {
        let origins_text = get("ORIGINS").ok_or_else(|| {
            error(
                "ORIGINS",
                "missing; set it to a JSON array like [{\"name\":\"primary\",\"url\":\"https://a.example.com\"}]",
            )
        })?;
        let status_path = get("STATUS_PATH").unwrap_or_else(|| DEFAULT_STATUS_PATH.to_string());
        if !status_path.starts_with('/') || status_path.contains(['?', '#']) || status_path == "/" {
            return Err(error(
                "STATUS_PATH",
                "must be a path starting with '/', other than '/' itself, without '?' or '#'",
            )
            .with_value(&status_path));
        }
        // Secrets pasted with a trailing newline must still match.
        let status_token = get("STATUS_TOKEN")
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        Ok(WorkerConfig {
            origins: parse_origins(&origins_text, &get)?,
            attempt_timeout_ms: number(
                &get,
                "ATTEMPT_TIMEOUT_MS",
                DEFAULT_ATTEMPT_TIMEOUT_MS,
                10,
                100_000,
            )?,
            health_interval_ms: number(
                &get,
                "HEALTH_INTERVAL_MS",
                DEFAULT_HEALTH_INTERVAL_MS,
                100,
                3_600_000,
            )?,
            health_rise: count(&get, "HEALTH_RISE", DEFAULT_HEALTH_RISE)?,
            health_fall: count(&get, "HEALTH_FALL", DEFAULT_HEALTH_FALL)?,
            colo_health: switch(&get, "COLO_HEALTH", true)?,
            status_path,
            status_token,
            replay_body_max_bytes: number(
                &get,
                "REPLAY_BODY_MAX_BYTES",
                DEFAULT_REPLAY_BODY_MAX_BYTES,
                0,
                // Held in the isolate's 128 MB: two concurrent uploads at the
                // cap must not take the isolate, and its health map, down.
                16 * 1024 * 1024,
            )?,
            replay_buffer_budget_bytes: number(
                &get,
                "REPLAY_BUFFER_BUDGET_BYTES",
                DEFAULT_REPLAY_BUFFER_BUDGET_BYTES,
                0,
                128 * 1024 * 1024,
            )?,
            silence_ms: silence_ms(&get)?,
            steering: choice(
                &get,
                "STEERING",
                Policy::Failover,
                Policy::parse,
                "\"failover\", \"weighted\" or \"hash\"",
            )?,
            hash_key: hash_key(&get)?,
            affinity: Affinity {
                mode: choice(
                    &get,
                    "AFFINITY",
                    AffinityMode::Off,
                    |t| match t {
                        "off" => Some(AffinityMode::Off),
                        "cookie" => Some(AffinityMode::Cookie),
                        _ => None,
                    },
                    "\"off\" or \"cookie\"",
                )?,
                ttl_s: seconds(&get, "AFFINITY_TTL_S", DEFAULT_AFFINITY_TTL_S)?,
                failover: choice(
                    &get,
                    "AFFINITY_FAILOVER",
                    AffinityFailover::Temporary,
                    |t| match t {
                        "temporary" => Some(AffinityFailover::Temporary),
                        "sticky" => Some(AffinityFailover::Sticky),
                        _ => None,
                    },
                    "\"temporary\" or \"sticky\"",
                )?,
            },
        })
    }

    /// The origins as [`crate::steering::attempt_order`] takes them, with
    /// the health map's verdicts (`HealthMap::is_up`).
    pub fn candidates(&self, is_up: impl Fn(usize) -> bool) -> Vec<Candidate<'_>> {
        self.origins
            .iter()
            .enumerate()
            .map(|(i, o)| Candidate {
                name: &o.name,
                weight: o.weight,
                healthy: is_up(i),
            })
            .collect()
    }
}

/// One of a few words, in any case, optionally quoted.
fn choice<T>(
    get: &impl Fn(&str) -> Option<String>,
    setting: &'static str,
    default: T,
    parse: impl Fn(&str) -> Option<T>,
    accepted: &str,
) -> Result<T, ConfigError> {
    let Some(text) = get(setting) else {
        return Ok(default);
    };
    parse(&text.trim().trim_matches('"').to_ascii_lowercase()).ok_or_else(|| {
        error(setting, format!("is not accepted; expected {accepted}")).with_value(&text)
    })
}

/// A duration in whole seconds, 1 to a year.
fn seconds(
    get: &impl Fn(&str) -> Option<String>,
    setting: &'static str,
    default: u32,
) -> Result<u32, ConfigError> {
    let value = number(
        get,
        setting,
        u64::from(default),
        1,
        u64::from(MAX_AFFINITY_TTL_S),
    )?;
    // In range by the check above, so this never falls back.
    Ok(u32::try_from(value).unwrap_or(default))
}

/// `HASH_KEY`: `ip`, `header:<name>` or `cookie:<name>`.
fn hash_key(get: &impl Fn(&str) -> Option<String>) -> Result<HashKey, ConfigError> {
    const SETTING: &str = "HASH_KEY";
    let Some(text) = get(SETTING) else {
        return Ok(HashKey::ClientIp);
    };
    let trimmed = text.trim().trim_matches('"');
    let accepted = "expected \"ip\", \"header:<name>\" or \"cookie:<name>\"";
    let (kind, name) = trimmed.split_once(':').unwrap_or((trimmed, ""));
    let kind = kind.trim().to_ascii_lowercase();
    let name = name.trim();
    // RFC 9110 token characters: what a header or cookie name may be.
    let is_token = !name.is_empty()
        && name.len() <= 256
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    match kind.as_str() {
        "ip" if name.is_empty() && !trimmed.contains(':') => Ok(HashKey::ClientIp),
        "header" | "cookie" if !is_token => Err(error(
            SETTING,
            format!("has no valid {kind} name; a name is letters, digits and !#$%&'*+-.^_`|~"),
        )
        .with_value(&text)),
        "header" => Ok(HashKey::Header(name.to_ascii_lowercase())),
        "cookie" => Ok(HashKey::Cookie(name.to_string())),
        _ => Err(error(SETTING, format!("is not accepted; {accepted}")).with_value(&text)),
    }
}

/// SILENCE_MS: 0 (off) or 100 to 60000. Below 100 ms an answer still on its
/// way would already count as silence.
fn silence_ms(get: &impl Fn(&str) -> Option<String>) -> Result<u64, ConfigError> {
    let ms = number(get, "SILENCE_MS", DEFAULT_SILENCE_MS, 0, 60_000)?;
    if (1..100).contains(&ms) {
        return Err(error(
            "SILENCE_MS",
            "is out of range; expected 0 (off) or 100 to 60000",
        )
        .with_value(ms));
    }
    Ok(ms)
}

fn number(
    get: &impl Fn(&str) -> Option<String>,
    setting: &'static str,
    default: u64,
    min: u64,
    max: u64,
) -> Result<u64, ConfigError> {
    let Some(text) = get(setting) else {
        return Ok(default);
    };
    let trimmed = text.trim().trim_matches('"');
    let value: u64 = trimmed.parse().map_err(|_| {
        error(
            setting,
            format!("is not a whole number; expected {min} to {max}"),
        )
        .with_value(&text)
    })?;
    if !(min..=max).contains(&value) {
        return Err(
            error(setting, format!("is out of range; expected {min} to {max}")).with_value(value),
        );
    }
    Ok(value)
}

/// A threshold of consecutive results, 1 to 100.
fn count(
    get: &impl Fn(&str) -> Option<String>,
    setting: &'static str,
    default: u32,
) -> Result<u32, ConfigError> {
    let value = number(get, setting, u64::from(default), 1, 100)?;
    // In range 1..=100 by the check above, so this never falls back.
    Ok(u32::try_from(value).unwrap_or(default))
}

fn switch(
    get: &impl Fn(&str) -> Option<String>,
    setting: &'static str,
    default: bool,
) -> Result<bool, ConfigError> {
    let Some(text) = get(setting) else {
        return Ok(default);
    };
    match text.trim().trim_matches('"').to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        _ => Err(error(setting, "is not a switch; expected \"on\" or \"off\"").with_value(&text)),
    }
}

fn parse_origins(
    text: &str,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Vec<Origin>, ConfigError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        error(
            "ORIGINS",
            format!(
                "is not valid JSON (at line {}, column {}); expected an array of {{name, url}} objects",
                e.line(),
                e.column()
            ),
        )
        .with_value(text)
    })?;
    let Value::Array(items) = value else {
        return Err(error(
            "ORIGINS",
            "must be an array of {name, url, health_path} objects",
        ));
    };
    if items.is_empty() {
        return Err(error("ORIGINS", "is empty; give at least one origin"));
    }
    let mut origins: Vec<Origin> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let origin = parse_origin(i, item, get)?;
        if origins.iter().any(|o| o.name == origin.name) {
            return Err(error(
                format!("ORIGINS[{i}].name"),
                "is used twice; names must be unique",
            )
            .with_value(&origin.name));
        }
        origins.push(origin);
    }
    Ok(origins)
}

fn parse_origin(
    index: usize,
    item: &Value,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Origin, ConfigError> {
    let Value::Object(fields) = item else {
        return Err(error(
            "ORIGINS",
            format!("entry {index} must be an object with name and url"),
        ));
    };
    if let Some(unknown) = fields.keys().find(|k| !ORIGIN_KEYS.contains(&k.as_str())) {
        return Err(error(
            format!("ORIGINS[{index}]"),
            format!(
                "has a key that is not one of {} (the Worker's log names it)",
                ORIGIN_KEYS.join(", ")
            ),
        )
        .with_value(unknown));
    }
    let text = |key: &str| -> Result<Option<&str>, ConfigError> {
        match fields.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(error(format!("ORIGINS[{index}].{key}"), "must be a string")),
        }
    };
    let name =
        text("name")?.ok_or_else(|| error(format!("ORIGINS[{index}].name"), "is missing"))?;
    let valid_name = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !valid_name {
        return Err(error(
            format!("ORIGINS[{index}].name"),
            "must be 1-64 characters of letters, digits, '-', '_' or '.'",
        )
        .with_value(name));
    }
    let url = text("url")?.ok_or_else(|| error(format!("ORIGINS[{index}].url"), "is missing"))?;
    let base = parse_base_url(url)
        .map_err(|why| error(format!("ORIGINS[{index}].url"), why).with_value(url))?;
    let health_path = text("health_path")?.unwrap_or(DEFAULT_HEALTH_PATH);
    if !health_path.starts_with('/') || health_path.starts_with("//") || health_path.contains('#') {
        return Err(error(
            format!("ORIGINS[{index}].health_path"),
            "must start with a single '/' and have no '#'",
        )
        .with_value(health_path));
    }
    let weight = match fields.get("weight") {
        None => DEFAULT_WEIGHT,
        Some(value) => parse_weight(index, value)?,
    };
    let health_expect = match fields.get("health_expect") {
        None => HealthExpect::default(),
        Some(Value::String(text)) => HealthExpect::parse(text).map_err(|why| {
            error(
                format!("ORIGINS[{index}].health_expect"),
                "is not a list of statuses; expected comma-separated codes (200), classes (2xx) or ranges (200-399) within 100-599",
            )
            .with_value(format_args!("{text:?}: {}", why.0))
        })?,
        Some(other) => {
            return Err(error(
                format!("ORIGINS[{index}].health_expect"),
                "is not a string; expected text like \"2xx\", \"200-399\" or \"2xx,304\"",
            )
            .with_value(other))
        }
    };
    Ok(Origin {
        name: name.to_string(),
        base,
        health_path: health_path.to_string(),
        weight,
        health_expect,
        access: parse_access(index, fields, get)?,
    })
}

fn parse_weight(index: usize, value: &Value) -> Result<u32, ConfigError> {
    let setting = format!("ORIGINS[{index}].weight");
    let accepted = format!("expected a whole number 0 to {MAX_WEIGHT}");
    let Value::Number(n) = value else {
        return Err(error(setting, format!("is not a number; {accepted}")).with_value(value));
    };
    let whole = n.as_i64().or_else(|| {
        // 2.0 is as whole as 2; 1e3 too.
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() <= 1e15)
            .map(|f| f as i64)
    });
    match whole {
        Some(w) if (0..=i64::from(MAX_WEIGHT)).contains(&w) => {
            Ok(u32::try_from(w).unwrap_or(DEFAULT_WEIGHT))
        }
        Some(_) => Err(error(setting, format!("is out of range; {accepted}")).with_value(n)),
        None => Err(error(setting, format!("is not a whole number; {accepted}")).with_value(n)),
    }
}

/// `access_client_id` and `access_client_secret_var`: both or neither. The
/// secret itself is read from the var the second one names, and never
/// appears in an error.
fn parse_access(
    index: usize,
    fields: &serde_json::Map<String, Value>,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Option<AccessToken>, ConfigError> {
    let id_setting = || format!("ORIGINS[{index}].access_client_id");
    let var_setting = || format!("ORIGINS[{index}].access_client_secret_var");
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

/// Accepts `http(s)://host[:port]` with an optional trailing `/`; returns it
/// normalised (lower-case scheme and host, no trailing slash).
fn parse_base_url(url: &str) -> Result<String, &'static str> {
    let lower = url.to_ascii_lowercase();
    let (scheme, rest) = if let Some(rest) = lower.strip_prefix("https://") {
        ("https", rest)
    } else if let Some(rest) = lower.strip_prefix("http://") {
        ("http", rest)
    } else {
        return Err("must start with http:// or https://");
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.contains('@') {
        return Err("must not contain credentials (user@host)");
    }
    if authority.contains(['/', '\\', '?', '#']) {
        return Err("must not have a path, query or fragment; requests keep their own path");
    }
    let (host, port) = split_port(authority)?;
    let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        !v6.is_empty()
            && v6
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
    } else {
        !host.is_empty()
            && !host.starts_with(['.', '-'])
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    };
    if !host_ok {
        return Err("has no valid host name");
    }
    if let Some(port) = port {
        match port.parse::<u16>() {
            Ok(p) if p > 0 => {}
            _ => return Err("has an invalid port; expected 1-65535"),
        }
    }
    Ok(format!("{scheme}://{authority}"))
}

fn split_port(authority: &str) -> Result<(&str, Option<&str>), &'static str> {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) if end + 1 == authority.len() => Ok((authority, None)),
            Some(end) => match authority[end + 1..].strip_prefix(':') {
                Some(port) => Ok((&authority[..=end], Some(port))),
                None => Err("has no valid host name"),
            },
            None => Err("has no valid host name"),
        };
    }
    Ok(match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const TWO: &str = r#"[{"name":"primary","url":"https://a.example.com","health_path":"/health"},
                          {"name":"replica","url":"http://127.0.0.1:8081/"}]"#;

    fn parse(vars: &[(&str, &str)]) -> Result<WorkerConfig, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        WorkerConfig::from_vars(|k| map.get(k).cloned())
    }

    fn problem(vars: &[(&str, &str)]) -> (String, String) {
        let e = parse(vars).expect_err("should be rejected");
        (e.setting.to_string(), e.problem)
    }

    /// ORIGINS with one origin carrying `extra` keys, after a plain first one.
    fn second_with(extra: &str) -> String {
        format!(
            r#"[{{"name":"a","url":"https://a.example"}},{{"name":"b","url":"https://b.example",{extra}}}]"#
        )
    }

    #[test]
    fn defaults() {
        let c = parse(&[("ORIGINS", TWO)]).expect("valid");
        assert_eq!(c.origins.len(), 2);
        assert_eq!(c.origins[0].base, "https://a.example.com");
        assert_eq!(c.origins[0].health_path, "/health");
        assert_eq!(c.origins[1].base, "http://127.0.0.1:8081");
        assert_eq!(c.origins[1].health_path, "/");
        assert_eq!(c.attempt_timeout_ms, 6_000);
        assert_eq!(c.health_interval_ms, 15_000);
        assert_eq!(c.health_rise, 2);
        assert_eq!(c.status_path, "/__failover/status");
        assert_eq!(c.status_token, None);
        assert_eq!(c.replay_body_max_bytes, 1_048_576);
        assert_eq!(c.health_fall, 2);
        assert!(c.colo_health);
        assert_eq!(c.origins[0].weight, 1);
        assert_eq!(c.origins[0].health_expect, HealthExpect::NotFailure);
        assert_eq!(c.origins[0].access, None);
        assert_eq!(c.steering, Policy::Failover);
        assert_eq!(c.hash_key, HashKey::ClientIp);
        assert_eq!(
            c.affinity,
            Affinity {
                mode: AffinityMode::Off,
                ttl_s: 82_800,
                failover: AffinityFailover::Temporary
            }
        );
    }

    #[test]
    fn steering_settings() {
        let origins = second_with(r#""weight":0,"health_expect":"2xx,304""#);
        let c = parse(&[
            ("ORIGINS", &origins),
            ("STEERING", "\"Hash\""),
            ("HASH_KEY", "header:X-User-Id"),
            ("AFFINITY", "cookie"),
            ("AFFINITY_TTL_S", "3600"),
            ("AFFINITY_FAILOVER", "sticky"),
        ])
        .expect("valid");
        assert_eq!((c.origins[0].weight, c.origins[1].weight), (1, 0));
        assert_eq!(c.origins[1].health_expect.describe(), "2xx,304");
        assert_eq!(c.steering, Policy::Hash);
        assert_eq!(c.hash_key, HashKey::Header("x-user-id".to_string()));
        assert_eq!(
            c.affinity,
            Affinity {
                mode: AffinityMode::Cookie,
                ttl_s: 3600,
                failover: AffinityFailover::Sticky
            }
        );
        let candidates = c.candidates(|i| i == 1);
        assert_eq!(
            (
                candidates[1].name,
                candidates[1].weight,
                candidates[1].healthy
            ),
            ("b", 0, true)
        );
        assert!(!candidates[0].healthy);
        for (text, key) in [
            ("ip", HashKey::ClientIp),
            (" IP ", HashKey::ClientIp),
            ("cookie:SessionID", HashKey::Cookie("SessionID".to_string())),
            ("Header: x-a ", HashKey::Header("x-a".to_string())),
        ] {
            let c = parse(&[("ORIGINS", TWO), ("HASH_KEY", text)]).expect(text);
            assert_eq!(c.hash_key, key, "{text}");
        }
        for (weight, expected) in [("0", 0), ("1000", 1000), ("2.0", 2), ("7", 7)] {
            let origins = second_with(&format!(r#""weight":{weight}"#));
            let c = parse(&[("ORIGINS", &origins)]).expect(weight);
            assert_eq!(c.origins[1].weight, expected, "{weight}");
        }
    }

    #[test]
    fn access_token_comes_from_the_named_secret() {
        let origins =
            second_with(r#""access_client_id":"abc.access","access_client_secret_var":"ACCESS_B""#);
        let c = parse(&[("ORIGINS", &origins), ("ACCESS_B", "s3cr3t-value\n")]).expect("valid");
        let token = c.origins[1].access.as_ref().expect("configured");
        assert_eq!(token.client_id, "abc.access");
        assert_eq!(token.client_secret, "s3cr3t-value");
        assert_eq!(c.origins[0].access, None);
        // Neither the token's nor the whole config's Debug shows the secret.
        for shown in [format!("{token:?}"), format!("{c:?}")] {
            assert!(!shown.contains("s3cr3t"), "{shown}");
            assert!(shown.contains("<redacted>"), "{shown}");
        }
        // Nor does an error about it.
        let e = parse(&[("ORIGINS", &origins), ("ACCESS_B", "bad\u{7f}s3cr3t")])
            .expect_err("control character");
        assert_eq!(e.setting, "ORIGINS[1].access_client_secret_var");
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
    }

    #[test]
    fn switches() {
        for (text, expected) in [
            ("on", true),
            ("OFF", false),
            ("false", false),
            ("true", true),
            ("\"off\"", false),
        ] {
            let c = parse(&[("ORIGINS", TWO), ("COLO_HEALTH", text)]).expect("valid");
            assert_eq!(c.colo_health, expected, "{text}");
        }
        let (setting, problem) = problem(&[("ORIGINS", TWO), ("COLO_HEALTH", "maybe")]);
        assert_eq!(setting, "COLO_HEALTH");
        assert!(problem.contains("expected \"on\" or \"off\""), "{problem}");
    }

    #[test]
    fn values_as_strings_or_numbers() {
        let c = parse(&[
            ("ORIGINS", TWO),
            ("ATTEMPT_TIMEOUT_MS", "250"),
            ("HEALTH_INTERVAL_MS", "\"1000\""),
            ("HEALTH_RISE", " 3 "),
            ("STATUS_TOKEN", "s3cret\n"),
            ("REPLAY_BODY_MAX_BYTES", "0"),
        ])
        .expect("valid");
        assert_eq!(
            (c.attempt_timeout_ms, c.health_interval_ms, c.health_rise),
            (250, 1000, 3)
        );
        assert_eq!(c.status_token.as_deref(), Some("s3cret"));
        assert_eq!(c.replay_body_max_bytes, 0);
    }

    #[test]
    fn empty_token_means_no_status_endpoint() {
        let c = parse(&[("ORIGINS", TWO), ("STATUS_TOKEN", "")]).expect("valid");
        assert_eq!(c.status_token, None);
    }

    /// The vars, the setting the error must name, and a phrase it must contain.
    type BadCase<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);

    #[test]
    fn a_config_error_shows_the_setting_and_logs_the_value() {
        let cases: &[BadCase] = &[
            (
                &[(
                    "ORIGINS",
                    r#"[{"name":"a","url":"https://user:hunter2@a.example"}]"#,
                )],
                "ORIGINS[0].url",
                "hunter2",
            ),
            (
                &[(
                    "ORIGINS",
                    r#"[{"name":"a","url":"https://a.example/p?key=hunter2"}]"#,
                )],
                "ORIGINS[0].url",
                "hunter2",
            ),
            (
                &[(
                    "ORIGINS",
                    r#"[{"name":"hunter2 x","url":"https://a.example"}]"#,
                )],
                "ORIGINS[0].name",
                "hunter2",
            ),
            (
                &[(
                    "ORIGINS",
                    r#"[{"name":"a","url":"https://a.example","hunter2":1}]"#,
                )],
                "ORIGINS[0]",
                "hunter2",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a",hunter2}]"#)],
                "ORIGINS",
                "hunter2",
            ),
            (
                &[("ORIGINS", TWO), ("STEERING", "hunter2")],
                "STEERING",
                "hunter2",
            ),
            (
                &[("ORIGINS", TWO), ("STATUS_PATH", "hunter2")],
                "STATUS_PATH",
                "hunter2",
            ),
            (
                &[(
                    "ORIGINS",
                    &second_with(
                        r#""access_client_id":"x.access","access_client_secret_var":"HUNTER2""#,
                    ),
                )],
                "ORIGINS[1].access_client_secret_var",
                "HUNTER2",
            ),
        ];
        for (vars, setting, secret) in cases {
            let e = parse(vars).expect_err("refused");
            let shown = e.to_string();
            assert_eq!(e.setting, *setting, "{vars:?}");
            assert!(
                shown.starts_with(&format!("configuration error in {setting}: ")),
                "{shown}"
            );
            assert!(!shown.contains(secret), "{shown} shows the value");
            let logged = e.value.clone().unwrap_or_default();
            assert!(logged.contains(secret), "{logged:?} lacks the value");
        }
    }

    #[test]
    fn bad_configs_name_the_setting_and_the_problem() {
        let table: &[BadCase] = &[
            (&[], "ORIGINS", "missing"),
            (&[("ORIGINS", "not json")], "ORIGINS", "not valid JSON"),
            (&[("ORIGINS", "{}")], "ORIGINS", "must be an array"),
            (&[("ORIGINS", "[]")], "ORIGINS", "is empty"),
            (
                &[("ORIGINS", r#"["https://a.example"]"#)],
                "ORIGINS",
                "must be an object",
            ),
            (
                &[("ORIGINS", r#"[{"url":"https://a.example"}]"#)],
                "ORIGINS[0].name",
                "is missing",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a"}]"#)],
                "ORIGINS[0].url",
                "is missing",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a b","url":"https://a.example"}]"#)],
                "ORIGINS[0].name",
                "must be 1-64",
            ),
            (
                &[(
                    "ORIGINS",
                    r#"[{"name":"a","url":"https://a.example"},{"name":"a","url":"https://b.example"}]"#,
                )],
                "ORIGINS[1].name",
                "used twice",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a","url":"ftp://a.example"}]"#)],
                "ORIGINS[0].url",
                "http:// or https://",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a","url":"a.example"}]"#)],
                "ORIGINS[0].url",
                "http:// or https://",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a","url":"https://a.example/app"}]"#)],
                "ORIGINS[0].url",
                "must not have a path",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a","url":"https://a.example?x=1"}]"#)],
                "ORIGINS[0].url",
                "must not have a path",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a","url":"https://u:p@a.example"}]"#)],
                "ORIGINS[0].url",
                "credentials",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a","url":"https://"}]"#)],
                "ORIGINS[0].url",
                "no valid host",
            ),
            (
                &[(
                    "ORIGINS",
                    r#"[{"name":"a","url":"https://a.example:99999"}]"#,
                )],
                "ORIGINS[0].url",
                "invalid port",
            ),
            (
                &[(
                    "ORIGINS",
                    r#"[{"name":"a","url":"https://a.example","health":"/"}]"#,
                )],
                "ORIGINS[0]",
                "has a key that is not one of name, url",
            ),
            (
                &[(
                    "ORIGINS",
                    r#"[{"name":"a","url":"https://a.example","health_path":"h"}]"#,
                )],
                "ORIGINS[0].health_path",
                "must start with a single '/'",
            ),
            (
                &[("ORIGINS", r#"[{"name":1,"url":"https://a.example"}]"#)],
                "ORIGINS[0].name",
                "must be a string",
            ),
            (
                &[("ORIGINS", TWO), ("ATTEMPT_TIMEOUT_MS", "0")],
                "ATTEMPT_TIMEOUT_MS",
                "out of range",
            ),
            (
                &[("ORIGINS", TWO), ("ATTEMPT_TIMEOUT_MS", "1e9")],
                "ATTEMPT_TIMEOUT_MS",
                "not a whole number",
            ),
            (
                &[("ORIGINS", TWO), ("ATTEMPT_TIMEOUT_MS", "-5")],
                "ATTEMPT_TIMEOUT_MS",
                "not a whole number",
            ),
            (
                &[("ORIGINS", TWO), ("HEALTH_INTERVAL_MS", "5")],
                "HEALTH_INTERVAL_MS",
                "out of range",
            ),
            (
                &[("ORIGINS", TWO), ("HEALTH_RISE", "0")],
                "HEALTH_RISE",
                "out of range",
            ),
            (
                &[("ORIGINS", TWO), ("STATUS_PATH", "status")],
                "STATUS_PATH",
                "starting with '/'",
            ),
            (
                &[("ORIGINS", TWO), ("REPLAY_BODY_MAX_BYTES", "big")],
                "REPLAY_BODY_MAX_BYTES",
                "not a whole number",
            ),
            (
                &[
                    ("ORIGINS", TWO),
                    ("REPLAY_BUFFER_BUDGET_BYTES", "200000000"),
                ],
                "REPLAY_BUFFER_BUDGET_BYTES",
                "out of range",
            ),
            (
                &[("ORIGINS", TWO), ("REPLAY_BUFFER_BUDGET_BYTES", "-1")],
                "REPLAY_BUFFER_BUDGET_BYTES",
                "",
            ),
            (
                &[("ORIGINS", TWO), ("SILENCE_MS", "50")],
                "SILENCE_MS",
                "expected 0 (off) or 100 to 60000",
            ),
            (
                &[("ORIGINS", TWO), ("SILENCE_MS", "60001")],
                "SILENCE_MS",
                "out of range",
            ),
            (
                &[("ORIGINS", TWO), ("STEERING", "rr")],
                "STEERING",
                r#"is not accepted; expected "failover", "weighted" or "hash""#,
            ),
            (
                &[("ORIGINS", TWO), ("HASH_KEY", "body")],
                "HASH_KEY",
                r#"is not accepted; expected "ip", "header:<name>" or "cookie:<name>""#,
            ),
            (
                &[("ORIGINS", TWO), ("HASH_KEY", "header:")],
                "HASH_KEY",
                "no valid header name",
            ),
            (
                &[("ORIGINS", TWO), ("HASH_KEY", "cookie:a b")],
                "HASH_KEY",
                "no valid cookie name",
            ),
            (
                &[("ORIGINS", TWO), ("HASH_KEY", "ip:x")],
                "HASH_KEY",
                "is not accepted",
            ),
            (
                &[("ORIGINS", TWO), ("AFFINITY", "on")],
                "AFFINITY",
                r#"is not accepted; expected "off" or "cookie""#,
            ),
            (
                &[("ORIGINS", TWO), ("AFFINITY_TTL_S", "0")],
                "AFFINITY_TTL_S",
                "is out of range; expected 1 to 31536000",
            ),
            (
                &[("ORIGINS", TWO), ("AFFINITY_TTL_S", "31536001")],
                "AFFINITY_TTL_S",
                "out of range",
            ),
            (
                &[("ORIGINS", TWO), ("AFFINITY_TTL_S", "1h")],
                "AFFINITY_TTL_S",
                "not a whole number",
            ),
            (
                &[("ORIGINS", TWO), ("AFFINITY_FAILOVER", "always")],
                "AFFINITY_FAILOVER",
                r#"expected "temporary" or "sticky""#,
            ),
            (
                &[("ORIGINS", &second_with(r#""weight":-1"#))],
                "ORIGINS[1].weight",
                "is out of range; expected a whole number 0 to 1000",
            ),
            (
                &[("ORIGINS", &second_with(r#""weight":1001"#))],
                "ORIGINS[1].weight",
                "is out of range; expected a whole number 0 to 1000",
            ),
            (
                &[("ORIGINS", &second_with(r#""weight":1.5"#))],
                "ORIGINS[1].weight",
                "is not a whole number",
            ),
            (
                &[("ORIGINS", &second_with(r#""weight":"2""#))],
                "ORIGINS[1].weight",
                "is not a number",
            ),
            (
                &[("ORIGINS", &second_with(r#""health_expect":"abc""#))],
                "ORIGINS[1].health_expect",
                "is not a list of statuses; expected comma-separated",
            ),
            (
                &[("ORIGINS", &second_with(r#""health_expect":"600""#))],
                "ORIGINS[1].health_expect",
                "within 100-599",
            ),
            (
                &[("ORIGINS", &second_with(r#""health_expect":200"#))],
                "ORIGINS[1].health_expect",
                "is not a string",
            ),
            (
                &[("ORIGINS", &second_with(r#""access_client_id":"x.access""#))],
                "ORIGINS[1].access_client_secret_var",
                "is missing; access_client_id is set",
            ),
            (
                &[("ORIGINS", &second_with(r#""access_client_secret_var":"S""#))],
                "ORIGINS[1].access_client_id",
                "is missing; access_client_secret_var is set",
            ),
            (
                &[(
                    "ORIGINS",
                    &second_with(
                        r#""access_client_id":"x.access","access_client_secret_var":"ACCESS_B""#,
                    ),
                )],
                "ORIGINS[1].access_client_secret_var",
                "names a var that is missing or empty",
            ),
            (
                &[
                    (
                        "ORIGINS",
                        &second_with(
                            r#""access_client_id":"x.access","access_client_secret_var":"ACCESS_B""#,
                        ),
                    ),
                    ("ACCESS_B", " \n"),
                ],
                "ORIGINS[1].access_client_secret_var",
                "missing or empty",
            ),
            (
                &[(
                    "ORIGINS",
                    &second_with(
                        r#""access_client_id":"x.access","access_client_secret_var":"STATUS_TOKEN""#,
                    ),
                )],
                "ORIGINS[1].access_client_secret_var",
                "one of the Worker's settings",
            ),
            (
                &[(
                    "ORIGINS",
                    &second_with(
                        r#""access_client_id":"x.access","access_client_secret_var":"a-b""#,
                    ),
                )],
                "ORIGINS[1].access_client_secret_var",
                "is not a var name",
            ),
            (
                &[
                    (
                        "ORIGINS",
                        &second_with(r#""access_client_id":"x y","access_client_secret_var":"S""#),
                    ),
                    ("S", "secret"),
                ],
                "ORIGINS[1].access_client_id",
                "visible ASCII",
            ),
            (
                &[(
                    "ORIGINS",
                    &second_with(r#""access_client_id":7,"access_client_secret_var":"S""#),
                )],
                "ORIGINS[1].access_client_id",
                "is not a string",
            ),
        ];
        for (vars, setting, needle) in table {
            let (got_setting, got_problem) = problem(vars);
            // What every visitor reads never echoes a value (short ones
            // such as "0" aside: they are words of the message too).
            for (name, value) in vars.iter() {
                let value = value.trim();
                if *name != "ORIGINS" && value.len() > 2 {
                    assert!(
                        !got_problem.contains(value),
                        "{got_problem:?} shows {value:?}"
                    );
                }
            }
            assert_eq!(&got_setting, setting, "{vars:?}");
            assert!(
                got_problem.contains(needle),
                "{vars:?}: {got_problem:?} lacks {needle:?}"
            );
        }
    }

    #[test]
    fn error_display_names_the_setting() {
        let e = parse(&[("ORIGINS", TWO), ("HEALTH_RISE", "0")]).expect_err("invalid");
        assert_eq!(
            e.to_string(),
            "configuration error in HEALTH_RISE: is out of range; expected 1 to 100"
        );
    }

    #[test]
    fn ipv6_and_case() {
        let c = parse(&[(
            "ORIGINS",
            r#"[{"name":"v6","url":"HTTP://[::1]:8080"},{"name":"up","url":"https://A.Example"}]"#,
        )])
        .expect("valid");
        assert_eq!(c.origins[0].base, "http://[::1]:8080");
        assert_eq!(c.origins[1].base, "https://a.example");
    }
}
