//! The Worker's settings (`[vars]` in wrangler.toml), parsed once into typed
//! values. Every value may arrive as a string (`wrangler dev --var`) or as
//! TOML/JSON; the shell hands each one over as text. An error names the
//! setting and what would be accepted; the value goes to the log alone.
//!
//! Layout: [`error`] (what an error shows, and to whom), [`vars`] (the
//! plain settings), [`urls`] (an origin's URL), [`access`] (Access service
//! tokens), [`origins`] (`ORIGINS`, using the two before), [`notify`]
//! (`NOTIFY`: webhooks whose URLs are secrets), [`fallback`] (`FALLBACK`),
//! [`site`] (a site: its origins and the policy that routes among them),
//! [`hosts`] (a site's `hosts` and the table a request's host is looked up
//! in), [`sites`] (`SITES`, using the three before); this module puts them
//! together into [`WorkerConfig`].

use crate::edge::affinity::{Affinity, AffinityFailover, AffinityMode};
use crate::edge::status_path::check as check_status_path;
use crate::edge::steering::Policy;
use crate::notify::Webhook;

pub mod access;
pub mod error;
pub mod fallback;
pub mod hosts;
pub mod notify;
pub mod origins;
pub mod site;
pub mod sites;
pub mod urls;
pub mod vars;

pub use access::AccessToken;
use error::error;
pub use error::ConfigError;
use fallback::parse_fallback;
pub use fallback::Fallback;
pub use hosts::{HostPattern, HostTable};
use notify::parse_notify;
pub use notify::{CHECKER_BINDING, DEFAULT_NOTIFY_MIN_INTERVAL_S};
use origins::parse_origins;
pub use origins::{Origin, DEFAULT_HEALTH_PATH, DEFAULT_WEIGHT, MAX_WEIGHT};
pub use site::Site;
use sites::parse_sites;
use vars::{choice, count, hash_key, number, seconds, silence_ms, slow_start, switch};
pub use vars::{
    DEFAULT_AFFINITY_TTL_S, DEFAULT_ATTEMPT_TIMEOUT_MS, DEFAULT_HEALTH_FALL,
    DEFAULT_HEALTH_INTERVAL_MS, DEFAULT_HEALTH_RISE, DEFAULT_REPLAY_BODY_MAX_BYTES,
    DEFAULT_REPLAY_BUFFER_BUDGET_BYTES, DEFAULT_SILENCE_MS, DEFAULT_STATUS_PATH,
    MAX_AFFINITY_TTL_S, SETTINGS,
};

/// Every setting, validated; see the README's settings table for what each
/// does to traffic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerConfig {
    /// `ORIGINS`, in priority order; never empty.
    pub origins: Vec<Origin>,
    /// `ATTEMPT_TIMEOUT_MS`: how long one attempt waits for response headers.
    pub attempt_timeout_ms: u64,
    /// `HEALTH_INTERVAL_MS`: how often a down origin is probed, and the
    /// global checker consulted.
    pub health_interval_ms: u64,
    /// `HEALTH_RISE`: good probes in a row that bring an origin back up.
    pub health_rise: u32,
    /// Consecutive failed probes before the global checker calls an origin
    /// down (a failed client attempt marks it down in the isolate at once).
    pub health_fall: u32,
    /// Share verdicts with the other isolates of the location (Cache API).
    pub colo_health: bool,
    /// `STATUS_PATH`: where the status endpoint answers.
    pub status_path: String,
    /// None: the status path is proxied like any other.
    pub status_token: Option<String>,
    /// `ADMIN_TOKEN`: the admin API's own secret (overrides); None: the
    /// API is off. One equal to `STATUS_TOKEN` is ignored: whoever may read
    /// the status must not thereby move traffic.
    pub admin_token: Option<String>,
    /// `REPLAY_BODY_MAX_BYTES`: a larger body (or one of unknown length) is
    /// streamed to one origin, never replayed.
    pub replay_body_max_bytes: u64,
    /// The most body bytes the isolate holds for replay at once, across all
    /// requests; a body that would exceed it is streamed to one origin.
    pub replay_buffer_budget_bytes: u64,
    /// An origin with an attempt outstanding this long and no response
    /// headers to anyone since is skipped by new requests; 0 = off.
    pub silence_ms: u64,
    /// The sites, each with its origins and its routing policy; never
    /// empty. `ORIGINS` is one site.
    pub sites: Vec<Site>,
    /// Which site a request's host belongs to.
    pub hosts: HostTable,
    /// `NOTIFY`: where the global checker sends its events; empty = none.
    pub notify: Vec<Webhook>,
    /// `NOTIFY_MIN_INTERVAL_S`: at most one message per origin this often
    /// (the flap guard); 0 = every change.
    pub notify_min_interval_s: u64,
}

