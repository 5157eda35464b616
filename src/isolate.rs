//! What lives as long as the isolate: the parsed config, and the pure
//! `failover_core::edge::Isolate` (the health map, the cadences of colo
//! reads and checker consultations, the replay budget, the affinity tokens
//! and colo keys) in a `RefCell`, with the one JS call its changes need:
//! revoking the fast path's lease. Config is read from `[vars]` once; a new
//! deployment gets new isolates.

use std::cell::{Ref, RefCell, RefMut};
use std::rc::Rc;
use std::time::Duration;

use failover_core::edge::budget::ReplayBudget;
use failover_core::edge::config::WorkerConfig;
use failover_core::edge::health::HealthMap;
use failover_core::edge::isolate::{Lease, LeaseAfter};
use failover_core::edge::report;
use failover_core::edge::shared::{SharedVerdict, Source};
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::{js_sys, Env};

use crate::{clock, js_bridge, log};

pub struct Isolate {
    pub config: WorkerConfig,
    /// Never borrowed across an `.await`: requests interleave at awaits.
    /// Private so that every health change goes through `change_health`.
    state: RefCell<failover_core::edge::Isolate>,
}

impl Isolate {
    pub fn health(&self) -> Ref<'_, HealthMap> {
        Ref::map(self.state.borrow(), |s| s.health())
    }

    /// Changes the health map; when the change moves what the fast path's
    /// lease rests on (which origins are up, or a probe now due earlier),
    /// the lease is revoked (src/fast.rs), and only then.
    pub fn change_health<T>(&self, change: impl FnOnce(&mut HealthMap) -> T) -> T {
        let (result, after) = self.state.borrow_mut().change_health(change);
        if after == LeaseAfter::Revoked {
            js_bridge::revoke_lease();
        }
        result
    }

    /// Records an answer from `origin` as evidence. It changes no verdict,
    /// so the fast path's lease stands.
    pub fn answered(&self, origin: usize, now_ms: u64) {
        self.state.borrow_mut().record_answer(origin, now_ms);
    }

    /// Whether a colo read is due (without taking it): the read period has
    /// passed, and the read is wanted (`edge::Isolate::colo_read_due`).
    pub fn colo_read_due(&self, now_ms: u64) -> bool {
        let waiting = self.attempt_waiting();
        self.state.borrow().colo_read_due(now_ms, waiting)
    }

    /// Whether some attempt, on either path, has waited for its answer
    /// longer than `edge::Isolate::suspect_after` (src/js/silence.mjs keeps
    /// the attempts outstanding): a question for JS, asked only when the
    /// answer matters.
    fn attempt_waiting(&self) -> impl FnOnce() -> bool {
        let suspect_ms = self.suspect_after_ms() as f64;
        let timeout_ms = self.config.attempt_timeout_ms as f64;
        move || js_bridge::is_waiting(suspect_ms, timeout_ms)
    }

    /// Offers a shared verdict to the health map, logging a flip it causes.
    /// The fast path's latest answer from the origin counts as evidence
    /// against it, like the full path's.
    pub fn adopt(&self, origin: usize, verdict: SharedVerdict, source: Source, max_age: Duration) {
        let seen = js_bridge::fast_evidence(origin);
        let change = self.change_health(|health| {
            if seen.is_finite() && seen > 0.0 {
                health.record_success(origin, seen as u64);
            }
            health.adopt(origin, verdict, source, clock::now_ms(), max_age)
        });
        if let Some(change) = change {
            log::line(&report::health_change(&self.config, &change));
        }
    }

    /// The fast path's lease, if any origin is up (`edge::Isolate::lease`),
    /// once the fast path's answers have had their say.
    pub fn lease(&self) -> Option<Lease> {
        self.reconsider_shared_downs();
        self.state.borrow().lease()
    }

    /// Origins down on a shared verdict alone that the fast path has since
    /// got an answer from are up again (`HealthMap::answered_after_shared`).
    /// One JS call per such origin; none in the usual case.
    pub fn reconsider_shared_downs(&self) {
        for origin in 0..self.config.origins.len() {
            if !self.health().down_by_shared_verdict(origin) {
                continue;
            }
            let seen = js_bridge::fast_evidence(origin);
            if !(seen.is_finite() && seen > 0.0) {
                continue;
            }
            let change = self.change_health(|h| h.answered_after_shared(origin, seen as u64));
            if let Some(change) = change {
                log::line(&report::health_change(&self.config, &change));
            }
        }
    }

    /// Whether the health map calls some origin up.
    pub fn any_up(&self) -> bool {
        self.state.borrow().first_up().is_some()
    }

    /// When periodic work is next due (ms since the epoch).
    pub fn next_due_ms(&self) -> u64 {
        self.state.borrow().next_due_ms()
    }

    /// True when the colo's verdicts are due to be read (and the next read
    /// is scheduled).
    pub fn take_colo_read(&self, now_ms: u64) -> bool {
        let waiting = self.attempt_waiting();
        self.state.borrow_mut().take_colo_read(now_ms, waiting)
    }

    /// How long an attempt waits before a colo read is wanted, in ms.
    pub fn suspect_after_ms(&self) -> u64 {
        failover_core::edge::time::millis(self.state.borrow().suspect_after())
    }

    /// When a colo read may next start for a waiting attempt (ms since the
    /// epoch; `u64::MAX` with `COLO_HEALTH=off`).
    pub fn colo_due_ms(&self) -> u64 {
        self.state.borrow().colo_due_ms()
    }

    /// True when the global checker is due to be consulted (and the next
    /// consultation is scheduled).
    pub fn take_global_read(&self, now_ms: u64) -> bool {
        self.state.borrow_mut().take_global_read(now_ms)
    }

    /// Origin `origin`'s colo cache key.
    pub fn colo_key(&self, origin: usize) -> Option<String> {
        self.state.borrow().colo_key(origin).map(str::to_string)
    }

    /// Every origin's colo cache key, by index.
    pub fn colo_keys(&self) -> Vec<String> {
        self.state.borrow().colo_keys().to_vec()
    }

    /// Every origin's affinity cookie value, by index.
    pub fn tokens(&self) -> Ref<'_, [String]> {
        Ref::map(self.state.borrow(), |s| s.tokens())
    }

    /// The replay budget, to read.
    pub fn budget(&self) -> Ref<'_, ReplayBudget> {
        Ref::map(self.state.borrow(), |s| s.budget())
    }

    /// The replay budget, to hold or release bytes (src/body.rs).
    pub fn budget_mut(&self) -> RefMut<'_, ReplayBudget> {
        RefMut::map(self.state.borrow_mut(), |s| s.budget_mut())
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
            let state = failover_core::edge::Isolate::new(&config);
            Loaded::Ready(Rc::new(Isolate {
                config,
                state: RefCell::new(state),
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
