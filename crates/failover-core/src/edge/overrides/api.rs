//! The admin API under `{STATUS_PATH}/`: which request is which, who may
//! make it, and the JSON it answers.
//!
//! - `GET {STATUS_PATH}/origins`: every origin's override; with
//!   `ADMIN_TOKEN` or `STATUS_TOKEN`.
//! - `POST {STATUS_PATH}/origins/{name}`: set one; with `ADMIN_TOKEN` only,
//!   and only when it is configured (otherwise 404, as for any unknown
//!   path under `{STATUS_PATH}/`: the Worker answers those itself, never an
//!   origin).
//! - `POST {STATUS_PATH}/nodes/{node}`: the same change for every origin
//!   whose `node` it is, in every site, in one call (a node's drain before
//!   its maintenance); the same rules as for one origin.
//!
//! `set_at` and `expires_at` are RFC 3339 for a person, with `_ms` twins
//! for a program. `in_effect` says whether every isolate, everywhere, has
//! had time to learn the override (`consult::propagation`) and, for a
//! drain, whether its `drain_s` has passed too: from then on no request
//! goes to the origin any more (unless every other origin is down). It is
//! what the node agent waits for before it stops a connector.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{Mode, Override, Overrides};
use crate::edge::config::WorkerConfig;
use crate::edge::consult::propagation;
use crate::edge::time::after;
use crate::notify::rfc3339;
use crate::secret::bearer_matches;

