//! `SITES`: several services behind one Worker. An array of
//! `{ name, hosts, origins, ...policy }`: `origins` as `ORIGINS` takes
//! them; the policy keys (`steering`, `hash_key`, `affinity`,
//! `affinity_ttl_s`, `affinity_failover`, `slow_start_s`,
//! `slow_start_min_pct`, `fallback`) mean what the top-level settings of
//! the same name in capitals mean, and default to them. Errors name the
//! path (`SITES[1].origins[0].url`, `SITES[2].hosts[0]`), never the value
//! (that goes to the log alone, as everywhere).

use serde_json::{Map, Value};

use super::error::{error, ConfigError};
use super::hosts::{parse_host, HostPattern, HostTable};
use super::origins::{is_name, parse_origin_list};
use super::site::Site;

/// The keys a `SITES` entry may have.
pub const SITE_KEYS: [&str; 11] = [
    "name",
    "hosts",
    "origins",
    "steering",
    "hash_key",
    "affinity",
    "affinity_ttl_s",
    "affinity_failover",
    "slow_start_s",
    "slow_start_min_pct",
    "fallback",
];

/// The policy keys, each with the top-level setting it stands for.
const POLICY: [(&str, &str); 8] = [
    ("steering", "STEERING"),
    ("hash_key", "HASH_KEY"),
    ("affinity", "AFFINITY"),
    ("affinity_ttl_s", "AFFINITY_TTL_S"),
    ("affinity_failover", "AFFINITY_FAILOVER"),
    ("slow_start_s", "SLOW_START_S"),
    ("slow_start_min_pct", "SLOW_START_MIN_PCT"),
    ("fallback", "FALLBACK"),
];

/// Builds a site's policy from a lookup of settings.
pub(super) type PolicyParser =
    dyn Fn(&dyn Fn(&str) -> Option<String>) -> Result<Policy, ConfigError>;

/// Parses `SITES`' text into its sites, their origins numbered globally in
/// order, and the host table. `policy(get)` builds a site's policy from a
/// lookup of the top-level settings (the caller's parser, so `ORIGINS` and
/// `SITES` read them alike); here it is given each site's own keys first.
pub(super) fn parse_sites(
    text: &str,
    get: &dyn Fn(&str) -> Option<String>,
    policy: &PolicyParser,
) -> Result<(Vec<Site>, HostTable), ConfigError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        error(
            "SITES",
            format!(
                "is not valid JSON (at line {}, column {}); expected an array of {{name, hosts, origins}} objects",
                e.line(),
                e.column()
            ),
        )
        .with_value(text)
    })?;
    let Value::Array(items) = value else {
        return Err(error(
            "SITES",
            "must be an array of {name, hosts, origins} objects",
        ));
    };
    if items.is_empty() {
        return Err(error("SITES", "is empty; give at least one site"));
    }
    let mut sites: Vec<Site> = Vec::with_capacity(items.len());
    let mut table = HostTable::default();
    let mut first = 0;
    for (i, item) in items.iter().enumerate() {
        let at = format!("SITES[{i}]");
        let Value::Object(fields) = item else {
            return Err(error(at, "must be an object with name, hosts and origins"));
        };
        if let Some(unknown) = fields.keys().find(|k| !SITE_KEYS.contains(&k.as_str())) {
            return Err(error(
                at,
                format!(
                    "has a key that is not one of {} (the Worker's log names it)",
                    SITE_KEYS.join(", ")
                ),
            )
            .with_value(unknown));
        }
        let name = match fields.get("name") {
            Some(Value::String(name)) if is_name(name) => name.clone(),
            Some(other) => {
                return Err(error(
                    format!("{at}.name"),
                    "must be 1-64 characters of letters, digits, '-', '_' or '.'",
                )
                .with_value(other))
            }
            None => return Err(error(format!("{at}.name"), "is missing")),
        };
        if let Some(other) = sites.iter().position(|s| s.name == name) {
            return Err(error(
                format!("{at}.name"),
                format!("is SITES[{other}]'s name too; site names must be unique"),
            )
            .with_value(&name));
        }
        let hosts = claim_hosts(&at, fields.get("hosts"), &mut table, i)?;
        let origins_at = format!("{at}.origins");
        let origins = match fields.get("origins") {
            Some(list) => parse_origin_list(list, &origins_at, &get)?,
            None => return Err(error(origins_at, "is missing; give the site's origins")),
        };
        for (j, origin) in origins.iter().enumerate() {
            let earlier = sites.iter().enumerate().find_map(|(s, site)| {
                let k = site.origins.iter().position(|o| o.name == origin.name)?;
                Some(format!("SITES[{s}].origins[{k}]"))
            });
            if let Some(earlier) = earlier {
                return Err(error(
                    format!("{origins_at}[{j}].name"),
                    format!(
                        "is {earlier}'s name too; origin names are unique across sites (X-Served-By, \
                         overrides and events name them; `node` says which origins share a machine)"
                    ),
                )
                .with_value(&origin.name));
            }
        }
        let own = |setting: &str| site_setting(fields, setting).or_else(|| get(setting));
        let policy = policy(&own).map_err(|e| renamed(e, &at, fields))?;
        let count = origins.len();
        sites.push(policy.into_site(name, hosts, origins, first));
        first += count;
    }
    Ok((sites, table))
}

