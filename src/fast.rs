//! The fast path's Rust half. Most requests need one attempt and nothing
//! else, and what that attempt is changes only when the health map does or
//! when some periodic work falls due. So Rust grants src/js/entry.mjs a
//! *lease* on its decision: which origin, until when. While the lease holds,
//! JS sends requests without entering Wasm at all; any change to the health
//! map's routing revokes it (`Isolate::change_health`), and the full path (`fetch`,
//! `fetch_after`) does all other work: bodies, the status endpoint, probes,
//! shared-health reads, a failed attempt. `make bench` measured the two Wasm
//! calls per request this replaces at about 3% of throughput.

use failover_core::edge::affinity;
use failover_core::edge::affinity::AffinityMode;
use failover_core::edge::config::{Origin, WorkerConfig};
use failover_core::edge::health::HealthMap;
use failover_core::edge::steering::Policy;
use worker::wasm_bindgen::prelude::wasm_bindgen;
use worker::wasm_bindgen::JsValue;
use worker::{js_sys, web_sys, Context, Env};

use crate::isolate::{self, Loaded};
use crate::proxy::proxy;
use crate::{clock, forward};

/// The lease, or None when the full path has work to do first (a probe,
/// colo read or checker consultation is due, a broken config, no healthy
/// origin). An object with the fields of `lease` in src/js/lease.mjs.
#[wasm_bindgen]
pub fn fast_lease(env: &Env) -> Option<js_sys::Object> {
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
    let lease = js_sys::Object::new();
    let fields: [(&str, JsValue); 9] = [
        ("origin", JsValue::from_f64(index as f64)),
        ("until", JsValue::from_f64(until as f64)),
        ("base", JsValue::from_str(&origin.base)),
        ("name", JsValue::from_str(&origin.name)),
        (
            "timeoutMs",
            JsValue::from_f64(config.attempt_timeout_ms as f64),
        ),
        ("statusPath", status_path),
        ("generation", JsValue::from_f64(isolate.generation() as f64)),
        ("steer", steering(config, &health)),
        ("silenceMs", JsValue::from_f64(config.silence_ms as f64)),
    ];
    for (name, value) in fields {
        // Setting a property on a fresh plain object cannot fail.
        let _ = js_sys::Reflect::set(&lease, &JsValue::from_str(name), &value);
    }
    Some(lease)
}

/// What the fast path needs to route each request itself (src/js/route.mjs),
/// or undefined under plain failover steering with no affinity and no
/// Access token: then every request goes to `origin`, as before.
fn steering(config: &WorkerConfig, health: &HealthMap) -> JsValue {
    let plain = config.steering == Policy::Failover
        && config.affinity.mode == AffinityMode::Off
        && config.origins.iter().all(|o| o.access.is_none());
    if plain {
        return JsValue::UNDEFINED;
    }
    let strings = |f: &dyn Fn(&Origin) -> String| -> js_sys::Array {
        config
            .origins
            .iter()
            .map(|o| JsValue::from_str(&f(o)))
            .collect()
    };
    let healthy: js_sys::Array = (0..config.origins.len())
        .map(|i| JsValue::from_bool(health.is_up(i)))
        .collect();
    let weights: js_sys::Array = config
        .origins
        .iter()
        .map(|o| JsValue::from_f64(f64::from(o.weight)))
        .collect();
    let access: js_sys::Array = config
        .origins
        .iter()
        .map(|o| match &o.access {
            Some(token) => {
                let pair = js_sys::Object::new();
                let _ = js_sys::Reflect::set(&pair, &"id".into(), &token.client_id.as_str().into());
                let _ = js_sys::Reflect::set(
                    &pair,
                    &"secret".into(),
                    &token.client_secret.as_str().into(),
                );
                pair.into()
            }
            None => JsValue::NULL,
        })
        .collect();
    let affinity_on = config.affinity.mode == AffinityMode::Cookie;
    let tokens = if affinity_on {
        affinity::tokens(&config.origins)
            .iter()
            .map(|t| JsValue::from_str(t))
            .collect::<js_sys::Array>()
            .into()
    } else {
        JsValue::UNDEFINED
    };
    let cookies = if affinity_on {
        (0..config.origins.len())
            .map(|i| {
                let value = affinity::cookie_value(&config.origins, i);
                JsValue::from_str(&affinity::set_cookie(&value, config.affinity.ttl_s, false))
            })
            .collect::<js_sys::Array>()
            .into()
    } else {
        JsValue::UNDEFINED
    };
    let steer = js_sys::Object::new();
    let fields: [(&str, JsValue); 11] = [
        ("policy", JsValue::from_str(config.steering.as_str())),
        ("names", strings(&|o| o.name.clone()).into()),
        ("bases", strings(&|o| o.base.clone()).into()),
        ("weights", weights.into()),
        ("healthy", healthy.into()),
        ("access", access.into()),
        ("hashHeader", JsValue::from_str(config.hash_key.header())),
        (
            "hashCookie",
            config
                .hash_key
                .cookie_name()
                .map_or(JsValue::UNDEFINED, JsValue::from_str),
        ),
        ("affinity", JsValue::from_str(config.affinity.mode.as_str())),
        (
            "affinityFailover",
            JsValue::from_str(config.affinity.failover.as_str()),
        ),
        ("tokens", tokens),
    ];
    for (name, value) in fields {
        let _ = js_sys::Reflect::set(&steer, &JsValue::from_str(name), &value);
    }
    // The Set-Cookie values without `Secure`, which JS adds for https.
    let _ = js_sys::Reflect::set(&steer, &"cookies".into(), &cookies);
    steer.into()
}

/// The fast path's attempt against `origin` did not succeed; `result` is
/// what `attempt_js` resolved to, `random` the number its route used (NaN
/// when it had none). The full path takes it from there.
#[wasm_bindgen(wasm_bindgen_futures = worker::wasm_bindgen_futures)]
pub async fn fetch_after(
    req: web_sys::Request,
    env: Env,
    ctx: worker::worker_sys::Context,
    origin: usize,
    result: JsValue,
    random: f64,
) -> web_sys::Response {
    let ctx = Context::new(ctx);
    let isolate = match isolate::load(&env) {
        Loaded::Ready(isolate) => isolate,
        Loaded::Broken(problem) => return crate::respond::plain(500, &problem),
    };
    let first = forward::outcome(forward::sent_from_js(result));
    let random = (0.0..1.0).contains(&random).then_some(random);
    proxy(req, &isolate, &env, &ctx, Some((origin, first)), random).await
}
