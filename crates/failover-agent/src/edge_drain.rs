//! Draining this node at the edge before its connector stops, and giving
//! it back after (tunnel per node, `[worker]` configured): the actions
//! `DrainAtEdge` and `ResumeAtEdge` of the core's per-node drain and
//! fail-back, carried out. The wait is the core's
//! (`failover_core::node::edge_drain`); here are the calls it looks
//! through: the Worker's admin API and cloudflared's `/metrics`.
//!
//! Without `[worker]` (or its token) both are no-ops: the connector stops
//! at once, as before, and the Worker replays the edge's 530 elsewhere.
//! The Worker not answering, or answering that it has no admin API, is no
//! reason to keep a node in maintenance serving: it is logged and the stop
//! goes ahead.
//!
//! Whether this node's origin is drained by us is kept in
//! `{state_dir}/edge-drained` (its existence), so an agent restarted during
//! maintenance still gives the origin back when it serves again.

use std::path::PathBuf;
use std::time::Duration;

use hyper::body::Bytes;

use failover_core::node::edge_drain::{in_flight, Look, QuietWait, Stopping};

use crate::client::Outbound;
use crate::config::format_ms as duration_text;
use crate::log;
use crate::state::Shared;
use crate::worker::{Admin, Mode, Target, DRAINED_MARKER};

/// Between two looks during the wait.
const LOOK_EVERY: Duration = Duration::from_millis(500);
/// cloudflared's `/metrics` is tens to hundreds of kilobytes.
const MAX_METRICS: usize = 4 * 1024 * 1024;

/// What the drain came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Drained {
    /// Go on and stop the connector (drained, timed out, or no drain
    /// possible).
    Stop,
    /// The maintenance flag went away during the wait: the connector stays,
    /// the origin is given back to health, the stop is not carried out.
    Cancelled,
}

/// The marker's path.
fn marker(shared: &Shared) -> PathBuf {
    shared.config.state_dir.join(DRAINED_MARKER)
}

fn admin(shared: &Shared) -> Option<(Admin<'_>, Target)> {
    let settings = shared.config.worker.as_ref()?;
    let origin = settings.target()?;
    let token = shared.worker_token.as_ref()?;
    Some((
        Admin {
            client: &shared.client,
            settings,
            token: &token.0,
            timeout: shared.config.probe_timeout,
        },
        origin,
    ))
}

