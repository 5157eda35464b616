//! The fast path's Rust half. Most requests need one attempt and nothing
//! else: src/js/entry.mjs asks `fast_plan` (synchronous, no futures) where
//! to send it, makes the attempt in JS, and comes back through
//! `fetch_after` only when it did not succeed. Every decision stays here:
//! the plan refuses (None) whenever the full path has work to do first
//! (a request body, the status endpoint, a due probe, colo read or checker
//! consultation, a broken config, no healthy origin).

use std::cell::Cell;

use failover_core::target::upstream_url;
use worker::wasm_bindgen::prelude::wasm_bindgen;
use worker::wasm_bindgen::JsValue;
use worker::{js_sys, web_sys, Context, Env};

use crate::isolate::{self, Loaded};
use crate::{clock, forward, proxy, status};

thread_local! {
    /// The origin the last plan chose, and when: `fast_plan` hands JS only
    /// the URL, JS asks for the rest right after, with no other Rust call
    /// in between (JS is single-threaded).
    static PLANNED: Cell<(usize, u64)> = const { Cell::new((0, 0)) };
}

/// The upstream URL to try first, or None: take the full path.
#[wasm_bindgen]
pub fn fast_plan(method: &str, url: &str, has_body: bool, env: &Env) -> Option<String> {
    let Loaded::Ready(isolate) = isolate::load(env) else {
        return None;
    };
    let now = clock::now_ms();
    let busy = has_body
        || status::is_status_path(method, url, &isolate.config)
        || (isolate.config.colo_health && isolate.colo_reads.borrow().is_due(now))
        || isolate.global_reads.borrow().is_due(now)
        || isolate.health.borrow().probe_due(now);
    if busy {
        return None;
    }
    let health = isolate.health.borrow();
    let origin = (0..isolate.config.origins.len()).find(|&i| health.is_up(i))?;
    PLANNED.with(|p| p.set((origin, now)));
    // None cannot happen for a configured origin (see failover_core::target).
    upstream_url(&isolate.config.origins.get(origin)?.base, url)
}

/// The origin the last `fast_plan` chose.
#[wasm_bindgen]
pub fn fast_origin() -> usize {
    PLANNED.with(|p| p.get().0)
}

/// What the fast path needs to know once: the attempt timeout, then the
/// origin names in priority order.
#[wasm_bindgen]
pub fn fast_settings(env: &Env) -> js_sys::Array {
    let out = js_sys::Array::new();
    if let Loaded::Ready(isolate) = isolate::load(env) {
        out.push(&JsValue::from_f64(isolate.config.attempt_timeout_ms as f64));
        for origin in &isolate.config.origins {
            out.push(&JsValue::from_str(&origin.name));
        }
    }
    out
}

/// The fast path's attempt got an answer: evidence, as in `proxy`.
#[wasm_bindgen]
pub fn fast_success(origin: usize) {
    if let Some(Loaded::Ready(isolate)) = isolate::current() {
        isolate
            .health
            .borrow_mut()
            .record_success(origin, clock::now_ms());
    }
}

/// The fast path's attempt against `origin` did not succeed; `result` is
/// what `attempt_js` resolved to. The full path takes it from there.
#[wasm_bindgen(wasm_bindgen_futures = worker::wasm_bindgen_futures)]
pub async fn fetch_after(
    req: web_sys::Request,
    env: Env,
    ctx: worker::worker_sys::Context,
    origin: usize,
    result: JsValue,
) -> web_sys::Response {
    let ctx = Context::new(ctx);
    let isolate = match isolate::load(&env) {
        Loaded::Ready(isolate) => isolate,
        Loaded::Broken(problem) => return crate::respond::plain(500, &problem),
    };
    let first = forward::outcome(forward::sent_from_js(result));
    proxy(req, &isolate, &env, &ctx, Some((origin, first))).await
}
