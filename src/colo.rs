//! Colo-wide health through the Cache API (`caches.default`): when this
//! isolate flips an origin, it writes the verdict under a synthetic key
//! (`shared::colo_key`: the deployment's own, never another Worker's) with
//! a short TTL; the location's other isolates read those keys (at most
//! every 250 ms, beside a request, while some origin is down for them or
//! an attempt of theirs waits: `edge::Isolate::colo_read_wanted`), so they
//! route around a dead primary without each finding it out for itself.
//! Only works on a custom domain (the Cache API is a no-op on workers.dev).

use std::rc::Rc;
use std::time::Duration;

use failover_core::edge::report;
use failover_core::edge::shared::{SharedVerdict, Source};
use worker::wasm_bindgen::JsValue;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{js_sys, Context};

use crate::isolate::Isolate;
use crate::{clock, js_bridge, log};

/// How long a shared verdict stays in the cache and is trusted: two probe
/// intervals. By then the isolates that adopted it have probed for themselves.
pub fn max_age(isolate: &Isolate) -> Duration {
    Duration::from_millis(isolate.config.health_interval_ms.saturating_mul(2))
}

/// Reads every origin's colo verdict if the read is due, adopting the fresh
/// ones. Failures to read are ignored: the local map keeps working.
pub async fn refresh(isolate: &Isolate, now_ms: u64) {
    if !isolate.take_colo_read(now_ms) {
        return;
    }
    let keys: js_sys::Array = isolate
        .colo_keys()
        .iter()
        .map(|key| JsValue::from_str(key))
        .collect();
    let Ok(read) = JsFuture::from(js_bridge::colo_read_js(&keys)).await else {
        return;
    };
    let verdicts = js_sys::Array::from(&read);
    let max_age = max_age(isolate);
    for (origin, verdict) in verdicts.iter().enumerate() {
        let verdict = verdict
            .as_string()
            .and_then(|text| SharedVerdict::decode(&text));
        if let Some(verdict) = verdict {
            isolate.adopt(origin, verdict, Source::Colo, max_age);
        }
    }
}

/// Shares what this isolate found about an origin, without delaying the
/// client.
pub fn publish(ctx: &Context, isolate: &Rc<Isolate>, origin: usize) {
    if !isolate.config.colo_health {
        return;
    }
    let isolate = Rc::clone(isolate);
    ctx.wait_until(async move { write(&isolate, origin).await });
}

/// Writes this isolate's verdict on an origin to the cache; for callers
/// already off the request path (probes).
pub async fn write(isolate: &Isolate, origin: usize) {
    if !isolate.config.colo_health {
        return;
    }
    let Some(key) = isolate.colo_key(origin) else {
        return;
    };
    let Some(verdict) = isolate.health().verdict_to_share(origin, clock::now_ms()) else {
        return;
    };
    let ttl_s = failover_core::edge::time::millis(max_age(isolate))
        .div_ceil(1000)
        .max(1);
    let put = js_bridge::colo_write_js(&key, &verdict.encode(), ttl_s as f64);
    // Resolves to null, or the put's error message; never rejects.
    if let Some(message) = JsFuture::from(put).await.ok().and_then(|m| m.as_string()) {
        log::line(&report::shared_error("colo write", &message));
    }
}
