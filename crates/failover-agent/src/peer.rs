//! Talking to the peer agent (shared tunnel): looking at its connector,
//! asking it to stand down, handing it the tunnel. Every call has its own
//! deadline, so a hung peer costs one bounded step.

use std::fmt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use failover_core::node::{Order, PeerView};

use crate::client::{ProbeError, Response};
use crate::log;
use crate::protocol;
use crate::readiness;
use crate::signed_order;
use crate::state::Shared;
use crate::url::Url;

/// What became of asking the peer to do something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Asked {
    Done,
    Refused,
    Unreachable,
}

/// Readiness of the peer CONNECTOR, through the peer agent's relay and, if
/// configured, directly; both at once, each with the probe timeout.
pub(crate) async fn look(shared: &Shared, peer_agent: &Url) -> PeerView {
    let config = &shared.config;
    let relay = peer_agent.with_path(protocol::CONNECTOR_READY);
    let timed = |url| async move {
        let started = Instant::now();
        let result = shared.client.get(url, config.probe_timeout).await;
        (
            readiness::from_result(result),
            started.elapsed().as_secs_f64(),
        )
    };
    let (via_agent, direct) = match &config.peer_connector_ready_url {
        Some(direct_url) => {
            let (a, d) = tokio::join!(timed(&relay), timed(direct_url));
            (a, Some(d))
        }
        None => (timed(&relay).await, None),
    };
    let mut probes = shared.probes();
    probes.peer_seconds = Some(via_agent.1);
    probes.peer_direct_seconds = direct.as_ref().map(|d| d.1);
    PeerView {
        via_agent: via_agent.0,
        direct: direct.map(|d| d.0),
    }
}

/// `POST /failover/stop`. A peer busy with a decision of its own is asked
/// again until `retry_busy` runs out (zero: once).
pub(crate) async fn ask_to_stop(shared: &Shared, peer_agent: &Url, retry_busy: Duration) -> Asked {
    match post_order(shared, peer_agent, Order::Stop, retry_busy).await {
        Ok(r) if r.status == 200 => {
            log::info("peer agent stopped its connector on request");
            Asked::Done
        }
        Ok(r) if is_busy(&r) => {
            log::info("peer agent busy with a decision of its own; not waiting for it");
            Asked::Refused
        }
        Ok(r) => {
            log::warn(&format!(
                "peer agent refused to stand down: HTTP {}{}",
                r.status,
                unauthorized_hint(r.status)
            ));
            Asked::Refused
        }
        // A dead peer is the usual reason for a take-over.
        Err(e) => {
            log::info(&format!(
                "peer agent not reachable to stand down ({e}); serving anyway"
            ));
            Asked::Unreachable
        }
    }
}

/// `POST /failover/handover`: the peer starts its connector and keeps it
/// while ours stops. Answers once the peer's start command has finished. A
/// peer busy with a decision of its own is asked again until `bound`.
pub(crate) async fn hand_over(shared: &Shared, peer_agent: &Url, bound: Duration) -> Asked {
    match post_order(shared, peer_agent, Order::Handover, bound).await {
        Ok(r) if r.status == 200 => {
            log::info("peer agent started its connector for the handover");
            Asked::Done
        }
        Ok(r) => {
            let why = String::from_utf8_lossy(&r.body);
            log::warn(&format!(
                "peer agent refused the handover: HTTP {} {}{}",
                r.status,
                log::quoted(why.trim()),
                unauthorized_hint(r.status)
            ));
            Asked::Refused
        }
        Err(e) => {
            log::warn(&format!("peer agent not reachable for the handover: {e}"));
            Asked::Unreachable
        }
    }
}

/// One order to the peer agent, asked again while it answers "busy" and
/// `retry_busy` has not run out; the last answer. Each try may take the
/// peer's whole `command_timeout`: waiting less would log an order that
/// still happens as "not reachable".
async fn post_order(
    shared: &Shared,
    peer_agent: &Url,
    order: Order,
    retry_busy: Duration,
) -> Result<Response, PostError> {
    let path = protocol::order_path(order);
    let url = peer_agent.with_path(path);
    let deadline = shared.config.command_timeout + shared.config.probe_timeout;
    let until = tokio::time::Instant::now() + retry_busy;
    let recipient = signed_order::peer_of(shared.config.role);
    loop {
        shared.alive();
        // Signed afresh for every try: the peer refuses a nonce twice.
        let nonce = signed_order::nonce().ok_or(PostError::NoRandomness)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|_| PostError::ClockBefore1970)?;
        let authorization = signed_order::sign(
            shared.token.as_str(),
            "POST",
            // The API's own path, as the peer routes it: a base path in
            // peer.agent_url belongs to a proxy in between.
            path,
            recipient,
            u64::try_from(now.as_millis()).unwrap_or(u64::MAX),
            &nonce,
        );
        let answer = shared.client.post(&url, &authorization, deadline).await;
        match answer {
            Ok(r) if is_busy(&r) && tokio::time::Instant::now() < until => {
                tokio::time::sleep(READY_POLL).await;
            }
            other => return other.map_err(PostError::Probe),
        }
    }
}

/// Why an order never got an answer.
#[derive(Debug)]
enum PostError {
    NoRandomness,
    ClockBefore1970,
    Probe(ProbeError),
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PostError::NoRandomness => f.write_str("no randomness to sign the order with"),
            PostError::ClockBefore1970 => {
                f.write_str("the clock is before 1970: cannot sign the order")
            }
            PostError::Probe(e) => write!(f, "{e}"),
        }
    }
}

/// What a 401 from the peer usually means, for the log line.
fn unauthorized_hint(status: u16) -> &'static str {
    if status == 401 {
        " (our signed order was refused: the two token files differ, the clocks are more than \
         60 s apart, both nodes have the same role, or the peer runs a version from before \
         signed orders)"
    } else {
        ""
    }
}

fn is_busy(r: &Response) -> bool {
    protocol::is_busy(r.status, &r.body)
}

/// Polls `look` until the peer's connector is ready or `bound` passes.
pub(crate) async fn await_ready(shared: &Shared, peer_agent: &Url, bound: Duration) -> bool {
    let until = tokio::time::Instant::now() + bound;
    loop {
        shared.alive();
        if look(shared, peer_agent).await.is_ready() {
            return true;
        }
        if tokio::time::Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(READY_POLL).await;
    }
}

/// How often a bounded wait for readiness looks again: a connector
/// registers within a second or two, and the overlap of two serving
/// connectors is what this costs at most.
pub(crate) const READY_POLL: Duration = Duration::from_millis(200);
