//! Colo-wide health through the Cache API (`caches.default`): when this
//! isolate flips an origin, it writes the verdict under a synthetic key
//! (`shared::colo_key`: the deployment's own, never another Worker's) with
//! a short TTL; every isolate of the location reads those keys (at most every
//! 250 ms, before choosing an origin), so one discovery of a dead primary
//! costs one client a timeout per location instead of one per isolate.
//! The same cache holds the location's copy of the global checker's answer
//! (src/consult.rs), read with the verdicts once a second.
//! Only works on a custom domain (the Cache API is a no-op on workers.dev).

use std::rc::Rc;
use std::time::Duration;

use failover_core::edge::report;
use failover_core::edge::shared::{SharedVerdict, Source};
use worker::wasm_bindgen::JsValue;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{js_sys, Cache, Context, Headers, Response};

use crate::isolate::Isolate;
use crate::{clock, js_bridge, log};

/// The header a colo entry carries its value in (src/js/colo.mjs reads it):
/// a verdict, the checker's answer, or a claim on asking it.
const VERDICT_HEADER: &str = "x-tunnel-failover-verdict";

/// How long a shared verdict stays in the cache and is trusted: two probe
/// intervals. By then the isolates that adopted it have probed for themselves.
pub fn max_age(isolate: &Isolate) -> Duration {
    Duration::from_millis(isolate.config.health_interval_ms.saturating_mul(2))
}

/// What a colo read found of the location's copy of the checker's answer
/// (src/consult.rs), when it was due too.
pub enum SnapshotRead {
    /// Not due, or no checker.
    NotRead,
    /// The entry's value, None when there is none.
    Read(Option<String>),
}

/// Reads every origin's colo verdict if the read is due, adopting the fresh
/// ones, and the location's copy of the checker's answer if that is due
/// too, in the same crossing. Failures to read are ignored: the local map
/// keeps working.
pub async fn refresh(isolate: &Isolate, now_ms: u64) -> SnapshotRead {
    if !isolate.take_colo_read(now_ms) {
        return SnapshotRead::NotRead;
    }
    let mut keys: js_sys::Array = isolate
        .colo_keys()
        .iter()
        .map(|key| JsValue::from_str(key))
        .collect();
    let origins = keys.length();
    // Once a second (never without a checker): the location's copy too.
    let snapshot = match isolate.take_snapshot_read(now_ms) {
        true => isolate.snapshot_keys(),
        false => None,
    };
    let snapshot = match snapshot {
        Some((key, _)) => {
            keys.push(&JsValue::from_str(&key));
            true
        }
        None => false,
    };
    let Ok(read) = JsFuture::from(js_bridge::colo_read_js(&keys)).await else {
        return SnapshotRead::NotRead;
    };
    keys = js_sys::Array::from(&read);
    let max_age = max_age(isolate);
    for (origin, verdict) in keys.iter().take(origins as usize).enumerate() {
        let verdict = verdict
            .as_string()
            .and_then(|text| SharedVerdict::decode(&text));
        if let Some(verdict) = verdict {
            isolate.adopt(origin, verdict, Source::Colo, max_age);
        }
    }
    match snapshot {
        true => SnapshotRead::Read(keys.get(origins).as_string()),
        false => SnapshotRead::NotRead,
    }
}

/// One entry's value (what [`put`] stored), or None.
pub async fn read(key: &str) -> Option<String> {
    let keys = js_sys::Array::of1(&JsValue::from_str(key));
    let read = JsFuture::from(js_bridge::colo_read_js(&keys)).await.ok()?;
    js_sys::Array::from(&read).get(0).as_string()
}

/// Stores `value` under `key` in the location's cache for `ttl` (whole
/// seconds, at least one); a failure is logged, not raised.
pub async fn put(key: &str, value: &str, ttl: Duration) {
    let headers = Headers::new();
    let ttl_s = failover_core::edge::consult::max_age_s(ttl);
    // The value rides in a header (what colo_read_js reads, no body
    // stream) and in the body (for a person looking at the entry).
    if headers
        .set("cache-control", &format!("max-age={ttl_s}"))
        .and_then(|()| headers.set(VERDICT_HEADER, value))
        .is_err()
    {
        return;
    }
    let Ok(res) = Response::ok(value).map(|r| r.with_headers(headers)) else {
        return;
    };
    if let Err(e) = Cache::default().put(key, res).await {
        log::line(&report::shared_error("colo write", &e.to_string()));
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
    put(&key, &verdict.encode(), max_age(isolate)).await;
}
