//! The edge Worker: a thin shell around `failover-core`, on wasm-bindgen
//! (the request path) and workers-rs (the operator module).
//!
//! Two Wasm modules come out of this crate (scripts/build-worker.sh):
//! - **the request path** (build/index_bg.wasm, the default features),
//!   which every isolate instantiates at load;
//! - **the operator module** (build/operator_bg.wasm, `--features
//!   operator`): the global checker's Durable Object and the status page's
//!   renderers, which src/js/entry.mjs instantiates on first use only. A
//!   request never waits for it, and its code is no weight on the module
//!   every request runs in. Each is its own Wasm instance with its own
//!   memory and its own panic recovery; they meet only in JS.
//!
//! Layout, leaves first (a module uses only those above it). Both modules:
//! - [`js_bridge`] (every JS import), [`clock`], [`log`], [`config`] (the
//!   config from `[vars]` and secrets).
//! - [`access`]: Cloudflare Access service tokens on attempts and probes.
//! - [`forward`]: one attempt against one origin, with its timeout; one
//!   health probe.
//!
//! The request path:
//! - [`isolate`]: the config (read once) and the pure
//!   `failover_core::edge::Isolate` (health map, cadences, replay budget,
//!   tokens) in a `RefCell`; every health change through `change_health`,
//!   which revokes the fast path's lease when routing moved.
//! - [`guesses`]: the brake on wrong status and admin tokens.
//! - [`status`]: the token-protected status endpoint (the JSON here; the
//!   page and the text rendered by the operator module).
//! - [`body`]: whether the request body is buffered for a replay or streamed once.
//! - [`respond`]: the headers added to a proxied response, and our own errors.
//! - [`fallback`]: the `FALLBACK` page when no origin answered.
//! - [`probe`]: background health probes of down origins (`ctx.wait_until`).
//! - [`colo`]: verdicts shared with the location's other isolates (Cache API).
//! - [`consult`]: the global checker's answer (verdicts and overrides)
//!   through the location's cache, asked for by one isolate per location
//!   and interval; [`checker`]: the isolate's side of the checker (asking,
//!   reporting a failure, its events, the cron's poke), each request
//!   through [`checker_call`].
//! - [`periodic`]: the above when due, beside a request, never
//!   before it while some origin is up.
//! - [`admin`]: the admin API under the status path (overrides at runtime).
//! - [`proxy`]: the full path, the whole request the slow and complete way.
//! - [`warm`]: runs the full path's pure code once per instance, so the
//!   first failover is not also the first run of that code.
//! - [`fast`]: what src/js/entry.mjs's fast path runs on (the instance's
//!   config once, then leases: which origin, until when), and the way back
//!   into [`proxy`] when its attempt fails.
//! - [`entry`]: the `fetch` and `scheduled` events; [`runtime`]: the
//!   bindings, `ctx.waitUntil` and the instance's start, without the
//!   workers-rs crate (its start function alone was 2.6 KB of this
//!   module's gzipped Wasm).
//!
//! The operator module: [`operator`] (its own layout there).
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
//!   (route), `credentials.mjs` (`secret::carries_any`), `sites.mjs`
//!   (`HostTable::site_for`). `silence.mjs` is
//!   a rule with no Rust side (every attempt is JS, so both paths ask it),
//!   held to its own table on a simulated clock (tests/silence.test.mjs);
//!   `attempt.mjs` `dropHopByHop` runs on both paths too, its rule
//!   specified in Rust (`hop_by_hop`) and held to the fixture.
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

// Shared by both modules.
mod access;
mod clock;
mod config;
mod forward;
mod js_bridge;
mod log;

// The request path: build/index_bg.wasm, which every isolate instantiates.
#[cfg(not(feature = "operator"))]
mod admin;
#[cfg(not(feature = "operator"))]
mod body;
#[cfg(not(feature = "operator"))]
mod checker;
#[cfg(not(feature = "operator"))]
mod checker_call;
#[cfg(not(feature = "operator"))]
mod colo;
#[cfg(not(feature = "operator"))]
mod consult;
#[cfg(not(feature = "operator"))]
mod entry;
#[cfg(not(feature = "operator"))]
mod fallback;
#[cfg(not(feature = "operator"))]
mod fast;
#[cfg(not(feature = "operator"))]
mod guesses;
#[cfg(not(feature = "operator"))]
mod isolate;
#[cfg(not(feature = "operator"))]
mod periodic;
#[cfg(not(feature = "operator"))]
mod probe;
#[cfg(not(feature = "operator"))]
mod proxy;
#[cfg(not(feature = "operator"))]
mod respond;
#[cfg(not(feature = "operator"))]
mod runtime;
#[cfg(not(feature = "operator"))]
mod status;
#[cfg(not(feature = "operator"))]
mod warm;

// The operator module: build/operator_bg.wasm (`--features operator`),
// instantiated only where an operator's feature is used.
#[cfg(feature = "operator")]
mod operator;

/// Both modules' allocator: talc instead of std's dlmalloc (Cargo.toml).
/// Single-threaded, as every Wasm instance of a Worker is.
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
