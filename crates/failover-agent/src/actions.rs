//! The one executor: what the machine's answers ask of the world, carried
//! out in order. Both the monitor's decisions ([`carry_out`]) and the API's
//! orders ([`obey`]) come here, each holding [`Shared::actions`], so that a
//! start or stop is never decided on a state another one is changing.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use failover_core::node::{Action, Decision, HandoverRefused, Order, Outcome};

use crate::connector::ControlError;
use crate::edge_drain::{self, Drained};
use crate::log;
use crate::peer::{self, Asked};
use crate::readiness;
use crate::state::Shared;
use crate::url::Url;

/// Proof that the caller holds [`Shared::actions`].
pub(crate) type Turn<'a> = tokio::sync::MutexGuard<'a, ()>;

/// What an action is part of: the log lines and the patience differ.
#[derive(Clone, Copy)]
enum Plan {
    Decision(Decision),
    /// An order from the API: its failures are answered, not logged here.
    Order,
}

/// Carries out a decision: logs it, then runs its actions in order. The
/// caller holds the turn across the observation, the decision and this, so
/// that an API order cannot slip in between. Whether it was carried out:
/// every start and stop it asked for succeeded (what a notification and
/// the history may then report).
pub(crate) async fn carry_out(shared: &Shared, outcome: &Outcome, _turn: &Turn<'_>) -> bool {
    if outcome.decision == Decision::Hold {
        return false;
    }
    let message = format!(
        "decision {}: {}",
        outcome.decision.as_str(),
        outcome.evidence
    );
    match outcome.decision {
        Decision::FailBack | Decision::TakeOver | Decision::Withdraw => log::notice(&message),
        _ => log::info(&message),
    }
    if let Ok(now) = SystemTime::now().duration_since(UNIX_EPOCH) {
        shared.probes().last_transition_unix = Some(now.as_secs_f64());
    }
    let mut handover = None;
    let mut carried = true;
    for action in outcome.actions {
        shared.alive();
        let plan = Plan::Decision(outcome.decision);
        match act(shared, *action, plan, &mut handover).await {
            Ok(true) => {}
            // A drain cancelled (the flag went away while the edge
            // drained): the stop after it is not carried out.
            Ok(false) if *action == Action::DrainAtEdge => {
                carried = false;
                break;
            }
            Ok(false) => break,
            // A failed stop (logged by `act`) is decided again at the next
            // local look, which still sees the connector running; what
            // follows it still runs.
            Err(_) if *action == Action::StopLocal => carried = false,
            Err(_) => {
                carried = false;
                break;
            }
        }
    }
    shared.alive();
    carried
}

/// Why an order was not carried out.
#[derive(Debug)]
pub(crate) enum Disobeyed {
    /// The machine refused it (a handover under the flag, say).
    Refused(HandoverRefused),
    /// The connector command failed.
    Control(ControlError),
}

/// Carries out an order from the API, holding the turn the caller took.
/// The machine says whether it is taken and which actions carry it out,
/// and hears when they succeeded.
pub(crate) async fn obey(
    shared: &Shared,
    order: Order,
    _turn: tokio::sync::OwnedMutexGuard<()>,
) -> Result<(), Disobeyed> {
    let actions = shared
        .node()
        .order(shared.now_ms(), order)
        .map_err(Disobeyed::Refused)?;
    let mut handover = None;
    for action in actions {
        act(shared, *action, Plan::Order, &mut handover)
            .await
            .map_err(Disobeyed::Control)?;
    }
    shared.node().order_done(shared.now_ms(), order);
    Ok(())
}

/// Starts the connector unless its status says it runs already: `true`
/// when it was started. A start order for a running connector (an
/// operator's second `start`, a handover to the node that serves) must not
/// run `start_command` again: a command that backgrounds a second
/// cloudflared and rewrites its pidfile would orphan the first, one the
/// agent could then never stop. A status that fails to answer is not
/// proof of either: the start goes ahead, as it did before the check.
async fn start_unless_running(shared: &Shared) -> Result<bool, ControlError> {
    match shared.control.is_running().await {
        Ok(true) => return Ok(false),
        Ok(false) => {}
        Err(e) => log::warn(&format!(
            "connector status failed before a start: {e}; starting it anyway"
        )),
    }
    shared.control.start().await.map(|()| true)
}

