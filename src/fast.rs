//! The fast path's Rust half. Most requests need one attempt and nothing
//! else, and what that attempt is changes only when the health map does or
//! when some periodic work falls due. So Rust grants src/js/entry.mjs a
//! *lease* on its decision: which origin, until when (and, under steering,
//! which origins requests may go to, overrides folded in); what never
//! changes while the Wasm instance lives (names, URLs, weights, tokens,
//! cookies) it hands over once per instance (`fast_config`), not with every
//! lease. While the lease holds, JS sends requests without entering Wasm at
//! all; any change to the health map's routing, or to the overrides in
//! force, revokes it (`Isolate::change_health`, `set_overrides`,
//! `tick_overrides`). Periodic work (probes,
//! colo reads, checker consultations) ends no lease: the request that finds
//! it due starts it in the background (`periodic_work`). A small body the
//! fast path reads into a buffer itself, holding its bytes on the replay
//! budget (`hold_body`, `release_body`: two small synchronous calls). The
//! full path (`fetch`, `fetch_after`) does all other work: large or chunked
//! bodies, the status endpoint, a failed attempt. `make bench` measured the two Wasm
//! calls per request this replaces at about 3% of throughput.

use failover_core::edge::affinity;
use failover_core::edge::affinity::AffinityMode;
use failover_core::edge::config::{HostPattern, Origin, Site, WorkerConfig};
use failover_core::edge::steering::Policy;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use crate::forward;
use crate::isolate::{self, Loaded};
use crate::proxy::proxy;
use crate::runtime::{Context, Env, RawContext};

/// What the fast path needs that never changes while this Wasm instance
/// lives: asked for once per instance (src/js/lease.mjs `configure`), so no
/// lease re-sends it. An object with the fields of `instance` in lease.mjs,
/// or None when the config is broken. With several sites it carries the
/// host table (`hosts`), and steering is the full path's (`steer` unset).
#[wasm_bindgen]
pub fn fast_config(env: &Env) -> Option<js_sys::Object> {
    let Loaded::Ready(isolate) = isolate::load(env) else {
        return None;
    };
    let config = &isolate.config;
    // The status endpoint and the admin API under it: the full path's.
    let status_path = config
        .reserved_path()
        .map_or(JsValue::UNDEFINED, JsValue::from_str);
    let strings = |f: &dyn Fn(&Origin) -> String| -> JsValue {
        config
            .origins
            .iter()
            .map(|o| JsValue::from_str(&f(o)))
            .collect::<js_sys::Array>()
            .into()
    };
    // The Worker's own tokens, for the fast path's twin of
    // `secret::carries_any` (src/js/credentials.mjs): a request carrying one
    // takes the full path, which keeps it from the origin.
    let tokens = if config.reserved_path().is_some() {
        [&config.status_token, &config.admin_token]
            .into_iter()
            .flatten()
            .map(|t| JsValue::from_str(t))
            .collect::<js_sys::Array>()
            .into()
    } else {
        JsValue::UNDEFINED
    };
    let several = config.sites.len() > 1;
    let steer = if several {
        JsValue::UNDEFINED
    } else {
        steering(config, &isolate.tokens())
    };
    let fields: [(&str, JsValue); 10] = [
        // Whenever some site names its hosts (one site with restricted
        // hosts too): a host no site claims is the full path's (421).
        (
            "hosts",
            if config.hosts.is_single() {
                JsValue::UNDEFINED
            } else {
                host_table(config)
            },
        ),
        ("names", strings(&|o| o.name.clone())),
        ("bases", strings(&|o| o.base.clone())),
        (
            "timeoutMs",
            JsValue::from_f64(config.attempt_timeout_ms as f64),
        ),
        ("statusPath", status_path),
        ("tokens", tokens),
        ("silenceMs", JsValue::from_f64(config.silence_ms as f64)),
        (
            "replayMax",
            JsValue::from_f64(config.replay_body_max_bytes as f64),
        ),
        (
            "suspectMs",
            JsValue::from_f64(isolate.suspect_after_ms() as f64),
        ),
        ("steer", steer),
    ];
    Some(object(&fields))
}

/// The host table for src/js/sites.mjs `siteOf` (the twin of
/// `HostTable::site_for`): `names` and `wildcards` (what follows `*.`),
/// each a Map from the lower-case host to its site, and `any`, the `*`
/// site or -1.
fn host_table(config: &WorkerConfig) -> JsValue {
    let names = js_sys::Map::new();
    let wildcards = js_sys::Map::new();
    let mut any = -1.0;
    for (s, site) in config.sites.iter().enumerate() {
        let index = JsValue::from_f64(s as f64);
        for host in &site.hosts {
            match host {
                HostPattern::Name(name) => {
                    names.set(&JsValue::from_str(name), &index);
                }
                HostPattern::Wildcard(rest) => {
                    wildcards.set(&JsValue::from_str(rest), &index);
                }
                HostPattern::Any => any = s as f64,
            }
        }
    }
    object(&[
        ("names", names.into()),
        ("wildcards", wildcards.into()),
        ("any", JsValue::from_f64(any)),
    ])
    .into()
}

