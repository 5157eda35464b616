//! The Worker's admin API, as the agent calls it (`[worker]`): set an
//! origin's override (`POST {STATUS_PATH}/origins/{name}` with
//! `Authorization: Bearer <ADMIN_TOKEN>` and `{"mode", "ttl_s",
//! "drain_s"}`) and read them all (`GET {STATUS_PATH}/origins`). Used by
//! the drain before a planned stop (`edge_drain`) and by `failover-agent
//! origin`. The token is sent, never shown; the Worker's own error text is
//! quoted and bounded like any other party's.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::{json, Value};

use crate::client::{Client, Outbound, ProbeError};
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
    pub drain_ms: u64,
    pub quiet_for_ms: u64,
    pub drain_timeout_ms: u64,
}

impl Settings {
    /// The override's `ttl_s` for a maintenance drain: it outlives any
    /// wait, and returns the origin to health by itself (an hour at least)
    /// if the agent never comes back to say `auto`.
    pub(crate) fn maintenance_ttl_s(&self) -> u64 {
        (self.drain_timeout_ms / 1000).saturating_mul(2).max(3600)
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
    /// 404 (or 405): no admin API at that path: a Worker from before it,
    /// or `status_path` is not the Worker's `STATUS_PATH`.
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
            AdminError::NoAdminApi(status) => write!(
                f,
                "HTTP {status}: no admin API there (a Worker from before the admin API, or \
                 worker.status_path is not the Worker's STATUS_PATH)"
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
        let mut body = json!({ "mode": mode.as_str() });
        if let Some(ttl) = ttl_s {
            body["ttl_s"] = json!(ttl);
        }
        if let Some(drain) = drain_s {
            body["drain_s"] = json!(drain);
        }
        let path = format!("{}/origins/{name}", self.settings.status_path);
        self.exchange("POST", &path, Bytes::from(body.to_string()))
            .await
    }

    /// Every override: `{"overrides": {"<name>": {...}}}`.
    pub(crate) async fn overrides(&self) -> Result<Value, AdminError> {
        let path = format!("{}/origins", self.settings.status_path);
        self.exchange("GET", &path, Bytes::new()).await
    }

    /// Whether the Worker reports `name` drained: its override is `drain`
    /// and `in_effect`.
    pub(crate) async fn drain_in_effect(&self, name: &str) -> Result<bool, AdminError> {
        let all = self.overrides().await?;
        let this = &all["overrides"][name];
        Ok(this["mode"] == "drain" && this["in_effect"] == true)
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
        let parsed: Option<Value> = serde_json::from_slice(&response.body).ok();
        match response.status {
            // Taken: what it says back is shown to a person, or read for
            // `in_effect`; an answer that is not JSON reads as null (no
            // drain in effect), never as a refusal.
            200..=299 => Ok(parsed.unwrap_or(Value::Null)),
            404 | 405 => Err(AdminError::NoAdminApi(response.status)),
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
