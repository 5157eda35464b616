//! What lives as long as the isolate: the parsed config, and the pure
//! `failover_core::edge::Isolate` (the health map, the cadences of colo
//! reads and checker consultations, the replay budget, the affinity tokens
//! and colo keys) in a `RefCell`, with the one JS call its changes need:
//! revoking the fast path's lease (after a health change, or an override's).
//! Config is read from `[vars]` once; a new
//! deployment gets new isolates.

use std::cell::{Ref, RefCell, RefMut};
use std::rc::Rc;
use std::time::Duration;

use failover_core::edge::budget::ReplayBudget;
use failover_core::edge::config::{Site, WorkerConfig};
use failover_core::edge::guesses::GuessBrake;
use failover_core::edge::health::{HealthMap, Transition};
use failover_core::edge::isolate::{Lease, LeaseAfter, SiteLease};
use failover_core::edge::overrides::{Overrides, Standing};
use failover_core::edge::report;
use failover_core::edge::shared::{SharedVerdict, Source};
use failover_core::notify::Event;

use crate::config::read_config;
use crate::runtime::Env;
use crate::{clock, js_bridge, log};

pub struct Isolate {
    pub config: WorkerConfig,
    /// Never borrowed across an `.await`: requests interleave at awaits.
    /// Private so that every health change goes through `change_health`.
    state: RefCell<failover_core::edge::Isolate>,
    /// Wrong status and admin tokens, per client (src/guesses.rs).
    pub guesses: RefCell<GuessBrake>,
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
            self.flipped(&change);
        }
    }

    /// A flip of this isolate's map, whatever caused it: logged, and kept
    /// for the status page (its own view, when there is no checker). It
    /// notifies nobody: only the global checker does.
    pub fn flipped(&self, change: &Transition) {
        log::line(&report::health_change(&self.config, change));
        self.state
            .borrow_mut()
            .record_change(change, clock::now_ms());
    }

    /// This isolate's last flips, newest first.
    pub fn recent_changes(&self) -> Vec<Event> {
        self.state.borrow().recent_changes().cloned().collect()
    }

    /// True when a failure of `origin` on live traffic is to be reported
    /// to the global checker now (at most every few seconds per origin).
    pub fn take_checker_report(&self, origin: usize, now_ms: u64) -> bool {
        self.state.borrow_mut().take_checker_report(origin, now_ms)
    }

    /// The fast path's lease, if any origin is up (`edge::Isolate::lease`),
    /// once the fast path's answers have had their say.
    /// The fast path's lease, if any origin is up and no slow-start ramp is
    /// in effect (`edge::Isolate::lease`), once the fast path's answers
    /// have had their say.
    pub fn lease(&self) -> Option<Lease> {
        self.reconsider_shared_downs();
        self.state.borrow().lease(clock::now_ms())
    }

    /// The fast path's lease with several sites: when periodic work is
    /// next due, and each site's part (`edge::Isolate::site_lease`), once
    /// the fast path's answers have had their say.
    pub fn site_leases(&self) -> SiteLeases {
        self.reconsider_shared_downs();
        let state = self.state.borrow();
        let now = clock::now_ms();
        SiteLeases {
            work_due_ms: state.next_due_ms(),
            colo_due_ms: state.colo_due_ms(),
            sites: (0..self.config.sites.len())
                .map(|s| state.site_lease(s, now))
                .collect(),
        }
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
                self.flipped(&change);
            }
        }
    }

    /// Whether the health map calls some origin up.
    pub fn any_up(&self) -> bool {
        self.state.borrow().first_up().is_some()
    }

    /// Whether some origin of `site` is up or forced up
    /// (`edge::Isolate::any_serving_in`).
    pub fn any_serving(&self, site: &Site) -> bool {
        self.state.borrow().any_serving_in(site.global())
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

    /// Whether the location's copy of the checker's answer is due to be
    /// read (and the next read is scheduled); never without a checker or
    /// colo health.
    pub fn take_snapshot_read(&self, now_ms: u64) -> bool {
        self.state.borrow_mut().take_snapshot_read(now_ms)
    }

    /// Whether the location's copy of the checker's answer is due to be
    /// read, without taking it.
    pub fn snapshot_read_due(&self, now_ms: u64) -> bool {
        self.state.borrow().snapshot_read_due(now_ms)
    }

    /// The location's copy's cache key and its claim key.
    pub fn snapshot_keys(&self) -> Option<(String, String)> {
        let state = self.state.borrow();
        state
            .snapshot_keys()
            .map(|(s, c)| (s.to_string(), c.to_string()))
    }

    /// Whether this isolate, whose cache keeps nothing, may ask the checker
    /// itself now (once per interval).
    pub fn take_direct_read(&self, now_ms: u64) -> bool {
        self.state.borrow_mut().take_direct_read(now_ms)
    }

    /// The overrides this isolate routes by.
    pub fn overrides(&self) -> Ref<'_, Overrides> {
        Ref::map(self.state.borrow(), |s| s.overrides())
    }

    /// When the checker made the answer this isolate's overrides came from.
    pub fn overrides_as_of_ms(&self) -> u64 {
        self.state.borrow().overrides_as_of_ms()
    }

    /// Every origin's standing (its override at the last look).
    pub fn standings(&self) -> Ref<'_, [Standing]> {
        Ref::map(self.state.borrow(), |s| s.standings())
    }

    /// Takes the overrides of a checker's answer made at `as_of_ms`; the
    /// lease is revoked if routing moved.
    pub fn set_overrides(&self, overrides: Overrides, as_of_ms: u64, now_ms: u64) {
        let after = self
            .state
            .borrow_mut()
            .set_overrides(overrides, as_of_ms, now_ms);
        if after == LeaseAfter::Revoked {
            js_bridge::revoke_lease();
        }
    }

    /// An override that comes into or out of force by itself (a TTL, a
    /// drain's end) revokes the lease at its instant; nothing otherwise.
    pub fn tick_overrides(&self, now_ms: u64) {
        if self.state.borrow_mut().tick_overrides(now_ms) == LeaseAfter::Revoked {
            js_bridge::revoke_lease();
        }
    }

    /// Whether some override is in force.
    pub fn overrides_in_force(&self) -> bool {
        self.state.borrow().overrides_in_force()
    }

    /// Whether an unpinned request may go to `origin` (health and override).
    pub fn routable(&self, origin: usize) -> bool {
        self.state.borrow().routable(origin)
    }

    /// Whether an override lets requests be meant for `origin`.
    pub fn intendable(&self, origin: usize) -> bool {
        self.state.borrow().intendable(origin)
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

/// [`Isolate::site_leases`].
pub struct SiteLeases {
    pub work_due_ms: u64,
    pub colo_due_ms: u64,
    pub sites: Vec<Option<SiteLease>>,
}

thread_local! {
    static LOADED: RefCell<Option<Loaded>> = const { RefCell::new(None) };
}

/// The isolate's state, read from `env` on first use.
pub fn load(env: &Env) -> Loaded {
    if let Some(loaded) = LOADED.with(|cell| cell.borrow().clone()) {
        return loaded;
    }
    let loaded = match read_config(env.as_ref()) {
        Ok(config) => {
            let mut state = failover_core::edge::Isolate::new(&config);
            // The checker's id names the location's copy of its answer: one
            // per Worker, so no other Worker's overrides are ever read.
            if let Some(id) = crate::checker_call::id(env) {
                state = state.with_checker(&config, &id);
            }
            Loaded::Ready(Rc::new(Isolate {
                config,
                state: RefCell::new(state),
                guesses: RefCell::new(GuessBrake::new()),
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
