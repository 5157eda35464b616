//! The plain settings of `[vars]`: numbers in a range, switches, one of a
//! few words, `HASH_KEY` and `SILENCE_MS`. Each reads its text (None when
//! the setting is absent: its default) and names the setting on an error.

use std::time::Duration;

use super::error::{error, ConfigError};
use crate::edge::slow_start::{
    SlowStart, DEFAULT_SLOW_START_MIN_PCT, DEFAULT_SLOW_START_S, MAX_SLOW_START_S,
};
use crate::edge::steering::HashKey;

/// `ATTEMPT_TIMEOUT_MS` unset.
pub const DEFAULT_ATTEMPT_TIMEOUT_MS: u64 = 6_000;
/// `HEALTH_INTERVAL_MS` unset.
pub const DEFAULT_HEALTH_INTERVAL_MS: u64 = 15_000;
/// `HEALTH_RISE` unset: one lucky answer does not bring an origin back.
pub const DEFAULT_HEALTH_RISE: u32 = 2;
/// `STATUS_PATH` unset.
pub const DEFAULT_STATUS_PATH: &str = "/__failover/status";
/// `REPLAY_BODY_MAX_BYTES` unset: 1 MiB.
pub const DEFAULT_REPLAY_BODY_MAX_BYTES: u64 = 1024 * 1024;
/// `HEALTH_FALL` unset: one failed probe is not enough for the global
/// checker.
pub const DEFAULT_HEALTH_FALL: u32 = 2;
/// 23 hours, as Cloudflare Load Balancing's cookie affinity defaults to.
pub const DEFAULT_AFFINITY_TTL_S: u32 = 82_800;
/// One year, the longest Max-Age worth stating.
pub const MAX_AFFINITY_TTL_S: u32 = 31_536_000;
/// 32 MiB: a quarter of an isolate's 128 MB for bodies held for replay.
pub const DEFAULT_REPLAY_BUFFER_BUDGET_BYTES: u64 = 32 * 1024 * 1024;
/// `SILENCE_MS` unset.
pub const DEFAULT_SILENCE_MS: u64 = 2_000;

/// The names of every setting, for the shell to read. The config may also
/// ask the lookup for the var an origin's `access_client_secret_var`, a
/// `NOTIFY` entry's `url_var` / `secret_var` or `FALLBACK`'s `html_var`
/// names.
pub const SETTINGS: [&str; 23] = [
    "ORIGINS",
    "SITES",
    "ATTEMPT_TIMEOUT_MS",
    "HEALTH_INTERVAL_MS",
    "HEALTH_RISE",
    "HEALTH_FALL",
    "STATUS_PATH",
    "STATUS_TOKEN",
    "ADMIN_TOKEN",
    "REPLAY_BODY_MAX_BYTES",
    "COLO_HEALTH",
    "STEERING",
    "HASH_KEY",
    "AFFINITY",
    "AFFINITY_TTL_S",
    "AFFINITY_FAILOVER",
    "REPLAY_BUFFER_BUDGET_BYTES",
    "SILENCE_MS",
    "NOTIFY",
    "NOTIFY_MIN_INTERVAL_S",
    "FALLBACK",
    "SLOW_START_S",
    "SLOW_START_MIN_PCT",
];

/// One of a few words, in any case, optionally quoted.
pub(super) fn choice<T>(
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
pub(super) fn seconds(
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
pub(super) fn hash_key(get: &impl Fn(&str) -> Option<String>) -> Result<HashKey, ConfigError> {
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
pub(super) fn silence_ms(get: &impl Fn(&str) -> Option<String>) -> Result<u64, ConfigError> {
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

/// `SLOW_START_S` (0 = off, up to an hour) and `SLOW_START_MIN_PCT`.
pub(super) fn slow_start(get: &impl Fn(&str) -> Option<String>) -> Result<SlowStart, ConfigError> {
    let window_s = number(
        get,
        "SLOW_START_S",
        u64::from(DEFAULT_SLOW_START_S),
        0,
        u64::from(MAX_SLOW_START_S),
    )?;
    let min_pct = number(
        get,
        "SLOW_START_MIN_PCT",
        u64::from(DEFAULT_SLOW_START_MIN_PCT),
        0,
        100,
    )?;
    Ok(SlowStart {
        window: Duration::from_secs(window_s),
        // In range 0..=100 by the check above, so this never falls back.
        min_pct: u32::try_from(min_pct).unwrap_or(DEFAULT_SLOW_START_MIN_PCT),
    })
}

pub(super) fn number(
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
pub(super) fn count(
    get: &impl Fn(&str) -> Option<String>,
    setting: &'static str,
    default: u32,
) -> Result<u32, ConfigError> {
    let value = number(get, setting, u64::from(default), 1, 100)?;
    // In range 1..=100 by the check above, so this never falls back.
    Ok(u32::try_from(value).unwrap_or(default))
}

pub(super) fn switch(
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
