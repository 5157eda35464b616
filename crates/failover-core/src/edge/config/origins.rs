//! `ORIGINS`: the upstreams in priority order, each validated on its own
//! (name, URL, health path and expectation, weight, Access token).

use serde_json::Value;

use super::access::{parse_access, AccessToken};
use super::error::{error, ConfigError, Shown};
use super::urls::parse_base_url;
use crate::edge::expect::HealthExpect;

/// An origin's `health_path` when it names none.
pub const DEFAULT_HEALTH_PATH: &str = "/";
/// An origin's `weight` when it names none: equal shares.
pub const DEFAULT_WEIGHT: u32 = 1;
/// The largest `weight` an origin may have.
pub const MAX_WEIGHT: u32 = 1000;

/// The keys an `ORIGINS` entry may have.
const ORIGIN_KEYS: [&str; 8] = [
    "name",
    "url",
    "health_path",
    "weight",
    "health_expect",
    "access_client_id",
    "access_client_secret_var",
    "node",
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
    /// `node`: the machine (its connector) that serves this origin. Every
    /// origin on one node goes down with that node's connector, in every
    /// site; None: a node of its own.
    pub node: Option<String>,
}

pub(super) fn parse_origins(
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
    parse_origin_list(&value, "ORIGINS", get)
}

/// An array of origins at `path` (`ORIGINS`, or `SITES[1].origins`):
/// never empty, names unique among them.
pub(super) fn parse_origin_list(
    value: &Value,
    path: &str,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Vec<Origin>, ConfigError> {
    let Value::Array(items) = value else {
        return Err(error(
            path.to_string(),
            "must be an array of {name, url, health_path} objects",
        ));
    };
    if items.is_empty() {
        return Err(error(
            path.to_string(),
            "is empty; give at least one origin",
        ));
    }
    let mut origins: Vec<Origin> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let origin = parse_origin(&format!("{path}[{i}]"), item, get)?;
        if origins.iter().any(|o| o.name == origin.name) {
            return Err(error(
                format!("{path}[{i}].name"),
                "is used twice; names must be unique",
            )
            .with_value(&origin.name));
        }
        origins.push(origin);
    }
    Ok(origins)
}

fn parse_origin(
    at: &str,
    item: &Value,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Origin, ConfigError> {
    let Value::Object(fields) = item else {
        return Err(error(at.to_string(), "must be an object with name and url"));
    };
    if let Some(unknown) = fields.keys().find(|k| !ORIGIN_KEYS.contains(&k.as_str())) {
        return Err(error(
            at.to_string(),
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
            Some(_) => Err(error(format!("{at}.{key}"), "must be a string")),
        }
    };
    let name = text("name")?.ok_or_else(|| error(format!("{at}.name"), "is missing"))?;
    if !is_name(name) {
        return Err(error(
            format!("{at}.name"),
            "must be 1-64 characters of letters, digits, '-', '_' or '.'",
        )
        .with_value(name));
    }
    let url = text("url")?.ok_or_else(|| error(format!("{at}.url"), "is missing"))?;
    let base =
        parse_base_url(url).map_err(|why| error(format!("{at}.url"), why).with_value(url))?;
    let health_path = text("health_path")?.unwrap_or(DEFAULT_HEALTH_PATH);
    if !health_path.starts_with('/') || health_path.starts_with("//") || health_path.contains('#') {
        return Err(error(
            format!("{at}.health_path"),
            "must start with a single '/' and have no '#'",
        )
        .with_value(health_path));
    }
    let weight = match fields.get("weight") {
        None => DEFAULT_WEIGHT,
        Some(value) => parse_weight(at, value)?,
    };
    let health_expect = match fields.get("health_expect") {
        None => HealthExpect::default(),
        Some(Value::String(text)) => HealthExpect::parse(text).map_err(|why| {
            error(
                format!("{at}.health_expect"),
                "is not a list of statuses; expected comma-separated codes (200), classes (2xx) or ranges (200-399) within 100-599",
            )
            .with_value(format_args!("{}: {}", text.shown(), why.0))
        })?,
        Some(other) => {
            return Err(error(
                format!("{at}.health_expect"),
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
        access: parse_access(at, fields, get)?,
        node: parse_node(at, text("node")?)?,
    })
}

/// `node`: 1-64 characters as an origin's name takes them.
fn parse_node(at: &str, node: Option<&str>) -> Result<Option<String>, ConfigError> {
    let Some(node) = node else {
        return Ok(None);
    };
    if !is_name(node) {
        return Err(error(
            format!("{at}.node"),
            "must be 1-64 characters of letters, digits, '-', '_' or '.'",
        )
        .with_value(node));
    }
    Ok(Some(node.to_string()))
}

/// A name as origins, nodes and sites take them: 1-64 characters of
/// letters, digits, '-', '_' or '.'.
pub(super) fn is_name(name: &str) -> bool {
    // "." and ".." would be resolved away in the admin API's paths.
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn parse_weight(at: &str, value: &Value) -> Result<u32, ConfigError> {
    let setting = format!("{at}.weight");
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
