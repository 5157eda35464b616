//! The Worker's settings (`[vars]` in wrangler.toml), parsed once into typed
//! values. Every value may arrive as a string (`wrangler dev --var`) or as
//! TOML/JSON; the shell hands each one over as text. An error names the
//! setting, the bad value and what would be accepted.

use std::fmt;

use serde_json::Value;

pub const DEFAULT_ATTEMPT_TIMEOUT_MS: u64 = 6_000;
pub const DEFAULT_HEALTH_INTERVAL_MS: u64 = 15_000;
pub const DEFAULT_HEALTH_RISE: u32 = 2;
pub const DEFAULT_STATUS_PATH: &str = "/__failover/status";
pub const DEFAULT_REPLAY_BODY_MAX_BYTES: u64 = 1024 * 1024;
pub const DEFAULT_HEALTH_PATH: &str = "/";
pub const DEFAULT_HEALTH_FALL: u32 = 2;

/// The names of every setting, for the shell to read.
pub const SETTINGS: [&str; 9] = [
    "ORIGINS",
    "ATTEMPT_TIMEOUT_MS",
    "HEALTH_INTERVAL_MS",
    "HEALTH_RISE",
    "HEALTH_FALL",
    "STATUS_PATH",
    "STATUS_TOKEN",
    "REPLAY_BODY_MAX_BYTES",
    "COLO_HEALTH",
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
}

/// A setting that cannot be used, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub setting: &'static str,
    pub problem: String,
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

fn error(setting: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        setting,
        problem: problem.into(),
    }
}

impl WorkerConfig {
    /// Builds the config from a lookup of each setting's text (None when the
    /// setting is absent).
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
                format!("{status_path:?} must be a path starting with '/', other than '/' itself, without '?' or '#'"),
            ));
        }
        // Secrets pasted with a trailing newline must still match.
        let status_token = get("STATUS_TOKEN")
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        Ok(WorkerConfig {
            origins: parse_origins(&origins_text)?,
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
        })
    }
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
            format!("{text:?} is not a whole number; expected {min} to {max}"),
        )
    })?;
    if !(min..=max).contains(&value) {
        return Err(error(
            setting,
            format!("{value} is out of range; expected {min} to {max}"),
        ));
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
        _ => Err(error(
            setting,
            format!("{text:?} is not a switch; expected \"on\" or \"off\""),
        )),
    }
}

fn parse_origins(text: &str) -> Result<Vec<Origin>, ConfigError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        error(
            "ORIGINS",
            format!("is not valid JSON ({e}); expected an array of {{name, url}} objects"),
        )
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
        let origin = parse_origin(i, item)?;
        if origins.iter().any(|o| o.name == origin.name) {
            return Err(error(
                "ORIGINS",
                format!(
                    "origin name {:?} is used twice; names must be unique",
                    origin.name
                ),
            ));
        }
        origins.push(origin);
    }
    Ok(origins)
}

fn parse_origin(index: usize, item: &Value) -> Result<Origin, ConfigError> {
    let Value::Object(fields) = item else {
        return Err(error(
            "ORIGINS",
            format!("entry {index} must be an object with name and url"),
        ));
    };
    if let Some(unknown) = fields
        .keys()
        .find(|k| !matches!(k.as_str(), "name" | "url" | "health_path"))
    {
        return Err(error(
            "ORIGINS",
            format!("entry {index} has unknown key {unknown:?}; accepted keys are name, url, health_path"),
        ));
    }
    let text = |key: &str| -> Result<Option<&str>, ConfigError> {
        match fields.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(error(
                "ORIGINS",
                format!("entry {index}: {key} must be a string"),
            )),
        }
    };
    let name =
        text("name")?.ok_or_else(|| error("ORIGINS", format!("entry {index} has no name")))?;
    let valid_name = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !valid_name {
        return Err(error(
            "ORIGINS",
            format!("entry {index}: name {name:?} must be 1-64 characters of letters, digits, '-', '_' or '.'"),
        ));
    }
    let url =
        text("url")?.ok_or_else(|| error("ORIGINS", format!("origin {name:?} has no url")))?;
    let base = parse_base_url(url)
        .map_err(|why| error("ORIGINS", format!("origin {name:?}: url {url:?} {why}")))?;
    let health_path = text("health_path")?.unwrap_or(DEFAULT_HEALTH_PATH);
    if !health_path.starts_with('/') || health_path.starts_with("//") || health_path.contains('#') {
        return Err(error(
            "ORIGINS",
            format!("origin {name:?}: health_path {health_path:?} must start with a single '/'"),
        ));
    }
    Ok(Origin {
        name: name.to_string(),
        base,
        health_path: health_path.to_string(),
    })
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
                "ORIGINS",
                "has no name",
            ),
            (&[("ORIGINS", r#"[{"name":"a"}]"#)], "ORIGINS", "has no url"),
            (
                &[("ORIGINS", r#"[{"name":"a b","url":"https://a.example"}]"#)],
                "ORIGINS",
                "must be 1-64",
            ),
            (
                &[(
                    "ORIGINS",
                    r#"[{"name":"a","url":"https://a.example"},{"name":"a","url":"https://b.example"}]"#,
                )],
                "ORIGINS",
                "used twice",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a","url":"ftp://a.example"}]"#)],
                "ORIGINS",
                "http:// or https://",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a","url":"a.example"}]"#)],
                "ORIGINS",
                "http:// or https://",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a","url":"https://a.example/app"}]"#)],
                "ORIGINS",
                "must not have a path",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a","url":"https://a.example?x=1"}]"#)],
                "ORIGINS",
                "must not have a path",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a","url":"https://u:p@a.example"}]"#)],
                "ORIGINS",
                "credentials",
            ),
            (
                &[("ORIGINS", r#"[{"name":"a","url":"https://"}]"#)],
                "ORIGINS",
                "no valid host",
            ),
            (
                &[(
                    "ORIGINS",
                    r#"[{"name":"a","url":"https://a.example:99999"}]"#,
                )],
                "ORIGINS",
                "invalid port",
            ),
            (
                &[(
                    "ORIGINS",
                    r#"[{"name":"a","url":"https://a.example","health":"/"}]"#,
                )],
                "ORIGINS",
                "unknown key",
            ),
            (
                &[(
                    "ORIGINS",
                    r#"[{"name":"a","url":"https://a.example","health_path":"h"}]"#,
                )],
                "ORIGINS",
                "health_path",
            ),
            (
                &[("ORIGINS", r#"[{"name":1,"url":"https://a.example"}]"#)],
                "ORIGINS",
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
        ];
        for (vars, setting, needle) in table {
            let (got_setting, got_problem) = problem(vars);
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
            "configuration error in HEALTH_RISE: 0 is out of range; expected 1 to 100"
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
