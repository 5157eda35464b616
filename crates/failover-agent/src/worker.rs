//! The Worker's admin API, as the agent calls it (`[worker]`): set an
//! origin's override (`POST {STATUS_PATH}/origins/{name}` with
//! `Authorization: Bearer <ADMIN_TOKEN>` and `{"mode", "ttl_s",
//! "drain_s"}`) and read them all (`GET {STATUS_PATH}/origins`). Used by
//! the drain before a planned stop (`edge_drain`) and by `failover-agent
//! origin`. The token is sent, never shown; the Worker's own error text is
//! quoted and bounded like any other party's. An answer counts as the
//! admin API's only with the Worker's mark ([`is_admin_answer`]): a
//! mistyped `status_path` reaches the app, and the app's 200 is not a
//! drain.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::{json, Value};

use crate::client::{Client, Outbound, ProbeError, Response};
use crate::log;
use crate::url::Url;

/// The Worker's `STATUS_PATH` when it is not set
/// (`failover_core::edge::config::vars::DEFAULT_STATUS_PATH`).
pub(crate) const DEFAULT_STATUS_PATH: &str = "/__failover/status";
/// `drain`: how long requests pinned to this node keep coming to it after
/// the drain is set (the Worker's `drain_s`).
pub(crate) const DEFAULT_DRAIN_MS: u64 = 60_000;
/// `quiet_for`: no request in flight this long before the stop.
pub(crate) const DEFAULT_QUIET_FOR_MS: u64 = 5_000;
/// `drain_timeout`: the longest wait between the drain and the stop.
pub(crate) const DEFAULT_DRAIN_TIMEOUT_MS: u64 = 120_000;
/// In `state_dir`, present while this node's origin is drained at the
/// Worker by this agent (`edge_drain`), so a restarted agent still gives
/// it back.
pub(crate) const DRAINED_MARKER: &str = "edge-drained";
/// An answer from the admin API is a few hundred bytes per origin.
const MAX_ANSWER: usize = 256 * 1024;
/// `x-tunnel-failover` on every answer of the Worker's admin API
/// (`{STATUS_PATH}/origins...`), its 400/401/404/405/503 included; the
/// status endpoint's own answers say `status`. The Worker's constant.
const ADMIN_MARK: &str = failover_core::edge::overrides::api::ANSWERED_BY_ADMIN;

/// `[worker]`.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// The site's URL at the Worker (its public hostname), no path.
    pub url: Url,
    /// The Worker's `STATUS_PATH`; the admin API lives under it.
    pub status_path: String,
    pub admin_token_file: PathBuf,
    /// This node's origin in the Worker's `ORIGINS` (tunnel per node):
    /// what the agent drains before a planned stop.
    pub origin: Option<String>,
    /// Or this node's name in the Worker's origins' `node` (`SITES`):
    /// every origin on it is drained, in every site, in one call.
    pub node: Option<String>,
    pub drain_ms: u64,
    pub quiet_for_ms: u64,
    pub drain_timeout_ms: u64,
}

impl Settings {
    /// What this node drains at the Worker: its `node` if it names one,
    /// else its `origin`; None with neither (shared tunnel).
    pub(crate) fn target(&self) -> Option<Target> {
        match (&self.node, &self.origin) {
            (Some(node), _) => Some(Target::Node(node.clone())),
            (None, Some(origin)) => Some(Target::Origin(origin.clone())),
            (None, None) => None,
        }
    }

    /// The override's `ttl_s` for a maintenance drain: it outlives any
    /// wait, and returns the origin to health by itself (an hour at least)
    /// if the agent never comes back to say `auto`.
    pub(crate) fn maintenance_ttl_s(&self) -> u64 {
        (self.drain_timeout_ms / 1000).saturating_mul(2).max(3600)
    }
}

/// What a drain at the Worker addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// One origin, by its name (`POST {STATUS_PATH}/origins/{name}`).
    Origin(String),
    /// Every origin whose `node` this is (`POST {STATUS_PATH}/nodes/{node}`).
    Node(String),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Origin(name) => write!(f, "origin {name}"),
            Target::Node(node) => write!(f, "node {node}"),
        }
    }
}

