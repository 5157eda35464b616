//! The edge Worker: a thin workers-rs shell around `failover-core`.
//!
//! Layout, leaves first (a module uses only those above it):
//! - [`js_bridge`] (every JS import), [`clock`], [`log`].
//! - [`isolate`]: the config (read once from `[vars]`) and the pure
//!   `failover_core::edge::Isolate` (health map, cadences, replay budget,
//!   tokens) in a `RefCell`; every health change through `change_health`,
//!   which revokes the fast path's lease when routing moved.
//! - [`status`]: the token-protected status endpoint.
//! - [`access`]: Cloudflare Access service tokens on attempts and probes.
//! - [`body`]: whether the request body is buffered for a replay or streamed once.
//! - [`forward`]: one attempt against one origin, with its timeout.
//! - [`respond`]: the headers added to a proxied response, and our own errors.
//! - [`fallback`]: the `FALLBACK` page when no origin answered.
//! - [`probe`]: background health probes of down origins (`ctx.wait_until`).
//! - [`colo`]: verdicts shared with the location's other isolates (Cache API).
//! - [`consult`]: the global checker's answer (verdicts and overrides)
//!   through the location's cache, asked for by one isolate per location
//!   and interval.
//! - [`overrides`]: the checker's store of operators' overrides;
//!   [`checker`]: the opt-in global checker (a Durable Object) and its cron.
//! - [`periodic`]: the above when due, beside a request, never
//!   before it while some origin is up.
//! - [`admin`]: the admin API under the status path (overrides at runtime).
//! - [`proxy`]: the full path, the whole request the slow and complete way.
//! - [`warm`]: runs the full path's pure code once per instance, so the
//!   first failover is not also the first run of that code.
//! - [`fast`]: what src/js/entry.mjs's fast path runs on (the instance's
//!   config once, then leases: which origin, until when), and the way back
//!   into [`proxy`] when its attempt fails.
//!
//! The seam between Rust and JS, one rule:
//! - **Decisions are Rust**, in `failover_core::edge`: anything a test
//!   would put in a table (which origin, what counts as a failure, may this
//!   be replayed, which cookie pins, when is work due). A decision gets a JS
//!   twin only where the fast path must take it without entering Wasm, and
//!   then the twin names its fixture in its header and is held to it: Rust
//!   writes or reads the same rows (tests/fixtures/fast-path.json,
//!   steering.json, route.json) and both languages' tests check them.
//!   Today's twins: `rules.mjs` (classify), `lease.mjs` `upstreamUrl`
//!   (target), `steer.mjs` (steering, affinity, cookies), `route.mjs`
//!   (route). `silence.mjs` is the one rule with no Rust side (every
//!   attempt is JS, so both paths ask it), held to its own table on a
//!   simulated clock (tests/silence.test.mjs).
//! - **Plumbing on JS objects is JS**: `fetch`, re-wrapping a `Response`,
//!   copying `Headers`, timers, the lease's storage. Each such function is
//!   declared once, in [`js_bridge`], and shared by both paths, so the
//!   fast path and the full path do the same thing by construction.
//! - What crosses the seam is plain data with named fields on both sides
//!   (the instance's config and the lease in src/fast.rs and lease.mjs);
//!   static data crosses once per Wasm instance, not per request.
//!
//! Nothing here may panic: a panic re-initialises the Wasm instance and wipes
//! the health map, so every fallible call is handled.
#![cfg(target_arch = "wasm32")]

mod access;
mod admin;
mod body;
mod checker;
mod clock;
mod colo;
mod consult;
mod fallback;
mod fast;
mod forward;
mod isolate;
mod js_bridge;
mod log;
mod overrides;
mod periodic;
mod probe;
mod proxy;
mod respond;
mod status;
mod warm;

use worker::{event, web_sys, Context, Env, ScheduleContext, ScheduledEvent};

use crate::isolate::Loaded;
use crate::proxy::proxy;

#[event(fetch)]
async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> worker::Result<web_sys::Response> {
    let isolate = match isolate::load(&env) {
        Loaded::Ready(isolate) => isolate,
        Loaded::Broken(problem) => return Ok(respond::plain(500, &problem)),
    };
    #[cfg(feature = "panic-test")]
    panic_on_request(&req);
    Ok(proxy(req, &isolate, &env, &ctx, None, None, None).await)
}

/// Test builds only: the panic a bug would cause, on demand.
#[cfg(feature = "panic-test")]
#[allow(clippy::panic)]
fn panic_on_request(req: &web_sys::Request) {
    if req.url().ends_with("/__test/panic") {
        panic!("panic-test: /__test/panic");
    }
}

/// The Cron Trigger keeps the global checker's alarm chain alive.
#[event(scheduled)]
async fn scheduled(_event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    checker::keep_alive(&env).await;
}
