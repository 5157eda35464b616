//! What lives as long as the isolate: the parsed config and the health map.
//! Config is read from `[vars]` once; a new deployment gets new isolates.

use std::cell::{Cell, Ref, RefCell};
use std::rc::Rc;

use failover_core::edge::budget::ReplayBudget;
use failover_core::edge::config::WorkerConfig;
use failover_core::edge::health::HealthMap;
use failover_core::edge::report;
use failover_core::edge::shared::{colo_key, colo_read_every_ms, Cadence, SharedVerdict, Source};
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::{js_sys, Env};

use crate::{clock, js_bridge, log};

pub struct Isolate {
    pub config: WorkerConfig,
    /// Never borrowed across an `.await`: requests interleave at awaits.
    /// Private so that every change goes through `change_health`.
    health: RefCell<HealthMap>,
    /// Bumped whenever a change alters what the fast path's lease rests on
    /// (which origins are up, or an earlier due probe); a bump revokes it.
    generation: Cell<u64>,
    /// Body bytes held for replay across the isolate's requests (src/body.rs).
    pub replay_budget: RefCell<ReplayBudget>,
    /// When the colo's shared verdicts were last read.
    pub colo_reads: RefCell<Cadence>,
    /// When the global checker was last consulted.
    pub global_reads: RefCell<Cadence>,
    /// Each origin's colo cache key (`shared::colo_key`), made once.
    pub colo_keys: Vec<String>,
}

impl Isolate {
    pub fn health(&self) -> Ref<'_, HealthMap> {
        self.health.borrow()
    }

    /// Changes the health map. When the change moves what the fast path's
    /// lease rests on (which origins are up, or a probe now due earlier),
    /// the generation moves on and the lease is revoked (src/fast.rs);
    /// anything else (a streak counter, a probe taken) leaves it standing.
    pub fn change_health<T>(&self, change: impl FnOnce(&mut HealthMap) -> T) -> T {
        let mut health = self.health.borrow_mut();
        let before = Routing::of(&health);
        let result = change(&mut health);
        if Routing::of(&health).moved_from(&before) {
            self.generation.set(self.generation.get().wrapping_add(1));
            js_bridge::revoke_lease();
        }
        result
    }

    /// Changes since the isolate started that revoked the lease.
    pub fn generation(&self) -> u64 {
        self.generation.get()
    }

    /// Records an answer from `origin` as evidence. It changes no verdict,
    /// so the fast path's lease stands.
    pub fn answered(&self, origin: usize, now_ms: u64) {
        self.change_health(|h| h.record_success(origin, now_ms));
    }

    /// Offers a shared verdict to the health map, logging a flip it causes.
    /// The fast path's latest answer from the origin counts as evidence
    /// against it, like the full path's.
    pub fn adopt(&self, origin: usize, verdict: SharedVerdict, source: Source, max_age_ms: u64) {
        let seen = js_bridge::fast_evidence(origin);
        let change = self.change_health(|health| {
            if seen.is_finite() && seen > 0.0 {
                health.record_success(origin, seen as u64);
            }
            health.adopt(origin, verdict, source, clock::now_ms(), max_age_ms)
        });
        if let Some(change) = change {
            log::line(&report::health_change(&self.config, &change));
        }
    }
}

/// What the fast path's lease depends on in the health map.
#[derive(PartialEq, Eq)]
struct Routing {
    up: Vec<bool>,
    next_probe_ms: Option<u64>,
}

impl Routing {
    fn of(health: &HealthMap) -> Routing {
        Routing {
            up: (0..health.len()).map(|i| health.is_up(i)).collect(),
            next_probe_ms: health.next_probe_ms(),
        }
    }

    /// A verdict flipped, or a probe fell due earlier than the lease knew.
    fn moved_from(&self, before: &Routing) -> bool {
        let earlier = match (self.next_probe_ms, before.next_probe_ms) {
            (Some(now), Some(then)) => now < then,
            (Some(_), None) => true,
            (None, _) => false,
        };
        self.up != before.up || earlier
    }
}

#[derive(Clone)]
pub enum Loaded {
    Ready(Rc<Isolate>),
    /// The config is unusable: every request gets this one-line reason.
    Broken(Rc<str>),
}

thread_local! {
    static LOADED: RefCell<Option<Loaded>> = const { RefCell::new(None) };
}

/// The isolate's state, read from `env` on first use.
pub fn load(env: &Env) -> Loaded {
    if let Some(loaded) = LOADED.with(|cell| cell.borrow().clone()) {
        return loaded;
    }
    let loaded = match WorkerConfig::from_vars(|name| var_text(env, name)) {
        Ok(config) => {
            // A failed client attempt marks an origin down at once (fall 1).
            let health = HealthMap::new(
                config.origins.len(),
                config.health_rise,
                1,
                config.health_interval_ms,
            );
            let colo_reads = Cadence::new(colo_read_every_ms(config.health_interval_ms));
            let global_reads = Cadence::new(config.health_interval_ms);
            let replay_budget = ReplayBudget::new(config.replay_buffer_budget_bytes);
            let colo_keys = config.origins.iter().map(colo_key).collect();
            Loaded::Ready(Rc::new(Isolate {
                config,
                health: RefCell::new(health),
                generation: Cell::new(0),
                replay_budget: RefCell::new(replay_budget),
                colo_reads: RefCell::new(colo_reads),
                global_reads: RefCell::new(global_reads),
                colo_keys,
            }))
        }
        Err(e) => {
            // What every visitor reads names the setting and the problem;
            // the value (which may hold a password) goes to the log alone,
            // once per isolate, not once per request.
            let problem = e.to_string();
            log::line(&report::config_error(&problem, e.value.as_deref()));
            Loaded::Broken(problem.into())
        }
    };
    LOADED.with(|cell| *cell.borrow_mut() = Some(loaded.clone()));
    loaded
}

/// A var's value as text (a setting, or the secret an origin's
/// `access_client_secret_var` names): strings as they are (secrets, `--var`), anything
/// else (TOML arrays, numbers) as JSON.
pub fn var_text(env: &Env, name: &str) -> Option<String> {
    let value = js_sys::Reflect::get(env.as_ref(), &JsValue::from_str(name)).ok()?;
    if value.is_undefined() || value.is_null() {
        return None;
    }
    if let Some(text) = value.as_string() {
        return Some(text);
    }
    if value.is_instance_of::<js_sys::Function>() {
        return None;
    }
    js_sys::JSON::stringify(&value)
        .ok()
        .and_then(|s| s.as_string())
}
