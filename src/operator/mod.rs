//! The operator module: a second Wasm module (build/operator_bg.wasm, this
//! crate built with `--features operator`) holding what only operators
//! use, so that the module every isolate instantiates to serve requests
//! (build/index_bg.wasm) does not carry it. src/js/entry.mjs instantiates
//! it on first use only: in the global checker's Durable Object, and in an
//! isolate the first time someone opens the status page as HTML or text.
//!
//! - The global checker (opt-in): a Durable Object, `HealthChecker`, probes
//!   every origin on an alarm every HEALTH_INTERVAL_MS with HEALTH_RISE /
//!   HEALTH_FALL thresholds, from one place for the whole world. Isolates
//!   consult it at most once per interval, in the background, so no request
//!   ever waits on it (their side is src/checker.rs); a Cron Trigger pokes
//!   it so the alarm chain never dies. It is also the one writer of events:
//!   on each flip of its verdicts it records `origin.down` / `origin.up`
//!   (and `all.down` / `all.up`), keeps the last 500, and sends them to the
//!   `NOTIFY` receivers through a flap guard and an outbox in its storage,
//!   from its alarm, with retries; and the one writer of operators'
//!   overrides. The decisions are `failover_core::edge::checker`'s and
//!   `failover_core::edge::overrides`'; this is the shell.
//! - The status page's HTML and text, rendered from the JSON document the
//!   request path builds (`failover_core::edge::report::{page, text}`).
//!
//! Layout:
//! - [`probes`]: the checker's state (its config and the pure machine) and
//!   the probes the machine asks for.
//! - [`storage`]: the machine's rows, read back and written.
//! - [`overrides`]: the overrides' store and the `/overrides` paths.
//! - [`deliver`]: the outbox's POSTs (src/js/notify.mjs signs and sends).
//! - [`object`]: the Durable Object itself: its `fetch` and `alarm`.
//! - [`render`]: the status page's renderers, exported to JS.

mod deliver;
mod object;
mod overrides;
mod probes;
mod render;
mod storage;