/// A path under `{STATUS_PATH}/` (what `target::reserved_subpath` gives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminPath<'a> {
    /// `origins`: the list.
    List,
    /// `origins/{name}`: one origin (the name as written, unchecked).
    Origin(&'a str),
    /// `nodes/{node}`: every origin on a node (the name unchecked).
    Node(&'a str),
    /// Anything else: 404.
    Unknown,
}

impl<'a> AdminPath<'a> {
    /// Which path `subpath` (after `{STATUS_PATH}/`, no query) is.
    pub fn of(subpath: &'a str) -> AdminPath<'a> {
        let one = |rest: &'a str| rest.strip_prefix('/').filter(|n| !n.contains('/'));
        if let Some(rest) = subpath.strip_prefix("nodes") {
            return one(rest).map_or(AdminPath::Unknown, AdminPath::Node);
        }
        match subpath.strip_prefix("origins") {
            Some("") => AdminPath::List,
            Some(rest) => one(rest).map_or(AdminPath::Unknown, AdminPath::Origin),
            None => AdminPath::Unknown,
        }
    }
}

/// What a presented bearer token allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Neither token matched.
    Refused,
    /// `STATUS_TOKEN`: read.
    Read,
    /// `ADMIN_TOKEN`: read and change.
    Write,
}

/// Checks the `Authorization` header against both tokens, each compared in
/// constant time and both always compared, so neither the token nor which
/// one is configured shows in the timing. An unset token never matches.
pub fn access(
    authorization: Option<&str>,
    status_token: Option<&str>,
    admin_token: Option<&str>,
) -> Access {
    let admin = bearer_matches(authorization, admin_token.unwrap_or(""));
    let status = bearer_matches(authorization, status_token.unwrap_or(""));
    match (admin, status) {
        (true, _) => Access::Write,
        (false, true) => Access::Read,
        (false, false) => Access::Refused,
    }
}

/// The header on every answer the Worker gives itself at or under its
/// status path (its 400s, 401s, 404s and 405s included): `admin` from the
/// admin API, `status` from the status endpoint. A client of the admin API
/// (the agent's `[worker]` and `origin`, scripts/origin.mjs) trusts an
/// answer only with `admin` here and no `X-Served-By` (which every
/// proxied answer carries): anything else came from an app, through a
/// mistyped status path or another Worker.
pub const ANSWERED_BY_HEADER: &str = "x-tunnel-failover";
/// [`ANSWERED_BY_HEADER`] on the admin API's answers.
pub const ANSWERED_BY_ADMIN: &str = "admin";
/// [`ANSWERED_BY_HEADER`] on the status endpoint's answers.
pub const ANSWERED_BY_STATUS: &str = "status";

/// What the Worker does with an admin request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer<'a> {
    /// 404: no such path (or the admin API is off).
    NotFound,
    /// 405, with the `Allow` header's value.
    MethodNotAllowed(&'static str),
    /// 401: the token is missing or wrong.
    Unauthorized,
    /// Every origin's override, from the checker.
    List,
    /// Set this origin's override (the name still to be checked).
    Set(&'a str),
    /// Set the override of every origin on this node (still to be checked).
    SetNode(&'a str),
}

/// The decision, in this order: an unknown path (or `POST` with no
/// `ADMIN_TOKEN` configured) is 404, a wrong method 405, then the token.
pub fn decide<'a>(
    path: AdminPath<'a>,
    method: &str,
    access: Access,
    admin_configured: bool,
) -> Answer<'a> {
    match path {
        AdminPath::Unknown => Answer::NotFound,
        AdminPath::List if !matches!(method, "GET" | "HEAD") => {
            Answer::MethodNotAllowed("GET, HEAD")
        }
        AdminPath::List if access == Access::Refused => Answer::Unauthorized,
        AdminPath::List => Answer::List,
        AdminPath::Origin(_) | AdminPath::Node(_) if !admin_configured => Answer::NotFound,
        AdminPath::Origin(_) | AdminPath::Node(_) if method != "POST" => {
            Answer::MethodNotAllowed("POST")
        }
        AdminPath::Origin(_) | AdminPath::Node(_) if access != Access::Write => {
            Answer::Unauthorized
        }
        AdminPath::Origin(name) => Answer::Set(name),
        AdminPath::Node(node) => Answer::SetNode(node),
    }
}

/// When every isolate must have learned `o` and, for a drain, its pinned
/// requests have stopped too.
pub fn in_effect_at_ms(o: &Override, spread: Duration) -> u64 {
    let learned = after(o.set_at_ms, spread);
    if o.mode == Mode::Drain {
        learned.max(o.drain_ends_ms())
    } else {
        learned
    }
}

fn instant(ms: Option<u64>) -> (Value, Value) {
    match ms {
        Some(ms) => (json!(rfc3339::format(ms)), json!(ms)),
        None => (Value::Null, Value::Null),
    }
}

/// One origin's override as the API shows it at `now_ms`: an expired one
/// as `auto` since its expiry, none as `auto` with no `set_at`.
pub fn override_json(o: Option<&Override>, now_ms: u64, spread: Duration) -> Value {
    let shown = o.map(|o| match o.expired(now_ms) {
        // On every isolate's own clock at once: nothing to wait for.
        true => Override {
            mode: Mode::Auto,
            set_at_ms: o.expires_at_ms.unwrap_or(o.set_at_ms),
            expires_at_ms: None,
            drain: Duration::ZERO,
        },
        false => *o,
    });
    let effect_at = match o {
        // Never set, or expired (each isolate judges that on its own
        // clock): nothing to wait for.
        None => None,
        Some(o) if o.expired(now_ms) => None,
        Some(o) => Some(in_effect_at_ms(o, spread)),
    };
    let (set_at, set_at_ms) = instant(shown.map(|s| s.set_at_ms));
    let (expires_at, expires_at_ms) = instant(shown.and_then(|s| s.expires_at_ms));
    let (in_effect_at, in_effect_at_ms) = instant(effect_at);
    let mode = shown.map_or(Mode::Auto, |s| s.mode);
    let mut out = json!({
        "mode": mode.as_str(),
        "set_at": set_at,
        "expires_at": expires_at,
        "drain_s": shown.map_or(0, |s| s.drain.as_secs()),
        "in_effect": effect_at.is_none_or(|at| now_ms >= at),
        "set_at_ms": set_at_ms,
        "expires_at_ms": expires_at_ms,
        "in_effect_at": in_effect_at,
        "in_effect_at_ms": in_effect_at_ms,
    });
    if mode == Mode::ForceUp {
        out["warning"] = json!("served regardless of health: its failed checks are ignored");
    }
    out
}

/// `{"overrides": {"<name>": {...}}}`: every configured origin, by name, in
/// priority order, with its `node` when it names one.
pub fn document(config: &WorkerConfig, overrides: &Overrides, now_ms: u64) -> Value {
    json!({ "overrides": by_name(config, overrides, now_ms) })
}

/// The `overrides` object alone (also the status document's field).
pub fn by_name(config: &WorkerConfig, overrides: &Overrides, now_ms: u64) -> Value {
    let spread = propagation(Duration::from_millis(config.health_interval_ms));
    let mut map = Map::new();
    for (i, origin) in config.origins.iter().enumerate() {
        let mut entry = override_json(overrides.get(i), now_ms, spread);
        // Its node, when it names one: the agent's `[worker] node` drain
        // reads which origins are its node's from here.
        if let Some(node) = &origin.node {
            entry["node"] = json!(node);
        }
        map.insert(origin.name.clone(), entry);
    }
    Value::Object(map)
}

/// `{"origin": "<name>", ...override_json}`: the answer to a change.
pub fn stored_json(name: &str, o: &Override, now_ms: u64, config: &WorkerConfig) -> Value {
    let spread = propagation(Duration::from_millis(config.health_interval_ms));
    let mut out = override_json(Some(o), now_ms, spread);
    out["origin"] = json!(name);
    out
}

/// The answer to `POST {STATUS_PATH}/nodes/{node}` from the checker's
/// answers for the node's origins, in order (name, status, body), the
/// last of them a refusal if the change stopped there: 200 and
/// `{"node", "in_effect", "origins": {"<name>": <stored override>}}`,
/// `in_effect` once every one is; or the refusal's status and
/// `{"error", "field": "node", "set": [<names that took it>]}`.
pub fn node_answer(node: &str, answers: &[(String, u16, String)]) -> (u16, String) {
    let mut stored = Map::new();
    let mut in_effect = true;
    for (name, status, text) in answers {
        if *status != 200 {
            let problem = format!("{name}: the checker refused the change (HTTP {status})");
            let mut refused = error_json("node", &problem);
            refused["set"] = json!(stored.keys().collect::<Vec<_>>());
            return (*status, refused.to_string());
        }
        let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        in_effect &= value["in_effect"] == true;
        stored.insert(name.clone(), value);
    }
    let doc = json!({ "node": node, "in_effect": in_effect, "origins": stored });
    (200, doc.to_string())
}

/// `{"error": "<field>: <problem>", "field": "<field>"}`: the body of a 400.
pub fn error_json(field: &str, problem: &str) -> Value {
    json!({ "error": format!("{field}: {problem}"), "field": field })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_one_call_for_its_origins() {
        assert_eq!(AdminPath::of("nodes/home"), AdminPath::Node("home"));
        assert_eq!(
            AdminPath::of("nodes/"),
            AdminPath::Node(""),
            "a 400 names it"
        );
        for odd in ["nodes", "nodes/a/b", "nodesx/home", "node/home"] {
            assert_eq!(AdminPath::of(odd), AdminPath::Unknown, "{odd}");
        }
        let node = AdminPath::Node("home");
        assert_eq!(
            decide(node, "POST", Access::Write, true),
            Answer::SetNode("home")
        );
        assert_eq!(
            decide(node, "POST", Access::Read, true),
            Answer::Unauthorized
        );
        assert_eq!(
            decide(node, "GET", Access::Write, true),
            Answer::MethodNotAllowed("POST")
        );
        assert_eq!(decide(node, "POST", Access::Write, false), Answer::NotFound);
    }

    #[test]
    fn a_nodes_answer_says_what_took_it() {
        let ok = |in_effect: bool| format!(r#"{{"mode":"drain","in_effect":{in_effect}}}"#);
        let (status, text) = node_answer(
            "home",
            &[("a".into(), 200, ok(true)), ("b".into(), 200, ok(false))],
        );
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(status, 200);
        assert_eq!(doc["node"], "home");
        assert_eq!(doc["in_effect"], false, "b is not yet");
        assert_eq!(doc["origins"]["a"]["mode"], "drain");
        let (status, text) = node_answer(
            "home",
            &[("a".into(), 200, ok(true)), ("b".into(), 409, "{}".into())],
        );
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(status, 409);
        assert_eq!(doc["set"], json!(["a"]));
        assert!(doc["error"]
            .as_str()
            .unwrap()
            .contains("b: the checker refused"));
    }

    #[test]
    fn paths() {
        let table = [
            ("origins", AdminPath::List),
            ("origins/primary", AdminPath::Origin("primary")),
            ("origins/", AdminPath::Origin("")),
            ("origins/a/b", AdminPath::Unknown),
            ("originsx", AdminPath::Unknown),
            ("", AdminPath::Unknown),
            ("Origins", AdminPath::Unknown),
            ("status", AdminPath::Unknown),
        ];
        for (sub, want) in table {
            assert_eq!(AdminPath::of(sub), want, "{sub:?}");
        }
    }

    #[test]
    fn tokens() {
        let table = [
            (Some("Bearer admin-secret"), Access::Write),
            (Some("Bearer status-secret"), Access::Read),
            (Some("Bearer wrong"), Access::Refused),
            (Some("admin-secret"), Access::Refused),
            (None, Access::Refused),
        ];
        for (header, want) in table {
            assert_eq!(
                access(header, Some("status-secret"), Some("admin-secret")),
                want,
                "{header:?}"
            );
        }
        assert_eq!(
            access(Some("Bearer "), None, None),
            Access::Refused,
            "unset tokens match nothing"
        );
        assert_eq!(access(Some("Bearer x"), Some("x"), None), Access::Read);
    }

    /// Path × method × token × whether ADMIN_TOKEN is configured.
    #[test]
    fn decisions() {
        use Access::*;
        use AdminPath::*;
        let p = Origin("primary");
        let table = [
            (Unknown, "GET", Write, true, Answer::NotFound),
            (List, "GET", Read, false, Answer::List),
            (List, "HEAD", Write, true, Answer::List),
            (List, "GET", Refused, true, Answer::Unauthorized),
            (
                List,
                "POST",
                Write,
                true,
                Answer::MethodNotAllowed("GET, HEAD"),
            ),
            (p, "POST", Write, true, Answer::Set("primary")),
            (p, "POST", Read, true, Answer::Unauthorized),
            (p, "POST", Refused, true, Answer::Unauthorized),
            (p, "POST", Write, false, Answer::NotFound),
            (p, "POST", Refused, false, Answer::NotFound),
            (p, "GET", Write, true, Answer::MethodNotAllowed("POST")),
            (p, "PUT", Refused, true, Answer::MethodNotAllowed("POST")),
        ];
        for (path, method, access, admin, want) in table {
            assert_eq!(
                decide(path, method, access, admin),
                want,
                "{path:?} {method} {access:?} {admin}"
            );
        }
    }

    fn config() -> WorkerConfig {
        WorkerConfig::from_vars(|k| match k {
            "ORIGINS" => Some(
                r#"[{"name":"primary","url":"https://a.example"},{"name":"replica","url":"https://b.example"}]"#
                    .to_string(),
            ),
            "HEALTH_INTERVAL_MS" => Some("15000".to_string()),
            _ => None,
        })
        .unwrap()
    }

    #[test]
    fn the_document_shows_every_origin_and_when_each_override_is_in_effect() {
        let c = config();
        let spread = propagation(Duration::from_millis(15_000));
        let set = 1_796_153_464_000;
        let mut table = Overrides::none(2);
        table.set(
            0,
            Override {
                mode: Mode::Drain,
                set_at_ms: set,
                expires_at_ms: Some(set + 3_600_000),
                drain: Duration::from_secs(300),
            },
        );
        let doc = document(&c, &table, set + 1_000);
        let primary = &doc["overrides"]["primary"];
        assert_eq!(primary["mode"], "drain");
        assert_eq!(primary["set_at"], "2026-12-01T19:31:04Z");
        assert_eq!(primary["set_at_ms"], set);
        assert_eq!(primary["expires_at_ms"], set + 3_600_000);
        assert_eq!(primary["drain_s"], 300);
        assert_eq!(primary["in_effect"], false);
        assert_eq!(
            primary["in_effect_at_ms"],
            set + 300_000,
            "the drain outlasts the spread"
        );
        assert!(spread < Duration::from_secs(300));
        let replica = &doc["overrides"]["replica"];
        assert_eq!(replica["mode"], "auto");
        assert_eq!(replica["set_at"], Value::Null);
        assert_eq!(replica["in_effect"], true);
        // After the drain: in effect; after the TTL: auto since its expiry.
        assert_eq!(
            document(&c, &table, set + 300_000)["overrides"]["primary"]["in_effect"],
            true
        );
        let later = document(&c, &table, set + 3_600_000);
        assert_eq!(later["overrides"]["primary"]["mode"], "auto");
        assert_eq!(later["overrides"]["primary"]["set_at_ms"], set + 3_600_000);
        assert_eq!(later["overrides"]["primary"]["in_effect"], true);
    }

    #[test]
    fn a_disable_or_an_explicit_auto_is_in_effect_once_spread_and_force_up_warns() {
        let spread = Duration::from_secs(18);
        for mode in [Mode::Disable, Mode::Auto, Mode::ForceUp] {
            let o = Override {
                mode,
                set_at_ms: 1_000,
                expires_at_ms: None,
                drain: Duration::ZERO,
            };
            assert_eq!(
                override_json(Some(&o), 18_999, spread)["in_effect"],
                false,
                "{mode:?}"
            );
            let shown = override_json(Some(&o), 19_000, spread);
            assert_eq!(shown["in_effect"], true, "{mode:?}");
            assert_eq!(shown["warning"].is_string(), mode == Mode::ForceUp);
        }
        assert_eq!(error_json("ttl_s", "bad")["error"], "ttl_s: bad");
    }
}
