//! What lives as long as the isolate: the parsed config and the health map.
//! Config is read from `[vars]` once; a new deployment gets new isolates.

use std::cell::{Ref, RefCell, RefMut};
use std::rc::Rc;

use failover_core::config::{WorkerConfig, SETTINGS};
use failover_core::health::HealthMap;
use failover_core::report;
use failover_core::shared::{Cadence, SharedVerdict, Source};
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::{js_sys, Env};

pub struct Isolate {
    pub config: WorkerConfig,
    /// Never borrowed across an `.await`: requests interleave at awaits.
    /// Private so that every change goes through `health_mut`.
    health: RefCell<HealthMap>,
    /// When the colo's shared verdicts were last read.
    pub colo_reads: RefCell<Cadence>,
    /// When the global checker was last consulted.
    pub global_reads: RefCell<Cadence>,
}

impl Isolate {
    pub fn health(&self) -> Ref<'_, HealthMap> {
        self.health.borrow()
    }

    /// The health map, to change it: the fast path's lease on the old state
    /// ends here (src/fast.rs).
    pub fn health_mut(&self) -> RefMut<'_, HealthMap> {
        crate::fast::revoke_lease();
        self.health.borrow_mut()
    }

    /// Records an answer from `origin` as evidence. It changes no verdict,
    /// so the fast path's lease stands.
    pub fn answered(&self, origin: usize, now_ms: u64) {
        self.health.borrow_mut().record_success(origin, now_ms);
    }

    /// Offers a shared verdict to the health map, logging a flip it causes.
    /// The fast path's latest answer from the origin counts as evidence
    /// against it, like the full path's.
    pub fn adopt(&self, origin: usize, verdict: SharedVerdict, source: Source, max_age_ms: u64) {
        let seen = crate::fast::fast_evidence(origin);
        let mut health = self.health_mut();
        if seen.is_finite() && seen > 0.0 {
            health.record_success(origin, seen as u64);
        }
        let change = health.adopt(origin, verdict, source, crate::clock::now_ms(), max_age_ms);
        drop(health);
        if let Some(change) = change {
            crate::log::line(&report::health_change(&self.config, &change));
        }
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
            let colo_reads = Cadence::new(crate::colo::read_every_ms(config.health_interval_ms));
            let global_reads = Cadence::new(config.health_interval_ms);
            Loaded::Ready(Rc::new(Isolate {
                config,
                health: RefCell::new(health),
                colo_reads: RefCell::new(colo_reads),
                global_reads: RefCell::new(global_reads),
            }))
        }
        Err(e) => {
            let problem = e.to_string();
            // Logged once per isolate, not once per request.
            crate::log::line(&report::config_error(&problem));
            Loaded::Broken(problem.into())
        }
    };
    LOADED.with(|cell| *cell.borrow_mut() = Some(loaded.clone()));
    loaded
}

/// A var's value as text: strings as they are (secrets, `--var`), anything
/// else (TOML arrays, numbers) as JSON.
pub fn var_text(env: &Env, name: &str) -> Option<String> {
    debug_assert!(SETTINGS.contains(&name));
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