/// A site's routing policy, parsed; [`parse_sites`]' caller builds it.
pub(super) struct Policy {
    pub steering: crate::edge::steering::Policy,
    pub hash_key: crate::edge::steering::HashKey,
    pub affinity: crate::edge::affinity::Affinity,
    pub slow_start: crate::edge::slow_start::SlowStart,
    pub fallback: Option<super::fallback::Fallback>,
}

impl Policy {
    pub(super) fn into_site(
        self,
        name: String,
        hosts: Vec<HostPattern>,
        origins: Vec<super::Origin>,
        first: usize,
    ) -> Site {
        Site {
            name,
            hosts,
            origins,
            first,
            steering: self.steering,
            hash_key: self.hash_key,
            affinity: self.affinity,
            slow_start: self.slow_start,
            fallback: self.fallback,
        }
    }
}

fn claim_hosts(
    at: &str,
    hosts: Option<&Value>,
    table: &mut HostTable,
    site: usize,
) -> Result<Vec<HostPattern>, ConfigError> {
    let path = format!("{at}.hosts");
    let Some(Value::Array(hosts)) = hosts else {
        return Err(error(
            path,
            "must be an array of hostnames, like [\"www.example.com\"] (\"*.example.com\" and \"*\" too)",
        ));
    };
    if hosts.is_empty() {
        return Err(error(path, "is empty; give the site at least one host"));
    }
    let mut claimed = Vec::with_capacity(hosts.len());
    for (h, host) in hosts.iter().enumerate() {
        let here = format!("{path}[{h}]");
        let Value::String(text) = host else {
            return Err(error(here, "must be a string").with_value(host));
        };
        let pattern = parse_host(text).map_err(|why| error(here.clone(), why).with_value(text))?;
        if let Err(other) = table.claim(&pattern, site) {
            let whose = if other == site {
                "is listed twice in this site".to_string()
            } else {
                format!("is claimed by SITES[{other}] too; a host belongs to one site")
            };
            return Err(error(here, whose).with_value(text));
        }
        claimed.push(pattern);
    }
    Ok(claimed)
}

