//! Global health (opt-in): a Durable Object, `HealthChecker`, probes every
//! origin on an alarm every HEALTH_INTERVAL_MS with HEALTH_RISE / HEALTH_FALL
//! thresholds, from one place for the whole world. Isolates consult it at
//! most once per interval, in the background (`ctx.wait_until`), so no
//! request ever waits on it; if it is unreachable they go on with their own
//! map. A Cron Trigger pokes it so the alarm chain never dies.
//!
//! On when the `HEALTH_CHECKER` Durable Object binding exists.
//!
//! Layout, the isolate's side first:
//! - [`consult`]: what an isolate asks of the checker (its verdicts), and
//!   the cron's poke.
//! - [`probes`]: the checker's own state (its config and health map) and
//!   one round of probes.
//! - [`object`]: the Durable Object itself: its `fetch` and `alarm`.

mod consult;
mod object;
mod probes;

pub use consult::{configured, consult_if_due, keep_alive};
