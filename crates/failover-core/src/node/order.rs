//! [`Order`]: what the peer agent or an operator asks of this node through
//! the agent's API, beside the decisions the node takes itself. An order
//! goes through [`Node::order`](super::Node::order) like an observation
//! does: the machine says whether it is taken and which actions carry it
//! out, and the agent's one executor runs them.

use super::decision::Action;

/// A `POST /failover/...` the node obeys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// An operator: start the connector (overrides the maintenance flag
    /// until the flag next changes).
    Start,
    /// The peer taking over, or an operator: stop it.
    Stop,
    /// The peer is about to stop its connector: start ours and keep it.
    Handover,
}

const START: [Action; 1] = [Action::StartLocal];
const STOP: [Action; 1] = [Action::StopLocal];

impl Order {
    /// Every order, so that the agent finds the one a request path carries.
    pub const ALL: [Order; 3] = [Order::Start, Order::Stop, Order::Handover];

    /// The verb of its `POST /failover/...` path, as the agent's log lines
    /// spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Start => "start",
            Order::Stop => "stop",
            Order::Handover => "handover",
        }
    }

    /// The side effects that carry the order out.
    pub fn actions(self) -> &'static [Action] {
        match self {
            Order::Start | Order::Handover => &START,
            Order::Stop => &STOP,
        }
    }

    /// Whether the connector runs once the order is carried out.
    pub fn leaves_running(self) -> bool {
        self != Order::Stop
    }
}
