//! The node agent's decisions: which of the two nodes runs the Tunnel
//! connector (shared tunnel), or whether this node's own connector should
//! run (tunnel per node). Clock-free: every input carries its own timestamp in ms and
//! every answer is an [`Outcome`] the agent carries out and logs; the
//! machine states facts ([`Evidence`]), never prose.
//!
//! Layout:
//! - [`timing`]: intervals and thresholds, with the documented defaults.
//! - [`topology`]: [`Topology`], shared tunnel or tunnel per node.
//! - [`readiness`]: what one look at the peer's connector found ([`PeerView`]).
//! - [`peer_watch`]: the standby's clock: misses lead to take-over, a ready
//!   peer to stand-down.
//! - [`failback`]: the primary's clock: good egress checks lead to fail-back,
//!   damped so a flapping link cannot hand the tunnel back and forth.
//! - [`maintenance`]: the operator's flag; a flagged node never serves.
//! - [`app`]: the node's own app, watched through its health URL.
//! - [`start_backoff`]: a connector that exits right after each start is
//!   started again after a growing pause, not at every look.
//! - [`schedule`]: when each check is next due; the driver sleeps until then.
//! - [`decision`]: [`Decision`], [`Action`] and [`Outcome`], the answers.
//! - [`edge_drain`]: the wait between draining this node at the Worker and
//!   stopping its connector (tunnel per node), and when to give it back.
//! - [`evidence`]: [`Evidence`], the facts an answer rests on, as values the
//!   agent renders (and de-duplicates) for its log.
//! - [`order`]: [`Order`], what the peer or an operator asks through the
//!   agent's API; the machine answers it with actions too.
//! - [`machine`]: [`Node`], which combines the above for one role.

pub mod app;
pub mod decision;
pub mod edge_drain;
pub mod evidence;
pub mod failback;
pub mod machine;
pub mod maintenance;
pub mod order;
pub mod peer_watch;
pub mod readiness;
pub mod schedule;
pub mod start_backoff;
pub mod timing;
pub mod topology;

#[cfg(test)]
mod per_node_simulation;
#[cfg(test)]
mod simulation;

pub use app::{AppState, AppTiming};
pub use decision::{Action, Decision, Outcome, Reason, ReasonCounts};
pub use evidence::Evidence;
pub use machine::{HandoverRefused, Node, Role, Snapshot};
pub use order::Order;
pub use readiness::{PeerView, Readiness};
pub use schedule::Check;
pub use timing::Timing;
pub use topology::Topology;
