//! Pure decision logic for tunnel-failover: no I/O, no clock, no async.
//! Callers pass observations with timestamps (milliseconds on any clock) and
//! carry out the answers.
//!
//! Layout:
//! - [`streak`]: the rise/fall hysteresis every health judgement uses.
//! - [`secret`]: constant-time bearer-token checks (Worker and agent).
//! - Worker side, in the order a request meets them: [`config`] (the
//!   `[vars]`, validated), [`target`] (the only way an upstream URL is
//!   built), [`replay`] (whether a request may go to another origin),
//!   [`classify`] (what counts as a failed attempt), [`attempts`] (one
//!   request's walk over the origins), [`health`] (the isolate's origin
//!   health map), [`shared`] (verdicts shared through the colo cache and the
//!   global checker), [`report`] (log lines and the status document).
//! - Worker steering: [`steering`] (`STEERING`: the attempt order by policy,
//!   weight and hash key), [`affinity`] (the `__tf_affinity` cookie),
//!   [`expect`] (which probe statuses mean healthy), [`det_math`] (the
//!   logarithm JS reproduces bit for bit).
//! - Agent side: [`node`] (standby takeover, stand-down, primary fail-back,
//!   the maintenance flag).

pub mod affinity;
pub mod attempts;
pub mod budget;
pub mod classify;
pub mod config;
pub mod det_math;
pub mod expect;
pub mod health;
pub mod node;
pub mod replay;
pub mod report;
pub mod route;
pub mod secret;
pub mod shared;
pub mod steering;
pub mod streak;
pub mod target;
