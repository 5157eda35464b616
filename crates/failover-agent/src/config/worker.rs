//! `[worker]`: the Worker in front of the nodes, for its admin API: the
//! drain before a planned stop (tunnel per node) and `failover-agent
//! origin`. The admin token is read from its file by [`read_token`], which
//! `run`, `check-config` and `origin` call.

use std::path::Path;

use failover_core::node::Topology;

use crate::notify::Hidden;
use crate::worker::{
    Settings, DEFAULT_DRAIN_MS, DEFAULT_DRAIN_TIMEOUT_MS, DEFAULT_QUIET_FOR_MS, DEFAULT_STATUS_PATH,
};

use super::{check_name, err, secret_file, ConfigError, Section, MIN_TOKEN_CHARS};

const KEYS: &[&str] = &[
    "url",
    "status_path",
    "admin_token_file",
    "origin",
    "node",
    "drain",
    "quiet_for",
    "drain_timeout",
];

pub(super) fn parse(
    section: &Section<'_>,
    topology: Topology,
) -> Result<Option<Settings>, ConfigError> {
    if !section.is_present() {
        return Ok(None);
    }
    section.only(KEYS)?;
    let url = section.required_url(
        "url",
        "the site's URL at the Worker, e.g. \"https://www.example.com\"",
    )?;
    if !url.https && !url.is_loopback() {
        return Err(err(
            "worker.url",
            format!(
                "{url} is http:// to a host that is not this machine: the agent sends the \
                 Worker's admin token with every call, and over http:// it would cross the \
                 network in clear text; use https:// (the Worker is served over HTTPS at \
                 Cloudflare's edge), or http:// only to loopback (wrangler dev)"
            ),
        ));
    }
    if url.path != "/" {
        return Err(err(
            "worker.url",
            format!(
                "{url} has a path; give the site's URL alone (the admin API is under \
                 worker.status_path)"
            ),
        ));
    }
    let status_path = section
        .string("status_path")?
        .unwrap_or_else(|| DEFAULT_STATUS_PATH.to_string());
    // The Worker's own grammar: a path the runtime rewrites ("/a/../b",
    // "/a%2e") is not where the Worker answers, and the admin token would
    // go to whatever answers there instead.
    if let Err(why) = failover_core::edge::status_path::check(&status_path) {
        return Err(err(
            "worker.status_path",
            format!(
                "{status_path:?} {why}; give the Worker's STATUS_PATH exactly, a path like \
                 \"{DEFAULT_STATUS_PATH}\" (letters, digits and -._~!$&'()*+,;=:@ between \
                 single slashes, no '.' or '..' segment, no trailing '/')"
            ),
        ));
    }
    let admin_token_file = section.required_path(
        "admin_token_file",
        "a file (mode 0600) holding the Worker's ADMIN_TOKEN secret",
    )?;
    // What the agent drains at the Worker before a planned stop: its one
    // origin, or (SITES) every origin on its node.
    let (origin, node) =
        match (section.string("origin")?, section.string("node")?, topology) {
            (Some(_), Some(_), _) => return Err(err(
                "worker.node",
                "and worker.origin are both set: drain this node's one origin (origin) or every \
                 origin whose node it is at the Worker (node), not both",
            )),
            (Some(_), None, Topology::SharedTunnel) => return Err(err(
                "worker.origin",
                "means nothing with topology = \"shared-tunnel\": both nodes serve one origin, \
             and draining it would drain the site; remove it",
            )),
            (None, Some(_), Topology::SharedTunnel) => return Err(err(
                "worker.node",
                "means nothing with topology = \"shared-tunnel\": both nodes serve one origin, \
             and draining it would drain the site; remove it",
            )),
            (Some(name), None, Topology::TunnelPerNode) => (
                Some(check_name(&name).map_err(|why| err("worker.origin", why))?),
                None,
            ),
            (None, Some(name), Topology::TunnelPerNode) => (
                None,
                Some(check_name(&name).map_err(|why| err("worker.node", why))?),
            ),
            (None, None, Topology::TunnelPerNode) => return Err(err(
                "worker.origin",
                "missing; this node's origin name in the Worker's ORIGINS (the agent drains it \
             at the Worker before a planned stop of its connector), or worker.node: its node \
             in the Worker's SITES, to drain every origin on it",
            )),
            (None, None, Topology::SharedTunnel) => (None, None),
        };
    let drain_ms = section.duration_ms("drain")?.unwrap_or(DEFAULT_DRAIN_MS);
    let quiet_for_ms = section
        .duration_ms("quiet_for")?
        .unwrap_or(DEFAULT_QUIET_FOR_MS);
    let drain_timeout_ms = section
        .duration_ms("drain_timeout")?
        .unwrap_or(DEFAULT_DRAIN_TIMEOUT_MS);
    if drain_timeout_ms <= quiet_for_ms {
        return Err(err(
            "worker.drain_timeout",
            format!(
                "{drain_timeout_ms} ms must be longer than quiet_for ({quiet_for_ms} ms), or \
                 the wait could never see enough quiet"
            ),
        ));
    }
    Ok(Some(Settings {
        url,
        status_path,
        admin_token_file,
        origin,
        node,
        drain_ms,
        quiet_for_ms,
        drain_timeout_ms,
    }))
}

/// The Worker's admin token, from `admin_token_file`: owner-only, and as
/// long as a token must be.
pub(crate) fn read_token(path: &Path) -> Result<Hidden, ConfigError> {
    let use_ = secret_file::Use {
        readers_can: "can drain, disable or force up any origin at the Worker",
        min_chars: MIN_TOKEN_CHARS,
        why_long: "(it guards the Worker's admin API)",
    };
    secret_file::read("worker.admin_token_file", path, &use_).map(Hidden)
}