/// `DrainAtEdge`: sets `drain` for this node's origin, then waits until the
/// Worker reports it in effect and cloudflared has nothing in flight for
/// `quiet_for`, at most `drain_timeout`.
pub(crate) async fn before_stop(shared: &Shared) -> Drained {
    let Some((admin, origin)) = admin(shared) else {
        return Drained::Stop;
    };
    let settings = admin.settings;
    let ttl = settings.maintenance_ttl_s();
    let drain_s = settings.drain_ms.div_ceil(1000);
    if let Err(e) = admin
        .set_target(&origin, Mode::Drain, Some(ttl), Some(drain_s))
        .await
    {
        log::warn(&format!(
            "cannot drain {origin} at the Worker ({e}): stopping the local connector \
             now; the Worker sends what reaches the stopped tunnel elsewhere"
        ));
        return Drained::Stop;
    }
    set_drained(shared, true);
    log::notice(&format!(
        "{origin} set to drain at the Worker (pinned requests for {}): stopping the \
         local connector once nothing is in flight for {}, at most {} from now",
        duration_text(settings.drain_ms),
        duration_text(settings.quiet_for_ms),
        duration_text(settings.drain_timeout_ms)
    ));
    let mut wait = QuietWait::new(
        shared.now_ms(),
        settings.quiet_for_ms,
        settings.drain_timeout_ms,
    );
    loop {
        shared.alive();
        let flag = shared.maintenance_flag.is_set();
        let in_effect = admin.drain_in_effect(&origin).await.ok();
        let requests = requests_in_flight(shared).await;
        match wait.observe(shared.now_ms(), flag, in_effect, requests) {
            Look::Wait => tokio::time::sleep(LOOK_EVERY).await,
            Look::Stop(Stopping::Quiet) => {
                log::info(&format!(
                    "{origin} drained at the Worker, no request in flight for {}: \
                     stopping the local connector",
                    duration_text(settings.quiet_for_ms)
                ));
                return Drained::Stop;
            }
            Look::Stop(Stopping::TimedOut) => {
                log::warn(&format!(
                    "{origin} not drained within drain_timeout ({}; the Worker reports \
                     the drain {}, cloudflared has {} in flight): stopping the local connector \
                     anyway (cloudflared lets what is in flight finish)",
                    duration_text(settings.drain_timeout_ms),
                    match in_effect {
                        Some(true) => "in effect",
                        Some(false) => "not in effect",
                        None => "unknown (no answer)",
                    },
                    requests.map_or("an unknown number of requests".to_string(), |n| {
                        format!("{n} request(s)")
                    })
                ));
                return Drained::Stop;
            }
            Look::Cancel => {
                log::notice(&format!(
                    "maintenance flag removed during the drain: the local connector keeps \
                     serving; giving {origin} back to health at the Worker"
                ));
                // The machine hears of the removal now: the rest of this
                // turn would otherwise see the connector running under the
                // flag it last read, and drain again. Its answer is a hold
                // (egress is proven afresh after a maintenance).
                let _ = shared.node().set_maintenance(shared.now_ms(), false);
                resume(shared).await;
                return Drained::Cancelled;
            }
        }
    }
}

/// `ResumeAtEdge` and the local look's retry: sets `auto` for this node's
/// origin if this node drained it. Logs the first failure in a row as a
/// warning, later ones at debug (the local look retries every poll).
pub(crate) async fn resume(shared: &Shared) {
    if !drained(shared) {
        return;
    }
    let Some((admin, origin)) = admin(shared) else {
        return;
    };
    match admin.set_target(&origin, Mode::Auto, None, None).await {
        Ok(_) => {
            set_drained(shared, false);
            shared.edge().resume_failing = false;
            log::info(&format!(
                "{origin} given back to health at the Worker (auto)"
            ));
        }
        Err(e) => {
            let line = format!(
                "cannot give {origin} back to health at the Worker ({e}); trying again \
                 at the next poll (the drain ends by itself after its ttl)"
            );
            let first = !std::mem::replace(&mut shared.edge().resume_failing, true);
            if first {
                log::warn(&line);
            } else {
                log::debug(&line);
            }
        }
    }
}

/// Whether this node's origin is drained by us.
pub(crate) fn drained(shared: &Shared) -> bool {
    shared.edge().drained
}

fn set_drained(shared: &Shared, on: bool) {
    shared.edge().drained = on;
    let path = marker(shared);
    let result = if on {
        std::fs::write(&path, b"drained at the Worker by this agent\n")
    } else {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    };
    if let Err(e) = result {
        log::warn(&format!(
            "cannot {} {}: {e} (a restarted agent may not give the origin back; its drain \
             ends after its ttl)",
            if on { "write" } else { "remove" },
            path.display()
        ));
    }
}

/// The requests the local cloudflared has in flight, from its `/metrics`;
/// `None` when it does not answer or shows no such gauge.
async fn requests_in_flight(shared: &Shared) -> Option<u64> {
    let request = Outbound {
        method: "GET",
        url: &shared.config.connector_metrics_url,
        headers: Vec::new(),
        body: Bytes::new(),
        read_at_most: Some(MAX_METRICS),
    };
    let response = shared
        .client
        .request(request, shared.config.probe_timeout)
        .await
        .ok()
        .filter(|r| r.status == 200)?;
    in_flight(&String::from_utf8_lossy(&response.body))
}
