//! Colo-wide health through the Cache API (`caches.default`): when this
//! isolate flips an origin, it writes the verdict under a synthetic key
//! (`shared::colo_key`: the deployment's own, never another Worker's) with
//! a short TTL; every isolate of the location reads those keys (at most every
//! 250 ms, before choosing an origin), so one discovery of a dead primary
//! costs one client a timeout per location instead of one per isolate.
//! Only works on a custom domain (the Cache API is a no-op on workers.dev).

use std::rc::Rc;
use std::time::Duration;

use failover_core::edge::report;
use failover_core::edge::shared::{SharedVerdict, Source};
use futures_util::future::join_all;
use worker::{Cache, Context, Headers, Response};

use crate::isolate::Isolate;
use crate::{clock, log};

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
    let cache = Cache::default();
    let keys = isolate.colo_keys();
    let reads = keys.iter().map(|key| read(&cache, key));
    let verdicts = join_all(reads).await;
    let max_age = max_age(isolate);
    for (origin, verdict) in verdicts.into_iter().enumerate() {
        if let Some(verdict) = verdict {
            isolate.adopt(origin, verdict, Source::Colo, max_age);
        }
    }
}

async fn read(cache: &Cache, key: &str) -> Option<SharedVerdict> {
    let mut res = cache.get(key, true).await.ok()??;
    let text = res.text().await.ok()?;
    SharedVerdict::decode(&text)
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
    let headers = Headers::new();
    let ttl_s = failover_core::edge::time::millis(max_age(isolate))
        .div_ceil(1000)
        .max(1);
    if headers
        .set("cache-control", &format!("max-age={ttl_s}"))
        .is_err()
    {
        return;
    }
    let Ok(res) = Response::ok(verdict.encode()).map(|r| r.with_headers(headers)) else {
        return;
    };
    if let Err(e) = Cache::default().put(key.as_str(), res).await {
        log::line(&report::shared_error("colo write", &e.to_string()));
    }
}
