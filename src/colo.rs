//! Colo-wide health through the Cache API (`caches.default`): when this
//! isolate flips an origin, it writes the verdict under a synthetic key
//! (`shared::colo_key`: the deployment's own, never another Worker's) with
//! a short TTL; the location's other isolates read those keys (at most
//! every 250 ms, beside a request, while some origin is down for them or
//! an attempt of theirs waits: `edge::Isolate::colo_read_wanted`), so they
//! route around a dead primary without each finding it out for itself.
//! The same cache holds the location's copy of the global checker's answer
//! (src/consult.rs), read once a second whatever the origins' verdicts
//! (it carries the overrides), in the same crossing when both are due.
//! Only works on a custom domain (the Cache API is a no-op on workers.dev).

use std::rc::Rc;
use std::time::Duration;

use failover_core::edge::report;
use failover_core::edge::shared::{SharedVerdict, Source};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use crate::isolate::Isolate;
use crate::runtime::Context;
use crate::{clock, js_bridge, log};

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

/// Reads every origin's colo verdict if that read is due and wanted
/// (`edge::Isolate::colo_read_wanted`), adopting the fresh ones, and the
/// location's copy of the checker's answer if that is due (on its own
/// cadence: overrides ride in it), in one crossing when both are. Failures
/// to read are ignored: the local map keeps working.
pub async fn refresh(isolate: &Isolate, now_ms: u64) -> SnapshotRead {
    let verdicts = isolate.take_colo_read(now_ms);
    // Once a second (never without a checker): the location's copy.
    let snapshot = match isolate.take_snapshot_read(now_ms) {
        true => isolate.snapshot_keys(),
        false => None,
    };
    if !verdicts && snapshot.is_none() {
        return SnapshotRead::NotRead;
    }
    let mut keys = js_sys::Array::new();
    if verdicts {
        for key in isolate.colo_keys() {
            keys.push(&JsValue::from_str(&key));
        }
    }
    let origins = keys.length();
    if let Some((key, _)) = &snapshot {
        keys.push(&JsValue::from_str(key));
    }
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
        Some(_) => SnapshotRead::Read(keys.get(origins).as_string()),
        None => SnapshotRead::NotRead,
    }
}

/// One entry's value (what [`put`] stored), or None.
pub async fn read(key: &str) -> Option<String> {
    let keys = js_sys::Array::of1(&JsValue::from_str(key));
    let read = JsFuture::from(js_bridge::colo_read_js(&keys)).await.ok()?;
    js_sys::Array::from(&read).get(0).as_string()
}

/// Stores `value` under `key` in the location's cache for `ttl` (whole
/// seconds, at least one); a failure is logged, not raised. The put is
/// src/js/colo.mjs's: workers-rs's Cache, Response and Headers cost the
/// Worker's Wasm more than the crossing does.
pub async fn put(key: &str, value: &str, ttl: Duration) {
    let ttl_s = failover_core::edge::consult::max_age_s(ttl);
    let put = js_bridge::colo_write_js(key, value, ttl_s as f64);
    // Resolves to null, or the put's error message; never rejects.
    if let Some(message) = JsFuture::from(put).await.ok().and_then(|m| m.as_string()) {
        log::line(&report::shared_error("colo write", &message));
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
