//! The node agent's decisions: which of the two nodes runs the Tunnel
//! connector. Clock-free: every input carries its own timestamp in ms and
//! every answer is an [`Outcome`] the agent carries out and logs.
//!
//! Layout:
//! - [`timing`]: intervals and thresholds, with the documented defaults.
//! - [`readiness`]: what one look at the peer's connector found ([`PeerView`]).
//! - [`peer_watch`]: the standby's clock: misses lead to take-over, a ready
//!   peer to stand-down.
//! - [`failback`]: the primary's clock: good egress checks lead to fail-back,
//!   damped so a flapping link cannot hand the tunnel back and forth.
//! - [`maintenance`]: the operator's flag; a flagged node never serves.
//! - [`decision`]: [`Decision`], [`Action`] and [`Outcome`], the answers.
//! - [`machine`]: [`Node`], which combines the above for one role.

pub mod decision;
pub mod failback;
pub mod machine;
pub mod maintenance;
pub mod peer_watch;
pub mod readiness;
pub mod timing;

#[cfg(test)]
mod simulation;

pub use decision::{Action, Decision, Outcome};
pub use machine::{Node, Role, Snapshot};
pub use readiness::{PeerView, Readiness};
pub use timing::Timing;