/// The lease, or None when the full path must take every request (a broken
/// config, no origin requests may go to, a drain under affinity): which
/// origin, when periodic work is next due, from when a waiting attempt may
/// start a colo read, whether that origin serves because one meant before
/// it is down (`x-failover`), and (under steering) which origins requests
/// may go to and, while an override is in force, may be meant for. An
/// object with the fields of `lease` in src/js/lease.mjs. It holds until a
/// change to health or overrides revokes it.
#[wasm_bindgen]
pub fn fast_lease(env: &Env) -> Option<js_sys::Object> {
    let Loaded::Ready(isolate) = isolate::load(env) else {
        return None;
    };
    if isolate.config.sites.len() > 1 {
        return Some(site_leases(&isolate));
    }
    let lease = isolate.lease()?;
    let n = isolate.config.origins.len();
    let per_origin = |f: &dyn Fn(usize) -> bool| -> JsValue {
        (0..n)
            .map(|i| JsValue::from_bool(f(i)))
            .collect::<js_sys::Array>()
            .into()
    };
    let steering = needs_steering(&isolate.config);
    // Overrides fold into the health the lease carries: what requests may
    // go to, and (only while one is in force) what they may be meant for.
    let healthy = if steering {
        per_origin(&|i| isolate.routable(i))
    } else {
        JsValue::UNDEFINED
    };
    let intendable = if steering && isolate.overrides_in_force() {
        per_origin(&|i| isolate.intendable(i))
    } else {
        JsValue::UNDEFINED
    };
    let fields: [(&str, JsValue); 6] = [
        ("origin", JsValue::from_f64(lease.origin as f64)),
        ("workDue", JsValue::from_f64(lease.work_due_ms as f64)),
        ("coloDue", JsValue::from_f64(lease.colo_due_ms as f64)),
        ("healthy", healthy),
        ("intendable", intendable),
        ("failover", JsValue::from_bool(lease.failover)),
    ];
    Some(object(&fields))
}

/// The lease with several sites: per site, the origin its requests go to
/// (`origins`), or -1 (none for now: the full path, and ask again) or -2
/// (the site routes each request itself: the full path's), and whether it
/// serves as a failover (`failovers`).
fn site_leases(isolate: &isolate::Isolate) -> js_sys::Object {
    let leases = isolate.site_leases();
    let config = &isolate.config;
    let origins: js_sys::Array = leases
        .sites
        .iter()
        .zip(&config.sites)
        .map(|(lease, site)| match lease {
            Some(l) => JsValue::from_f64(l.origin as f64),
            None if needs_steering_site(site) => JsValue::from_f64(-2.0),
            None => JsValue::from_f64(-1.0),
        })
        .collect();
    let failovers: js_sys::Array = leases
        .sites
        .iter()
        .map(|l| JsValue::from_bool(l.is_some_and(|l| l.failover)))
        .collect();
    object(&[
        ("origin", JsValue::from_f64(-1.0)),
        ("workDue", JsValue::from_f64(leases.work_due_ms as f64)),
        ("coloDue", JsValue::from_f64(leases.colo_due_ms as f64)),
        ("healthy", JsValue::UNDEFINED),
        ("intendable", JsValue::UNDEFINED),
        ("failover", JsValue::FALSE),
        ("origins", origins.into()),
        ("failovers", failovers.into()),
    ])
}

/// A plain object with these fields.
fn object(fields: &[(&str, JsValue)]) -> js_sys::Object {
    let object = js_sys::Object::new();
    for (name, value) in fields {
        // Setting a property on a fresh plain object cannot fail.
        let _ = js_sys::Reflect::set(&object, &JsValue::from_str(name), value);
    }
    object
}

/// Whether the fast path must route each request itself (src/js/route.mjs):
/// under a steering policy, affinity or an Access token. Under plain
/// failover every request goes to the lease's `origin`.
fn needs_steering(config: &WorkerConfig) -> bool {
    config.sites.len() == 1 && needs_steering_site(config.site())
}

/// [`needs_steering`] for one site.
fn needs_steering_site(site: &Site) -> bool {
    !(site.steering == Policy::Failover
        && site.affinity.mode == AffinityMode::Off
        && site.origins.iter().all(|o| o.access.is_none()))
}

