//! Global health (opt-in): a Durable Object, `HealthChecker`, probes every
//! origin on an alarm every HEALTH_INTERVAL_MS with HEALTH_RISE / HEALTH_FALL
//! thresholds, from one place for the whole world. Isolates consult it at
//! most once per interval, in the background (`ctx.wait_until`), so no
//! request ever waits on it; if it is unreachable they go on with their own
//! map. A Cron Trigger pokes it so the alarm chain never dies.
//!
//! On when the `HEALTH_CHECKER` Durable Object binding exists.
//!
//! It is also the one writer of events: on each flip of its verdicts it
//! records `origin.down` / `origin.up` (and `all.down` / `all.up`), keeps
//! the last 500, and sends them to the `NOTIFY` receivers through a flap
//! guard and an outbox in its storage, from its alarm, with retries. The
//! decisions are `failover_core::edge::checker`'s; this is the shell.
//!
//! Layout, the isolate's side first:
//! - [`consult`]: what an isolate asks of the checker (its verdicts, its
//!   events), what it tells it (an origin failing on live traffic), and
//!   the cron's poke.
//! - [`probes`]: the checker's state (its config and the pure machine) and
//!   the probes the machine asks for.
//! - [`storage`]: the machine's rows, read back and written.
//! - [`deliver`]: the outbox's POSTs (src/js/notify.mjs signs and sends).
//! - [`object`]: the Durable Object itself: its `fetch` and `alarm`.

mod consult;
mod deliver;
mod object;
mod probes;
mod storage;

pub use consult::{configured, consult_if_due, keep_alive, recent_events, report, report_failure};
