//! The answers of the node machine.

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
    /// Primary: our connector is not running and egress is good; serve again.
    FailBack,
    /// The maintenance flag is set and our connector runs: stop it so the
    /// peer takes over.
    Drain,
}

const TAKE_OVER: [Action; 2] = [Action::StartLocal, Action::AskPeerToStop];

/// One side effect, in the order a [`Decision`] lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    StartLocal,
    StopLocal,
    /// `POST /failover/stop` to the peer agent, if it answers. Skipped when
    /// the `StartLocal` before it failed: a node that cannot serve must not
    /// take the tunnel from one that might.
    AskPeerToStop,
}

impl Decision {
    /// Start before asking the peer to stop: the tunnel is better served
    /// twice for a moment than not at all.
    pub fn actions(self) -> &'static [Action] {
        match self {
            Decision::Hold => &[],
            Decision::TakeOver => &TAKE_OVER,
            Decision::StandDown | Decision::Drain => &[Action::StopLocal],
            Decision::FailBack => &[Action::StartLocal],
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Hold => "hold",
            Decision::TakeOver => "take-over",
            Decision::StandDown => "stand-down",
            Decision::FailBack => "fail-back",
            Decision::Drain => "drain",
        }
    }
}

/// A decision, the one-line reason the agent logs with it, and the side
/// effects to carry out. The actions are usually [`Decision::actions`]; a
/// take-over that only retries a failed local start omits asking the peer
/// again (see [`Outcome::retry_start`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub decision: Decision,
    pub why: String,
    pub actions: &'static [Action],
}

impl Outcome {
    pub fn new(decision: Decision, why: impl Into<String>) -> Self {
        Outcome {
            decision,
            why: why.into(),
            actions: decision.actions(),
        }
    }

    pub fn hold(why: impl Into<String>) -> Self {
        Outcome::new(Decision::Hold, why)
    }

    /// A repeated take-over within one episode: the peer was asked to stand
    /// down already, so only the local start is tried again.
    pub fn retry_start(decision: Decision, why: impl Into<String>) -> Self {
        Outcome {
            decision,
            why: why.into(),
            actions: &[Action::StartLocal],
        }
    }

    pub fn is_hold(&self) -> bool {
        self.decision == Decision::Hold
    }
}