/// What the fast path needs to route each request itself, the health aside
/// (which each lease brings), or undefined when it need not
/// (`needs_steering`).
fn steering(config: &WorkerConfig, tokens: &[String]) -> JsValue {
    if !needs_steering(config) {
        return JsValue::UNDEFINED;
    }
    let weights: js_sys::Array = config
        .origins
        .iter()
        .map(|o| JsValue::from_f64(f64::from(o.weight)))
        .collect();
    let access: js_sys::Array = config
        .origins
        .iter()
        .map(|o| match &o.access {
            Some(token) => object(&[
                ("id", JsValue::from_str(&token.client_id)),
                ("secret", JsValue::from_str(&token.client_secret)),
            ])
            .into(),
            None => JsValue::NULL,
        })
        .collect();
    let affinity_on = config.site().affinity.mode == AffinityMode::Cookie;
    let tokens = if affinity_on {
        tokens
            .iter()
            .map(|t| JsValue::from_str(t))
            .collect::<js_sys::Array>()
            .into()
    } else {
        JsValue::UNDEFINED
    };
    // The Set-Cookie values without `Secure`, which JS adds for https.
    let cookies = if affinity_on {
        (0..config.origins.len())
            .map(|i| {
                let value = affinity::cookie_value(&config.origins, i);
                JsValue::from_str(&affinity::set_cookie(
                    &value,
                    config.site().affinity.ttl_s,
                    false,
                ))
            })
            .collect::<js_sys::Array>()
            .into()
    } else {
        JsValue::UNDEFINED
    };
    // `names` and `bases` are the instance's own (lease.mjs `configure`).
    let fields: [(&str, JsValue); 9] = [
        ("policy", JsValue::from_str(config.site().steering.as_str())),
        ("weights", weights.into()),
        ("access", access.into()),
        (
            "hashHeader",
            JsValue::from_str(config.site().hash_key.header()),
        ),
        (
            "hashCookie",
            config
                .site()
                .hash_key
                .cookie_name()
                .map_or(JsValue::UNDEFINED, JsValue::from_str),
        ),
        (
            "affinity",
            JsValue::from_str(config.site().affinity.mode.as_str()),
        ),
        (
            "affinityFailover",
            JsValue::from_str(config.site().affinity.failover.as_str()),
        ),
        ("tokens", tokens),
        ("cookies", cookies),
    ];
    object(&fields).into()
}

/// The periodic work a fast-path request found due (src/js/entry.mjs runs
/// this in `ctx.waitUntil`, after its attempt is on its way): checker
/// consultation, due probes, the colo read. `url` is the request's (the
/// checker learns the public hostname from it). Resolves to when work is
/// next due, for the lease: an object with its `workDue` and `coloDue`
/// (lease.mjs `workDone`).
#[wasm_bindgen]
pub async fn periodic_work(env: Env, ctx: RawContext, url: String) -> js_sys::Object {
    let (work_due, colo_due) = match isolate::load(&env) {
        Loaded::Ready(isolate) => {
            let ctx = Context::new(ctx);
            crate::periodic::run(&isolate, &env, &ctx, &url).await;
            (isolate.next_due_ms() as f64, isolate.colo_due_ms() as f64)
        }
        Loaded::Broken(_) => (f64::INFINITY, f64::INFINITY),
    };
    object(&[
        ("workDue", JsValue::from_f64(work_due)),
        ("coloDue", JsValue::from_f64(colo_due)),
    ])
}

/// Takes `bytes` from the isolate's replay budget for a body the fast path
/// is about to read into a buffer (src/js/entry.mjs): true when they are
/// held. The fast path gives them back (`release_body`) once the request's
/// attempts are over, as the full path's `body::Held` does; false sends the
/// request down the full path, which streams the body and reports why.
#[wasm_bindgen]
pub fn hold_body(env: &Env, bytes: f64) -> bool {
    let Loaded::Ready(isolate) = isolate::load(env) else {
        return false;
    };
    // Bound first: the budget's borrow must end before `isolate` does.
    let held = isolate.budget_mut().try_hold(bytes as u64);
    held
}

/// Gives back what `hold_body` took.
#[wasm_bindgen]
pub fn release_body(env: &Env, bytes: f64) {
    if let Loaded::Ready(isolate) = isolate::load(env) {
        isolate.budget_mut().release(bytes as u64);
    }
}

/// The fast path's attempt against `origin` did not succeed; `result` is
/// what `attempt_js` resolved to, `random` the number its route used (NaN
/// when it had none), `body` the request's body if it read one (an
/// ArrayBuffer whose bytes it holds on the replay budget; undefined
/// otherwise). The full path takes it from there.
#[wasm_bindgen]
pub async fn fetch_after(
    req: web_sys::Request,
    env: Env,
    ctx: RawContext,
    origin: usize,
    result: JsValue,
    random: f64,
    body: JsValue,
) -> web_sys::Response {
    let ctx = Context::new(ctx);
    let isolate = match isolate::load(&env) {
        Loaded::Ready(isolate) => isolate,
        Loaded::Broken(problem) => return crate::respond::plain(500, &problem),
    };
    let first = forward::outcome(forward::sent_from_js(result));
    let random = (0.0..1.0).contains(&random).then_some(random);
    let buffered = (!body.is_undefined()).then_some(body);
    proxy(
        req,
        &isolate,
        &env,
        &ctx,
        Some((origin, first)),
        random,
        buffered,
    )
    .await
}
