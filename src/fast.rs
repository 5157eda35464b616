//! The fast path's Rust half. Most requests need one attempt and nothing
//! else, and what that attempt is changes only when the health map does or
//! when some periodic work falls due. So Rust grants src/js/entry.mjs a
//! *lease* on its decision: which origin, until when. While the lease holds,
//! JS sends requests without entering Wasm at all; any change to the health
//! map revokes it (`Isolate::health_mut`), and the full path (`fetch`,
//! `fetch_after`) does all other work: bodies, the status endpoint, probes,
//! shared-health reads, a failed attempt. `make bench` measured the two Wasm
//! calls per request this replaces at about 3% of throughput.

use worker::wasm_bindgen::prelude::wasm_bindgen;
use worker::wasm_bindgen::JsValue;
use worker::{js_sys, web_sys, Context, Env};

use crate::isolate::{self, Loaded};
use crate::{clock, forward, proxy};

#[wasm_bindgen(module = "/src/js/lease.mjs")]
extern "C" {
    /// Ends the current lease: the next request asks `fast_lease` again.
    pub fn revoke_lease();
    /// When the fast path last got an answer from `origin` (ms, 0 if never):
    /// evidence that the health map pulls before adopting a shared verdict.
    pub fn fast_evidence(origin: usize) -> f64;
}

/// The lease, or None when the full path has work to do first (a probe,
/// colo read or checker consultation is due, a broken config, no healthy
/// origin). As an array: origin index, valid until (ms), the origin's base
/// URL, its name, the attempt timeout (ms), and the status path if the
/// status endpoint is on.
#[wasm_bindgen]
pub fn fast_lease(env: &Env) -> Option<js_sys::Array> {
    let Loaded::Ready(isolate) = isolate::load(env) else {
        return None;
    };
    let config = &isolate.config;
    let now = clock::now_ms();
    let colo_due = config
        .colo_health
        .then(|| isolate.colo_reads.borrow().next_due_ms());
    let global_due = Some(isolate.global_reads.borrow().next_due_ms());
    let health = isolate.health();
    let until = [colo_due, global_due, health.next_probe_ms()]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(u64::MAX);
    if until <= now {
        return None;
    }
    let index = (0..config.origins.len()).find(|&i| health.is_up(i))?;
    let origin = config.origins.get(index)?;
    let status_path = match config.status_token {
        Some(_) => JsValue::from_str(&config.status_path),
        None => JsValue::UNDEFINED,
    };
    let lease = js_sys::Array::of5(
        &JsValue::from_f64(index as f64),
        &JsValue::from_f64(until as f64),
        &JsValue::from_str(&origin.base),
        &JsValue::from_str(&origin.name),
        &JsValue::from_f64(config.attempt_timeout_ms as f64),
    );
    lease.push(&status_path);
    Some(lease)
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