impl WorkerConfig {
    /// Builds the config from a lookup of each setting's text (None when the
    /// setting is absent). Besides [`SETTINGS`], the lookup is asked for the
    /// vars that origins' `access_client_secret_var`, `NOTIFY` entries and
    /// `FALLBACK`'s `html_var` name, and for [`CHECKER_BINDING`] (any text
    /// when that Durable Object binding exists).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<WorkerConfig, ConfigError> {
        WorkerConfig::from_var_source(&get)
    }

    /// `from_vars`' body, not generic: the Worker reads its config from two
    /// places (an isolate and the global checker), and two copies of the
    /// whole parser cost 5 KB of the Worker's gzipped Wasm.
    fn from_var_source(get: &dyn Fn(&str) -> Option<String>) -> Result<WorkerConfig, ConfigError> {
        let (origins, sites, hosts) = match (get("ORIGINS"), get("SITES")) {
            (Some(_), Some(_)) => {
                return Err(error(
                    "ORIGINS",
                    "and SITES are both set; use ORIGINS for one site, or SITES (each site with \
                     its own origins) for several, not both",
                ))
            }
            (None, None) => {
                return Err(error(
                    "ORIGINS",
                    "missing; set it to a JSON array like [{\"name\":\"primary\",\"url\":\"https://a.example.com\"}] \
                     (or SITES, for several sites)",
                ))
            }
            (Some(text), None) => {
                let origins = parse_origins(&text, &get)?;
                let site = site_policy(&get)?.into_site(
                    DEFAULT_SITE.to_string(),
                    vec![HostPattern::Any],
                    origins.clone(),
                    0,
                );
                (origins, vec![site], HostTable::every_host(0))
            }
            (None, Some(text)) => {
                let (sites, hosts) = parse_sites(&text, get, &site_policy)?;
                let origins = sites.iter().flat_map(|s| s.origins.iter().cloned()).collect();
                (origins, sites, hosts)
            }
        };
        let status_path = get("STATUS_PATH").unwrap_or_else(|| DEFAULT_STATUS_PATH.to_string());
        if let Err(why) = check_status_path(&status_path) {
            return Err(error("STATUS_PATH", why).with_value(&status_path));
        }
        // Secrets pasted with a trailing newline must still match.
        let status_token = get("STATUS_TOKEN")
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        let admin_token = get("ADMIN_TOKEN")
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty() && Some(t) != status_token.as_ref());
        for (setting, token) in [
            ("STATUS_TOKEN", &status_token),
            ("ADMIN_TOKEN", &admin_token),
        ] {
            check_token(setting, token.as_deref())?;
        }
        Ok(WorkerConfig {
            origins,
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
            admin_token,
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
            sites,
            hosts,
            notify: parse_notify(&get)?,
            notify_min_interval_s: number(
                &get,
                "NOTIFY_MIN_INTERVAL_S",
                DEFAULT_NOTIFY_MIN_INTERVAL_S,
                0,
                86_400,
            )?,
        })
    }

    /// The first site: `ORIGINS`' only one. (Sites are never empty.)
    pub fn site(&self) -> &Site {
        &self.sites[0]
    }

    /// The other origins on `origin`'s node, in every site (global
    /// indices); none when it names no node.
    pub fn node_mates(&self, origin: usize) -> Vec<usize> {
        let Some(node) = self.origins.get(origin).and_then(|o| o.node.as_deref()) else {
            return Vec::new();
        };
        self.origins
            .iter()
            .enumerate()
            .filter(|&(i, o)| i != origin && o.node.as_deref() == Some(node))
            .map(|(i, _)| i)
            .collect()
    }

    /// The site `origin` (a global index) belongs to.
    pub fn site_of(&self, origin: usize) -> Option<&Site> {
        self.sites.iter().find(|s| s.global().contains(&origin))
    }

    /// The site a request for `url` (absolute, as the runtime hands it
    /// over) belongs to by its host; None: no site claims the host.
    pub fn site_for_url(&self, url: &str) -> Option<usize> {
        self.hosts.site_for(hosts::host_of_url(url))
    }

    /// The path under which the Worker answers itself (the status endpoint
    /// and everything under `{STATUS_PATH}/`), when either token is set;
    /// None: those paths are proxied like any other.
    pub fn reserved_path(&self) -> Option<&str> {
        (self.status_token.is_some() || self.admin_token.is_some())
            .then_some(self.status_path.as_str())
    }
}