/// Whether the list of overrides (`GET {STATUS_PATH}/origins`) shows
/// `target` drained: its override, or every override of its node's
/// origins (at least one), `drain` and `in_effect`.
pub(crate) fn drained_in(all: &Value, target: &Target) -> bool {
    let drained = |o: &Value| o["mode"] == "drain" && o["in_effect"] == true;
    match target {
        Target::Origin(name) => drained(&all["overrides"][name]),
        Target::Node(node) => {
            let Some(map) = all["overrides"].as_object() else {
                return false;
            };
            let mine: Vec<&Value> = map
                .values()
                .filter(|o| o["node"] == node.as_str())
                .collect();
            !mine.is_empty() && mine.into_iter().all(drained)
        }
    }
}

/// An override's mode: the contract's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Drain,
    Disable,
    ForceUp,
    Auto,
}

impl Mode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Drain => "drain",
            Mode::Disable => "disable",
            Mode::ForceUp => "force-up",
            Mode::Auto => "auto",
        }
    }
}

/// Why the Worker did not do what was asked.
#[derive(Debug)]
pub(crate) enum AdminError {
    /// No answer (refused, timed out, TLS).
    Unreachable(ProbeError),
    /// An answer without the Worker's admin mark, or one it proxied from
    /// an origin (`proxied`): whatever answers there is not the admin API.
    NotTheWorker { status: u16, proxied: bool },
    /// The Worker's own 404: its admin API is off (no `ADMIN_TOKEN`).
    NoAdminApi(u16),
    /// 401/403: the token is not the Worker's `ADMIN_TOKEN`.
    Unauthorized(u16),
    /// 400 and other answers, with the Worker's `error` text (quoted).
    Refused { status: u16, error: String },
}

impl fmt::Display for AdminError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdminError::Unreachable(e) => write!(f, "the Worker did not answer: {e}"),
            AdminError::NotTheWorker { status, proxied } => write!(
                f,
                "HTTP {status} {}: not the Worker's admin API (worker.status_path is not the \
                 Worker's STATUS_PATH, worker.url is not the Worker's site, or the Worker is \
                 older than this agent); nothing was changed at the Worker",
                if *proxied {
                    "from an origin behind the Worker (x-served-by)"
                } else {
                    "without the Worker's x-tunnel-failover: admin header"
                }
            ),
            AdminError::NoAdminApi(status) => write!(
                f,
                "HTTP {status} from the Worker: no admin API there (set the Worker's \
                 ADMIN_TOKEN secret)"
            ),
            AdminError::Unauthorized(status) => write!(
                f,
                "HTTP {status}: the Worker refused the token (worker.admin_token_file must \
                 hold the Worker's ADMIN_TOKEN secret)"
            ),
            AdminError::Refused { status, error } => write!(f, "HTTP {status}: {error}"),
        }
    }
}

/// One Worker, with the token to talk to it.
pub(crate) struct Admin<'a> {
    pub client: &'a Client,
    pub settings: &'a Settings,
    pub token: &'a str,
    pub timeout: Duration,
}

