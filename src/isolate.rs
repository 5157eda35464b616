//! What lives as long as the isolate: the parsed config and the health map.
//! Config is read from `[vars]` once; a new deployment gets new isolates.

use std::cell::RefCell;
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
    pub health: RefCell<HealthMap>,
    /// When the colo's shared verdicts were last read.
    pub colo_reads: RefCell<Cadence>,
    /// When the global checker was last consulted.
    pub global_reads: RefCell<Cadence>,
}

impl Isolate {
    /// Offers a shared verdict to the health map, logging a flip it causes.
    pub fn adopt(&self, origin: usize, verdict: SharedVerdict, source: Source, max_age_ms: u64) {
        let change = self.health.borrow_mut().adopt(
            origin,
            verdict,
            source,
            crate::clock::now_ms(),
            max_age_ms,
        );
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

/// The isolate's state if it was loaded already.
pub fn current() -> Option<Loaded> {
    LOADED.with(|cell| cell.borrow().clone())
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