/// A site's routing policy from a lookup of the top-level settings (for a
/// `SITES` entry, its own keys first).
fn site_policy(get: &dyn Fn(&str) -> Option<String>) -> Result<sites::Policy, ConfigError> {
    Ok(sites::Policy {
        steering: choice(
            &get,
            "STEERING",
            Policy::Failover,
            Policy::parse,
            "\"failover\", \"weighted\" or \"hash\"",
        )?,
        hash_key: hash_key(&get)?,
        affinity: affinity(get)?,
        slow_start: slow_start(&get)?,
        fallback: parse_fallback(get("FALLBACK"), get)?,
    })
}

/// `AFFINITY`, `AFFINITY_TTL_S` and `AFFINITY_FAILOVER`.
fn affinity(get: &dyn Fn(&str) -> Option<String>) -> Result<Affinity, ConfigError> {
    Ok(Affinity {
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
    })
}

/// The name of `ORIGINS`' one site.
pub const DEFAULT_SITE: &str = "default";

/// The shortest `STATUS_TOKEN` or `ADMIN_TOKEN` taken, in characters: the
/// agent's rule for the same secret (its `MIN_TOKEN_CHARS`). A short one
/// can be guessed; the brake on wrong tokens (`edge::guesses`) only slows
/// the guessing.
pub const MIN_TOKEN_CHARS: usize = 16;