/// One action: `Ok(false)` when the actions after it must be skipped; the
/// error of a connector command that failed (logged here for a decision,
/// by the API for an order). `handover` keeps the peer's answer to a
/// handover for the wait after it.
async fn act(
    shared: &Shared,
    action: Action,
    plan: Plan,
    handover: &mut Option<Asked>,
) -> Result<bool, ControlError> {
    let peer_agent = shared.config.peer_agent_url.as_ref();
    match (action, peer_agent) {
        (Action::StartLocal, _) => match start_unless_running(shared).await {
            Ok(false) => {
                log::info(&format!(
                    "local connector already running ({}); not started again",
                    shared.control.describe()
                ));
                Ok(true)
            }
            Ok(true) => {
                log::info(&format!(
                    "local connector started ({})",
                    shared.control.describe()
                ));
                Ok(true)
            }
            Err(e) => {
                if let Plan::Decision(_) = plan {
                    // Not serving ourselves, we must not take the tunnel
                    // from a peer that might: the rest is skipped.
                    log::error(&format!(
                        "starting the local connector failed: {e}; not asking the peer to \
                         stand down; deciding again at the next poll"
                    ));
                }
                Err(e)
            }
        },
        (Action::StopLocal, _) => match shared.control.stop().await {
            Ok(()) => {
                log::info(&format!(
                    "local connector stopped ({})",
                    shared.control.describe()
                ));
                Ok(true)
            }
            Err(e) => {
                if let Plan::Decision(_) = plan {
                    log::error(&format!(
                        "stopping the local connector failed: {e}; deciding again at the next poll"
                    ));
                }
                Err(e)
            }
        },
        (Action::AwaitLocalReady, _) => {
            let bound = shared.config.command_timeout;
            if await_local_ready(shared, bound).await {
                Ok(true)
            } else {
                log::warn(&format!(
                    "local connector not ready within {} ms of its start; not asking the \
                     peer to stand down (it does at its next look once ours is ready)",
                    bound.as_millis()
                ));
                Ok(false)
            }
        }
        (Action::AskPeerToStop, Some(url)) => {
            // A take-over insists (the peer that missed our looks must
            // stop, or its link's flapping goes undamped). A fail-back
            // waits out one ordinary turn of the standby (a peer look
            // holds its lock for up to a probe timeout), but gives up
            // first when the two cross: the standby's take-over is then
            // let through, and a standby merely slow stands down by
            // itself once it sees ours ready.
            let retry_busy = if matches!(plan, Plan::Decision(Decision::TakeOver)) {
                shared.config.command_timeout
            } else {
                shared.config.probe_timeout * 3
            };
            peer::ask_to_stop(shared, url, retry_busy).await;
            Ok(true)
        }
        (Action::HandOverToPeer, Some(url)) => {
            *handover = Some(peer::hand_over(shared, url, shared.config.command_timeout).await);
            Ok(true)
        }
        (Action::AwaitPeerReady, Some(url)) => {
            await_peer_before_stop(shared, url, *handover).await;
            Ok(true)
        }
        (Action::DrainAtEdge, _) => Ok(edge_drain::before_stop(shared).await == Drained::Stop),
        (Action::ResumeAtEdge, _) => {
            // Given back only once the connector serves: the edge must not
            // send to a tunnel that has no connection yet.
            if edge_drain::drained(shared)
                && await_local_ready(shared, shared.config.command_timeout).await
            {
                edge_drain::resume(shared).await;
            }
            Ok(true)
        }
        // The core asks nothing of a peer in the tunnel-per-node
        // topology, the only one without a peer URL.
        (Action::AskPeerToStop | Action::HandOverToPeer | Action::AwaitPeerReady, None) => Ok(true),
    }
}

/// Make before break: waits, bounded, for the peer's connector before ours
/// stops; the stop follows either way. Skipped only when the peer said no:
/// an answer that came too late or was lost (its start took longer than
/// our deadline, a packet dropped) may hide a peer that is starting, and
/// stopping at once would leave the tunnel with no connector until it is.
async fn await_peer_before_stop(shared: &Shared, peer_agent: &Url, handover: Option<Asked>) {
    let bound = shared.config.command_timeout;
    let refused = handover == Some(Asked::Refused);
    let ready = !refused && peer::await_ready(shared, peer_agent, bound).await;
    let unanswered = handover != Some(Asked::Done);
    if ready {
        log::info(&format!(
            "peer connector ready{}: stopping ours (make before break)",
            if unanswered {
                " although the handover went unanswered"
            } else {
                ""
            }
        ));
        return;
    }
    log::error(&format!(
        "PEER CONNECTOR NOT READY{}: stopping the local connector anyway; the tunnel has NO \
         serving connector until the peer's starts",
        if refused {
            " (the handover was refused)".to_string()
        } else if unanswered {
            format!(
                " within {} ms (the handover was not answered)",
                bound.as_millis()
            )
        } else {
            format!(" within {} ms", bound.as_millis())
        }
    ));
}

/// Polls the local connector's `/ready` until it shows an edge connection
/// or `bound` passes.
async fn await_local_ready(shared: &Shared, bound: Duration) -> bool {
    let until = Instant::now() + bound;
    loop {
        shared.alive();
        let result = shared
            .client
            .get(
                &shared.config.connector_ready_url,
                shared.config.probe_timeout,
            )
            .await;
        if readiness::from_result(result).is_ready() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(peer::READY_POLL).await;
    }
}