impl Admin<'_> {
    /// Sets `name`'s override; the Worker's answer (the override).
    pub(crate) async fn set(
        &self,
        name: &str,
        mode: Mode,
        ttl_s: Option<u64>,
        drain_s: Option<u64>,
    ) -> Result<Value, AdminError> {
        let target = Target::Origin(name.to_string());
        self.set_target(&target, mode, ttl_s, drain_s).await
    }

    /// Sets the override of `target` (an origin, or every origin on a
    /// node); the Worker's answer.
    pub(crate) async fn set_target(
        &self,
        target: &Target,
        mode: Mode,
        ttl_s: Option<u64>,
        drain_s: Option<u64>,
    ) -> Result<Value, AdminError> {
        let mut body = json!({ "mode": mode.as_str() });
        if let Some(ttl) = ttl_s {
            body["ttl_s"] = json!(ttl);
        }
        if let Some(drain) = drain_s {
            body["drain_s"] = json!(drain);
        }
        let path = match target {
            Target::Origin(name) => format!("{}/origins/{name}", self.settings.status_path),
            Target::Node(node) => format!("{}/nodes/{node}", self.settings.status_path),
        };
        self.exchange("POST", &path, Bytes::from(body.to_string()))
            .await
    }

    /// Every override: `{"overrides": {"<name>": {...}}}`.
    pub(crate) async fn overrides(&self) -> Result<Value, AdminError> {
        let path = format!("{}/origins", self.settings.status_path);
        self.exchange("GET", &path, Bytes::new()).await
    }

    /// Whether the Worker reports `target` drained ([`drained_in`]).
    pub(crate) async fn drain_in_effect(&self, target: &Target) -> Result<bool, AdminError> {
        let all = self.overrides().await?;
        Ok(drained_in(&all, target))
    }

    async fn exchange(
        &self,
        method: &'static str,
        path: &str,
        body: Bytes,
    ) -> Result<Value, AdminError> {
        let url = self.settings.url.with_path(path);
        let mut headers = vec![("authorization", format!("Bearer {}", self.token))];
        if !body.is_empty() {
            headers.push(("content-type", "application/json".to_string()));
        }
        let request = Outbound {
            method,
            url: &url,
            headers,
            body,
            read_at_most: Some(MAX_ANSWER),
        };
        let response = self
            .client
            .request(request, self.timeout)
            .await
            .map_err(AdminError::Unreachable)?;
        if !is_admin_answer(&response) {
            return Err(AdminError::NotTheWorker {
                status: response.status,
                proxied: response.served_by,
            });
        }
        let parsed: Option<Value> = serde_json::from_slice(&response.body).ok();
        match response.status {
            // Taken: what it says back is shown to a person, or read for
            // `in_effect`; an answer that is not JSON reads as null (no
            // drain in effect), never as a refusal.
            200..=299 => Ok(parsed.unwrap_or(Value::Null)),
            404 => Err(AdminError::NoAdminApi(response.status)),
            401 | 403 => Err(AdminError::Unauthorized(response.status)),
            status => {
                let text = parsed
                    .as_ref()
                    .and_then(|v| v.get("error"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| String::from_utf8_lossy(&response.body).into_owned());
                Err(AdminError::Refused {
                    status,
                    error: log::quoted(text.trim()),
                })
            }
        }
    }
}

/// Whether an answer is the Worker's admin API's: its mark, and no
/// `x-served-by`. An app behind the Worker may send the mark too (forged,
/// or echoed), but what the Worker proxies always carries `x-served-by`.
fn is_admin_answer(response: &Response) -> bool {
    response.tunnel_failover.as_deref() == Some(ADMIN_MARK) && !response.served_by
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_drained_once_every_origin_on_it_is() {
        let drain = |node: &str, in_effect: bool| json!({"mode": "drain", "in_effect": in_effect, "node": node});
        let node = Target::Node("home".into());
        let all = |a: Value, b: Value| json!({"overrides": {"www-home": a, "git-home": b, "www-vps": {"mode": "auto", "node": "vps"}}});
        assert!(drained_in(
            &all(drain("home", true), drain("home", true)),
            &node
        ));
        assert!(!drained_in(
            &all(drain("home", true), drain("home", false)),
            &node
        ));
        assert!(!drained_in(
            &all(drain("home", true), json!({"mode": "auto", "node": "home"})),
            &node
        ));
        assert!(
            !drained_in(&json!({"overrides": {}}), &node),
            "no origin on it: nothing drained"
        );
        assert!(!drained_in(&json!({"overrides": 5}), &node));
        let origin = Target::Origin("www-home".into());
        assert!(drained_in(
            &all(drain("home", true), drain("home", false)),
            &origin
        ));
        assert_eq!(node.to_string(), "node home");
        assert_eq!(origin.to_string(), "origin www-home");
    }

    #[test]
    fn only_the_workers_own_admin_answer_is_trusted() {
        let answer = |mark: Option<&str>, served_by: bool| Response {
            status: 200,
            location: None,
            retry_after: None,
            tunnel_failover: mark.map(str::to_string),
            served_by,
            body: Bytes::new(),
        };
        assert!(is_admin_answer(&answer(Some("admin"), false)));
        for (mark, served_by) in [
            (None, false),
            (Some("status"), false),
            (Some("Admin "), false),
            (Some(""), false),
            (Some("admin"), true),
            (None, true),
        ] {
            assert!(
                !is_admin_answer(&answer(mark, served_by)),
                "{mark:?}, x-served-by {served_by}"
            );
        }
    }
}