/// A token shorter than [`MIN_TOKEN_CHARS`] is an error naming the secret
/// and its length, never its value.
fn check_token(setting: &'static str, token: Option<&str>) -> Result<(), ConfigError> {
    let chars = token.map_or(MIN_TOKEN_CHARS, |t| t.chars().count());
    if chars >= MIN_TOKEN_CHARS {
        return Ok(());
    }
    Err(error(
        setting,
        format!(
            "is {chars} characters long; use at least {MIN_TOKEN_CHARS} \
             (`openssl rand -hex 24` makes one), then `make secret NAME={setting}`"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::expect::HealthExpect;
    use crate::edge::slow_start::SlowStart;
    use crate::edge::steering::HashKey;
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
        assert_eq!(c.site().steering, Policy::Failover);
        assert_eq!(c.site().hash_key, HashKey::ClientIp);
        assert!(c.notify.is_empty());
        assert_eq!(c.notify_min_interval_s, 300);
        assert_eq!(c.site().fallback, None);
        assert_eq!(c.site().slow_start, SlowStart::default());
        assert!(!c.site().slow_start.is_on());
        assert_eq!(
            c.site().affinity,
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
        assert_eq!(c.site().steering, Policy::Hash);
        assert_eq!(c.site().hash_key, HashKey::Header("x-user-id".to_string()));
        assert_eq!(
            c.site().affinity,
            Affinity {
                mode: AffinityMode::Cookie,
                ttl_s: 3600,
                failover: AffinityFailover::Sticky
            }
        );
        let candidates = c.site().candidates(|i| i == 1);
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
            assert_eq!(c.site().hash_key, key, "{text}");
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
    fn notify_reads_its_secrets_and_never_shows_them() {
        let c = parse(&[
            ("ORIGINS", TWO),
            (
                "NOTIFY",
                r#"[{"format":"json","url_var":"HOOK","secret_var":"KEY"}]"#,
            ),
            ("NOTIFY_MIN_INTERVAL_S", "0"),
            ("HOOK", "https://hooks.example.com/hunter2"),
            ("KEY", "s3cr3t"),
            (CHECKER_BINDING, "bound"),
        ])
        .expect("valid");
        assert_eq!(c.notify.len(), 1);
        assert_eq!(c.notify_min_interval_s, 0);
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("s3cr3t"),
            "{shown}"
        );
        let (setting, problem) = problem(&[("ORIGINS", TWO), ("NOTIFY_MIN_INTERVAL_S", "86401")]);
        assert_eq!(setting, "NOTIFY_MIN_INTERVAL_S");
        assert!(problem.contains("expected 0 to 86400"), "{problem}");
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
            ("STATUS_TOKEN", "s3cret-s3cret-s3cret\n"),
            ("REPLAY_BODY_MAX_BYTES", "0"),
        ])
        .expect("valid");
        assert_eq!(
            (c.attempt_timeout_ms, c.health_interval_ms, c.health_rise),
            (250, 1000, 3)
        );
        assert_eq!(c.status_token.as_deref(), Some("s3cret-s3cret-s3cret"));
        assert_eq!(c.replay_body_max_bytes, 0);
    }

    #[test]
    fn slow_start_settings() {
        let c = parse(&[
            ("ORIGINS", TWO),
            ("SLOW_START_S", "\"60\""),
            ("SLOW_START_MIN_PCT", " 25 "),
        ])
        .expect("valid");
        assert_eq!(
            c.site().slow_start,
            SlowStart {
                window: std::time::Duration::from_secs(60),
                min_pct: 25
            }
        );
        let off = parse(&[("ORIGINS", TWO), ("SLOW_START_S", "0")]).expect("valid");
        assert!(!off.site().slow_start.is_on());
    }

    #[test]
    fn empty_token_means_no_status_endpoint() {
        let c = parse(&[("ORIGINS", TWO), ("STATUS_TOKEN", "")]).expect("valid");
        assert_eq!(c.status_token, None);
    }

    #[test]
    fn the_admin_token_is_a_secret_of_its_own() {
        let c = parse(&[
            ("ORIGINS", TWO),
            ("STATUS_TOKEN", STATUS),
            ("ADMIN_TOKEN", " admin-token-of-24-chars\n"),
        ])
        .expect("valid");
        assert_eq!(c.admin_token.as_deref(), Some("admin-token-of-24-chars"));
        assert_eq!(c.reserved_path(), Some("/__failover/status"));
        for (status, admin) in [
            (Some(STATUS), "status-token-of-24-chars\n"),
            (None, ""),
            (None, "  "),
        ] {
            let mut vars = vec![("ORIGINS", TWO), ("ADMIN_TOKEN", admin)];
            vars.extend(status.map(|s| ("STATUS_TOKEN", s)));
            let c = parse(&vars).expect("valid");
            assert_eq!(c.admin_token, None, "{status:?} {admin:?}");
        }
        let admin_only = parse(&[("ORIGINS", TWO), ("ADMIN_TOKEN", ADMIN)]).expect("valid");
        assert_eq!(
            admin_only.reserved_path(),
            Some("/__failover/status"),
            "its paths are the Worker's"
        );
        assert_eq!(
            parse(&[("ORIGINS", TWO)]).expect("valid").reserved_path(),
            None
        );
    }

    const STATUS: &str = "status-token-of-24-chars";
    const ADMIN: &str = "admin-token-of-24-chars";

    #[test]
    fn a_short_token_is_refused_by_name_without_its_value() {
        for setting in ["STATUS_TOKEN", "ADMIN_TOKEN"] {
            for short in ["a", "s3cret", "fifteen-chars-x", " fifteen-chars-x\n"] {
                let e = parse(&[("ORIGINS", TWO), (setting, short)]).expect_err(short);
                assert_eq!(e.setting, setting);
                assert!(e.problem.contains("at least 16"), "{}", e.problem);
                let shown = format!("{e}");
                if short.trim().len() > 3 {
                    assert!(!shown.contains(short.trim()), "{shown}");
                }
                assert_eq!(e.value, None, "the value is not even logged");
            }
            let sixteen = parse(&[("ORIGINS", TWO), (setting, "sixteen-chars-xy")]);
            assert!(sixteen.is_ok(), "{setting}: 16 characters are enough");
            // Characters, not bytes: 16 letters of any script.
            let wide = parse(&[("ORIGINS", TWO), (setting, "äöüäöüäöüäöüäöüä")]);
            assert!(wide.is_ok(), "{setting}");
        }
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
                "ORIGINS[0]",
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
                &[("ORIGINS", TWO), ("STATUS_PATH", "/")],
                "STATUS_PATH",
                "other than '/'",
            ),
            (
                &[("ORIGINS", TWO), ("STATUS_PATH", "/ops/")],
                "STATUS_PATH",
                "empty segment",
            ),
            (
                &[("ORIGINS", TWO), ("STATUS_PATH", "/a//b")],
                "STATUS_PATH",
                "empty segment",
            ),
            (
                &[("ORIGINS", TWO), ("STATUS_PATH", "/a/../status")],
                "STATUS_PATH",
                "'..' segment",
            ),
            (
                &[("ORIGINS", TWO), ("STATUS_PATH", "/ops status")],
                "STATUS_PATH",
                "no space",
            ),
            (
                &[("ORIGINS", TWO), ("STATUS_PATH", "/\u{e9}tat")],
                "STATUS_PATH",
                "non-ASCII",
            ),
            (
                &[("ORIGINS", TWO), ("STATUS_PATH", "/s%2fx")],
                "STATUS_PATH",
                "'%'",
            ),
            (
                &[("ORIGINS", TWO), ("STATUS_PATH", "/s?x")],
                "STATUS_PATH",
                "'?'",
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
                &[("ORIGINS", TWO), ("SLOW_START_S", "3601")],
                "SLOW_START_S",
                "is out of range; expected 0 to 3600",
            ),
            (
                &[("ORIGINS", TWO), ("SLOW_START_S", "1m")],
                "SLOW_START_S",
                "not a whole number",
            ),
            (
                &[("ORIGINS", TWO), ("SLOW_START_MIN_PCT", "101")],
                "SLOW_START_MIN_PCT",
                "is out of range; expected 0 to 100",
            ),
            (
                &[("ORIGINS", TWO), ("SLOW_START_MIN_PCT", "12.5")],
                "SLOW_START_MIN_PCT",
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
