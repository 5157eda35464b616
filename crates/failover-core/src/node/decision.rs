//! The answers of the node machine.

use super::evidence::Evidence;
use super::topology::Topology;

/// What the node should do about its connector now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to change.
    Hold,
    /// Standby: the peer's connector missed enough checks; serve, and ask
    /// the peer to stand down.
    TakeOver,
    /// Standby: the peer's connector is ready again; stop ours.
    StandDown,
    /// Primary, or a node with its own tunnel: our connector is not running,
    /// egress is proven and the app is up; serve again.
    FailBack,
    /// The maintenance flag is set and our connector runs: stop it (in a
    /// shared tunnel, after the peer's connector is ready; with its own
    /// tunnel, after draining it at the Worker when the agent can).
    Drain,
    /// Our connector runs but this node cannot serve: its app is down, or
    /// (tunnel per node) the connector lost its edge connections. Stop it so
    /// the edge answers 530 and the traffic goes elsewhere.
    Withdraw,
}

/// Why a decision was taken, typed: logs carry the prose, metrics and tests
/// count these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// Nothing to change (a hold).
    Steady,
    /// Standby: the peer's connector missed `takeover_after` looks.
    PeerMissed,
    /// Standby: the peer's connector is ready again.
    PeerReady,
    /// Primary or tunnel per node: egress proven (and the app up).
    EgressProven,
    /// The maintenance flag is set.
    Maintenance,
    /// The app failed `fall` checks.
    AppDown,
    /// Tunnel per node: the running connector held no edge connection for
    /// `takeover_after` looks.
    UplinkLost,
}

impl Reason {
    /// Every reason, in the order `/health` and `/metrics` list them.
    pub const ALL: [Reason; 7] = [
        Reason::Steady,
        Reason::PeerMissed,
        Reason::PeerReady,
        Reason::EgressProven,
        Reason::Maintenance,
        Reason::AppDown,
        Reason::UplinkLost,
    ];

    /// The key in `/health`'s `reasons` and the metrics' `reason` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Steady => "steady",
            Reason::PeerMissed => "peer-missed",
            Reason::PeerReady => "peer-ready",
            Reason::EgressProven => "egress-proven",
            Reason::Maintenance => "maintenance",
            Reason::AppDown => "app-down",
            Reason::UplinkLost => "uplink-lost",
        }
    }

    fn index(self) -> usize {
        Reason::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

/// Decisions carried out, counted by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReasonCounts([u64; 7]);

impl ReasonCounts {
    /// Counts one decision taken for `reason`.
    pub fn add(&mut self, reason: Reason) {
        let slot = &mut self.0[reason.index()];
        *slot = slot.saturating_add(1);
    }

    /// Decisions taken for `reason` since the agent started.
    pub fn get(&self, reason: Reason) -> u64 {
        self.0[reason.index()]
    }
}

/// One side effect, in the order an [`Outcome`] lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Start the local connector. If the start fails, the actions after it
    /// are skipped: a node that is not serving must not ask the peer to stop.
    StartLocal,
    /// Stop the local connector. A failed stop in a decision is logged and
    /// decided again at the next local look, which still sees it running;
    /// in an order it is the error the caller hears.
    StopLocal,
    /// `POST /failover/stop` to the peer agent, if it answers. Skipped when
    /// an action before it failed: a node that cannot serve must not take
    /// the tunnel from one that might.
    AskPeerToStop,
    /// Wait, bounded, until the local connector's `/ready` shows an edge
    /// connection; on timeout the actions after it are skipped.
    AwaitLocalReady,
    /// `POST /failover/handover` to the peer agent: start your connector, I
    /// am about to stop mine.
    HandOverToPeer,
    /// Wait, bounded, until the peer's connector is ready. On timeout the
    /// actions after it run anyway, with a loud log: a planned stop that
    /// waits forever is no longer planned.
    AwaitPeerReady,
    /// Tunnel per node, before a planned stop: ask the Worker to drain
    /// this node's origin and wait, bounded, until it does and no request
    /// is in flight ([`edge_drain`](super::edge_drain)). A no-op for an
    /// agent without the Worker's admin API configured; never a reason to
    /// skip the stop after it.
    DrainAtEdge,
    /// Tunnel per node, after a start: if this node drained its origin at
    /// the edge, give it back to health (`auto`) once the connector is
    /// ready. A no-op otherwise.
    ResumeAtEdge,
}

