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

/// One side effect, in the order a [`Decision`] lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    StartLocal,
    StopLocal,
    /// `POST /failover/stop` to the peer agent, if it answers.
    AskPeerToStop,
}

impl Decision {
    /// Start before asking the peer to stop: the tunnel is better served
    /// twice for a moment than not at all.
    pub fn actions(self) -> &'static [Action] {
        match self {
            Decision::Hold => &[],
            Decision::TakeOver => &[Action::StartLocal, Action::AskPeerToStop],
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

/// A decision and the one-line reason the agent logs with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub decision: Decision,
    pub why: String,
}

impl Outcome {
    pub fn hold(why: impl Into<String>) -> Self {
        Outcome {
            decision: Decision::Hold,
            why: why.into(),
        }
    }

    pub fn is_hold(&self) -> bool {
        self.decision == Decision::Hold
    }
}