/// A site's own value for a top-level policy setting, as the setting's
/// text (a string as it is, anything else as JSON), or None.
fn site_setting(fields: &Map<String, Value>, setting: &str) -> Option<String> {
    let (key, _) = POLICY.iter().find(|(_, s)| *s == setting)?;
    match fields.get(*key)? {
        Value::String(text) => Some(text.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// An error about a policy setting the site itself set names the site's
/// key (`SITES[1].steering`), not the top-level setting.
fn renamed(mut e: ConfigError, at: &str, fields: &Map<String, Value>) -> ConfigError {
    let own = POLICY
        .iter()
        .find(|(key, setting)| e.setting == *setting && fields.contains_key(*key));
    if let Some((key, _)) = own {
        e.setting = format!("{at}.{key}").into();
    }
    e
}

#[cfg(test)]
mod tests {
    use crate::edge::config::{ConfigError, WorkerConfig};
    use crate::edge::steering::Policy;

    fn parse(vars: &[(&str, &str)]) -> Result<WorkerConfig, ConfigError> {
        WorkerConfig::from_vars(|k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
    }

    /// A site, a git forge and a dashboard on two nodes.
    const THREE: &str = r#"[
      {"name": "www", "hosts": ["www.example.com", "example.com"], "origins": [
        {"name": "www-home", "url": "https://www-home.example.net", "node": "home"},
        {"name": "www-vps", "url": "https://www-vps.example.net", "node": "vps"}]},
      {"name": "git", "hosts": ["git.example.com"], "steering": "weighted", "origins": [
        {"name": "git-home", "url": "https://git-home.example.net", "node": "home"},
        {"name": "git-vps", "url": "https://git-vps.example.net", "node": "vps"}]},
      {"name": "dash", "hosts": ["*.dash.example.com"], "affinity": "cookie", "affinity_ttl_s": 60,
       "origins": [{"name": "dash-home", "url": "https://dash-home.example.net", "node": "home"}]}
    ]"#;

    #[test]
    fn three_sites_on_two_nodes() {
        let c = parse(&[("SITES", THREE), ("SLOW_START_S", "30")]).expect("valid");
        let names: Vec<&str> = c.origins.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            ["www-home", "www-vps", "git-home", "git-vps", "dash-home"]
        );
        let firsts: Vec<usize> = c.sites.iter().map(|s| s.first).collect();
        assert_eq!(firsts, [0, 2, 4]);
        assert_eq!(c.sites[1].global(), 2..4);
        assert_eq!(c.origins[2].node.as_deref(), Some("home"));
        // Each site's own policy, the top-level settings its default.
        assert_eq!(c.sites[0].steering, Policy::Failover);
        assert_eq!(c.sites[1].steering, Policy::Weighted);
        assert_eq!(c.sites[2].affinity.ttl_s, 60);
        assert!(c.sites.iter().all(|s| s.slow_start.window.as_secs() == 30));
        for (host, site) in [
            ("www.example.com", Some(0)),
            ("EXAMPLE.com:443", Some(0)),
            ("git.example.com", Some(1)),
            ("grafana.dash.example.com", Some(2)),
            ("dash.example.com", None),
            ("other.example.com", None),
        ] {
            assert_eq!(c.hosts.site_for(host), site, "{host}");
        }
    }

    #[test]
    fn a_nodes_origins_are_mates_across_sites() {
        let c = parse(&[("SITES", THREE)]).expect("valid");
        assert_eq!(c.node_mates(0), [2, 4], "www-home: git-home and dash-home");
        assert_eq!(c.node_mates(3), [1], "git-vps: www-vps");
        let lone = parse(&[(
            "ORIGINS",
            r#"[{"name":"a","url":"https://a.example"},{"name":"b","url":"https://b.example"}]"#,
        )])
        .expect("valid");
        assert!(lone.node_mates(0).is_empty(), "no node, no mates");
    }

    #[test]
    fn a_node_names_its_origins_in_every_site() {
        use crate::edge::overrides::request::node_origins;
        let c = parse(&[("SITES", THREE)]).expect("valid");
        assert_eq!(
            node_origins(&c, "home").expect("known"),
            ["www-home", "git-home", "dash-home"]
        );
        let e = node_origins(&c, "attic").expect_err("unknown");
        assert_eq!(e.field, "node");
        assert!(
            e.problem.contains("expected one of home, vps"),
            "{}",
            e.problem
        );
    }

    #[test]
    fn origins_is_one_site_for_every_host() {
        let c = parse(&[(
            "ORIGINS",
            r#"[{"name":"a","url":"https://a.example"},{"name":"b","url":"https://b.example","node":"vps"}]"#,
        )])
        .expect("valid");
        assert_eq!(c.sites.len(), 1);
        assert_eq!(c.sites[0].name, "default");
        assert_eq!(c.hosts.site_for("anything.example"), Some(0));
        assert_eq!(c.origins[0].node, None, "node is optional, per origin");
        assert_eq!(c.origins[1].node.as_deref(), Some("vps"));
    }

    #[test]
    fn bad_sites_name_the_path_never_the_value() {
        let one = |extra: &str| {
            format!(
                r#"[{{"name":"a","hosts":["a.example.com"],"origins":[{{"name":"a1","url":"https://a1.example"}}]{extra}}}]"#
            )
        };
        let two = |second: &str| {
            format!(
                r#"[{{"name":"a","hosts":["a.example.com","*"],"origins":[{{"name":"a1","url":"https://a1.example"}}]}},{second}]"#
            )
        };
        // The vars, the setting the error must name, a phrase it must hold.
        type Case<'a> = (Vec<(&'a str, String)>, &'a str, &'a str);
        let cases: Vec<Case> = vec![
            (vec![("ORIGINS", r#"[{"name":"a","url":"https://a.example"}]"#.to_string()), ("SITES", one(""))], "ORIGINS", "and SITES are both set"),
            (vec![], "ORIGINS", "or SITES"),
            (vec![("SITES", "{}".to_string())], "SITES", "must be an array"),
            (vec![("SITES", "[]".to_string())], "SITES", "is empty"),
            (vec![("SITES", "[7]".to_string())], "SITES[0]", "must be an object"),
            (vec![("SITES", one(r#","colour":"red""#))], "SITES[0]", "not one of"),
            (vec![("SITES", r#"[{"hosts":["a.example"],"origins":[{"name":"x","url":"https://x.example"}]}]"#.to_string())], "SITES[0].name", "is missing"),
            (vec![("SITES", two(r#"{"name":"a","hosts":["b.example.com"],"origins":[{"name":"b1","url":"https://b1.example"}]}"#))], "SITES[1].name", "unique"),
            (vec![("SITES", r#"[{"name":"a","origins":[{"name":"x","url":"https://x.example"}]}]"#.to_string())], "SITES[0].hosts", "must be an array"),
            (vec![("SITES", r#"[{"name":"a","hosts":[],"origins":[{"name":"x","url":"https://x.example"}]}]"#.to_string())], "SITES[0].hosts", "is empty"),
            (vec![("SITES", r#"[{"name":"a","hosts":["https://a.example/"],"origins":[{"name":"x","url":"https://x.example"}]}]"#.to_string())], "SITES[0].hosts[0]", "is a URL"),
            (vec![("SITES", two(r#"{"name":"b","hosts":["B.example.com","A.EXAMPLE.COM"],"origins":[{"name":"b1","url":"https://b1.example"}]}"#))], "SITES[1].hosts[1]", "claimed by SITES[0] too"),
            (vec![("SITES", two(r#"{"name":"b","hosts":["*"],"origins":[{"name":"b1","url":"https://b1.example"}]}"#))], "SITES[1].hosts[0]", "claimed by SITES[0] too"),
            (vec![("SITES", r#"[{"name":"a","hosts":["a.example","a.example"],"origins":[{"name":"x","url":"https://x.example"}]}]"#.to_string())], "SITES[0].hosts[1]", "listed twice"),
            (vec![("SITES", r#"[{"name":"a","hosts":["a.example"]}]"#.to_string())], "SITES[0].origins", "is missing"),
            (vec![("SITES", r#"[{"name":"a","hosts":["a.example"],"origins":[]}]"#.to_string())], "SITES[0].origins", "is empty"),
            (vec![("SITES", two(r#"{"name":"b","hosts":["b.example.com"],"origins":[{"name":"b1","url":"ftp://secret@b1.example"}]}"#))], "SITES[1].origins[0].url", ""),
            (vec![("SITES", two(r#"{"name":"b","hosts":["b.example.com"],"origins":[{"name":"a1","url":"https://b1.example"}]}"#))], "SITES[1].origins[0].name", "SITES[0].origins[0]'s name too"),
            (vec![("SITES", two(r#"{"name":"b","hosts":["b.example.com"],"origins":[{"name":"b1","url":"https://b1.example","node":"my node"}]}"#))], "SITES[1].origins[0].node", "1-64 characters"),
            (vec![("SITES", one(r#","steering":"round-robin""#))], "SITES[0].steering", "not accepted"),
            (vec![("SITES", one(r#","affinity_ttl_s":-5"#))], "SITES[0].affinity_ttl_s", ""),
            (vec![("SITES", one("")), ("STEERING", "sideways".to_string())], "STEERING", "not accepted"),
        ];
        for (vars, setting, phrase) in cases {
            let refs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let e = parse(&refs).expect_err(&format!("{vars:?}"));
            assert_eq!(e.setting, setting, "{vars:?}: {e}");
            assert!(e.problem.contains(phrase), "{vars:?}: {e}");
            let shown = e.to_string();
            for secret in [
                "secret@",
                "round-robin",
                "my node",
                "colour",
                "https://a.example/",
            ] {
                assert!(!shown.contains(secret), "the value shows: {shown}");
            }
        }
    }
}