/// Start before asking the peer to stop: the tunnel is better served twice
/// for a moment than not at all.
const TAKE_OVER: [Action; 2] = [Action::StartLocal, Action::AskPeerToStop];
const RETRY_START: [Action; 1] = [Action::StartLocal];
/// Make before break: the standby stops once ours is ready, not at its next
/// poll (which left both connectors serving for up to a poll interval).
const FAIL_BACK_SHARED: [Action; 3] = [
    Action::StartLocal,
    Action::AwaitLocalReady,
    Action::AskPeerToStop,
];
/// Make before break: the peer's connector is ready before ours stops.
const HAND_OVER: [Action; 3] = [
    Action::HandOverToPeer,
    Action::AwaitPeerReady,
    Action::StopLocal,
];
const STOP: [Action; 1] = [Action::StopLocal];
/// A planned stop with its own tunnel: the edge stops sending first, so no
/// request meets a connector on its way down.
const DRAIN_PER_NODE: [Action; 2] = [Action::DrainAtEdge, Action::StopLocal];
/// Serving again, the edge is told so once the connector is ready.
const FAIL_BACK_PER_NODE: [Action; 2] = [Action::StartLocal, Action::ResumeAtEdge];

impl Decision {
    /// The side effects of a decision in a topology.
    pub fn actions(self, topology: Topology) -> &'static [Action] {
        let shared = topology == Topology::SharedTunnel;
        match self {
            Decision::Hold => &[],
            Decision::TakeOver => &TAKE_OVER,
            Decision::StandDown => &STOP,
            Decision::FailBack if shared => &FAIL_BACK_SHARED,
            Decision::FailBack => &FAIL_BACK_PER_NODE,
            Decision::Drain | Decision::Withdraw if shared => &HAND_OVER,
            Decision::Drain => &DRAIN_PER_NODE,
            // Unplanned: the node cannot serve now (its app is down, its
            // uplink gone), so nothing is gained by waiting for the edge.
            Decision::Withdraw => &STOP,
        }
    }

    /// The spelling in the agent's `decision ...` log lines, `/health` and
    /// systemd's `STATUS=`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Hold => "hold",
            Decision::TakeOver => "take-over",
            Decision::StandDown => "stand-down",
            Decision::FailBack => "fail-back",
            Decision::Drain => "drain",
            Decision::Withdraw => "withdraw",
        }
    }
}

/// A decision, the evidence it rests on (the agent renders it for its log)
/// and the side effects to carry out, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// What to do; [`Decision::Hold`] for most observations.
    pub decision: Decision,
    /// Why, typed: what `/health` and `/metrics` count.
    pub reason: Reason,
    /// The facts it rests on: the agent's log line and `/health`'s `why`.
    pub evidence: Evidence,
    /// What the agent runs, in order; empty for a hold. Not always
    /// `decision.actions(topology)`: a retried take-over only starts.
    pub actions: &'static [Action],
}

impl Outcome {
    /// A decision with the actions its topology gives it
    /// ([`Decision::actions`]).
    pub fn new(decision: Decision, reason: Reason, topology: Topology, evidence: Evidence) -> Self {
        Outcome {
            decision,
            reason,
            evidence,
            actions: decision.actions(topology),
        }
    }

    /// Nothing to carry out; `evidence` says what was seen, and the agent
    /// logs it only when it differs from the last.
    pub fn hold(evidence: Evidence) -> Self {
        Outcome {
            decision: Decision::Hold,
            reason: Reason::Steady,
            evidence,
            actions: &[],
        }
    }

    /// A repeated take-over within one episode: the peer was asked to stand
    /// down already, so only the local start is tried again.
    pub fn retry_start(decision: Decision, reason: Reason, evidence: Evidence) -> Self {
        Outcome {
            decision,
            reason,
            evidence,
            actions: &RETRY_START,
        }
    }

    /// Whether there is nothing to carry out.
    pub fn is_hold(&self) -> bool {
        self.decision == Decision::Hold
    }
}
