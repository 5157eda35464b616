//! Everything one Worker isolate keeps between requests, and the two
//! questions its shell asks of it: which origin the fast path may send
//! requests to on its own (the [`Lease`], good until a change to the health
//! map revokes it, and never granted while a slow-start ramp could move a
//! request), and when periodic work (a probe, a colo read, a checker
//! consultation) is next due. Periodic work ends no lease: the request that
//! finds it due is sent as usual, and the work runs beside it, in the
//! background (`ctx.waitUntil`), so no request waits for a cache read.
//! Overrides (`edge::overrides`) are part of what the lease rests on: a
//! change learned from the checker, or one coming into or out of force by
//! itself (a TTL, a drain's end, which `next_due_ms` includes), revokes it
//! like a health change.
//!
//! A colo read of the origins' verdicts is due only when it can change where
//! a request goes ([`Isolate::colo_read_wanted`]): while some origin is down
//! here (the colo may know it is back), or while an attempt has waited
//! longer than [`shared::suspect_after`] for its answer (another isolate may
//! already have found the origin dead). A read beside a request never helps
//! that request, only the ones after it; when every origin is up and
//! answers promptly, a read can tell the isolate nothing its own next
//! attempt would not, and a small site paid one on nearly every request
//! (two Cache API matches, most of a request's cost; see bench/README.md).
//! The location's copy of the global checker's answer (`edge::consult`:
//! its verdicts and the overrides in force) is read on its own cadence
//! whatever the map says: it is how an operator's override, or the
//! checker's word on an origin this isolate never tried, reaches the
//! isolate. The edge's
//! counterpart of `node::Node`, in quinn-proto's shape: the machine owns its
//! clocks and answers `next_due_ms`; the shell (src/isolate.rs) holds it in
//! a `RefCell`, never across an `.await`, and carries out what it says.

use std::time::Duration;

use crate::edge::affinity::{self, AffinityMode};
use crate::edge::budget::ReplayBudget;
use crate::edge::config::WorkerConfig;
use crate::edge::consult::{claim_key, snapshot_key, snapshot_read_every};
use crate::edge::events::origin_event;
use crate::edge::health::{HealthMap, Transition};
use crate::edge::overrides::{Overrides, Standing};
use crate::edge::shared::{self, colo_key, colo_read_every, Cadence};
use crate::edge::slow_start::{self, SlowStart};
use crate::edge::steering::Policy;
use crate::edge::time::after;
use crate::notify::history::History;
use crate::notify::Event;

/// How many of its own flips an isolate keeps, for its status page when
/// there is no global checker to ask.
pub const RECENT_CHANGES: usize = 20;

/// An isolate tells the global checker that an origin failed on live
/// traffic at most this often per origin: the first failure is news, the
/// next hundred are not, and the checker probes on its own from there.
pub const REPORT_EVERY: Duration = Duration::from_secs(5);

/// What one isolate knows between requests. The config itself stays with
/// the shell (it is read across awaits); what is derived from it once
/// (affinity tokens, colo keys) lives here.
#[derive(Clone, Debug)]
pub struct Isolate {
    health: HealthMap,
    /// When the colo's shared verdicts may next be read; None with
    /// `COLO_HEALTH=off`.
    colo_reads: Option<Cadence>,
    /// How long an attempt waits before a colo read is worth making.
    suspect_after: Duration,
    /// When the global checker is next consulted directly (no colo cache,
    /// or one that keeps nothing: `consult::AfterClaim::CacheKeepsNothing`);
    /// None without a checker (no `HEALTH_CHECKER` binding): a consultation
    /// that cannot happen is never due, so it wakes nothing on the fast
    /// path (which would enter Wasm once per interval to find nothing to
    /// do; bench/README.md).
    global_reads: Option<Cadence>,
    /// With the global checker and colo health: the location's copy of its
    /// answer, read on this cadence (`edge::consult`) instead of asking it.
    via_location: Option<ViaLocation>,
    budget: ReplayBudget,
    tokens: Vec<String>,
    colo_keys: Vec<String>,
    /// With affinity on, a draining origin keeps the requests pinned to it,
    /// which only the full path routes (no lease while one drains).
    pins: bool,
    overrides: Overrides,
    /// When the checker answered with `overrides` (an older answer, from a
    /// slower cache, is not adopted over a newer one).
    overrides_as_of_ms: u64,
    /// What `overrides` mean for routing, as of the last look, and when that
    /// next changes by itself.
    standings: Vec<Standing>,
    standings_change_ms: Option<u64>,
    names: Vec<String>,
    /// This isolate's own flips, newest last.
    recent: History<Event>,
    changes_seen: u64,
    /// When each origin's failure was last reported to the checker.
    reported_ms: Vec<Option<u64>>,
    /// What `lease` needs to know whether a slow-start ramp is in effect.
    slow_start: SlowStart,
    policy: Policy,
    weights: Vec<u32>,
    /// Each site's rules for its part of the fast path's lease (several
    /// sites: [`Isolate::site_lease`]).
    sites: Vec<SiteRules>,
}

/// The location's copy of the checker's answer: its keys and read cadence.
#[derive(Clone, Debug)]
struct ViaLocation {
    reads: Cadence,
    snapshot_key: String,
    claim_key: String,
}

/// The fast path's lease on the isolate's decision: requests go to
/// `origin` (or are routed by the fast path's twin of `route`, with the
/// health it was given) without entering Wasm, until a change to the health
/// map revokes it ([`LeaseAfter::Revoked`]). From `work_due_ms` on, the
/// next request also starts the periodic work, in the background; from
/// `colo_due_ms` on, so does a request that finds an attempt waiting longer
/// than [`Isolate::suspect_after`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The first origin requests may go to, in priority order (healthy,
    /// or forced up, and not held by an override).
    pub origin: usize,
    /// When periodic work is next due (`Isolate::next_due_ms`).
    pub work_due_ms: u64,
    /// Whether `origin` is not the one requests are meant for (it serves
    /// because the one before it is down): `x-failover` on plain failover.
    pub failover: bool,
    /// When a colo read may next start for a waiting attempt
    /// (`Isolate::colo_due_ms`); `u64::MAX` with `COLO_HEALTH=off`.
    pub colo_due_ms: u64,
}

/// One site's part of the fast path's lease ([`Isolate::site_lease`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SiteLease {
    /// The first of the site's origins requests may go to (global index).
    pub origin: usize,
    /// Whether it serves because one meant before it is down.
    pub failover: bool,
}

/// What a site's part of the lease rests on.
#[derive(Clone, Debug)]
struct SiteRules {
    origins: std::ops::Range<usize>,
    slow_start: SlowStart,
    /// Plain failover: no steering policy, affinity or Access token.
    plain: bool,
}

impl SiteRules {
    fn of(site: &crate::edge::config::Site) -> SiteRules {
        SiteRules {
            origins: site.global(),
            slow_start: site.slow_start,
            plain: site.steering == Policy::Failover
                && site.affinity.mode == AffinityMode::Off
                && site.origins.iter().all(|o| o.access.is_none()),
        }
    }
}

/// Whether a change to the health map ended the fast path's lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseAfter {
    /// What the lease rests on moved (a verdict flipped, or a probe fell
    /// due earlier than the lease knew): the shell revokes it.
    Revoked,
    /// The change touched nothing the lease rests on (a counter moved).
    Stands,
}

impl Isolate {
    /// A fresh isolate for `config`: every origin presumed up (one failed
    /// client attempt marks one down), nothing read or consulted yet.
    pub fn new(config: &WorkerConfig) -> Isolate {
        let interval = Duration::from_millis(config.health_interval_ms);
        let timeout = Duration::from_millis(config.attempt_timeout_ms);
        Isolate {
            health: HealthMap::new(config.origins.len(), config.health_rise, 1, interval),
            colo_reads: config
                .colo_health
                .then(|| Cadence::new(colo_read_every(interval))),
            suspect_after: shared::suspect_after(colo_read_every(interval), timeout),
            global_reads: None,
            via_location: None,
            budget: ReplayBudget::new(config.replay_buffer_budget_bytes),
            tokens: affinity::tokens(&config.origins),
            colo_keys: config.origins.iter().map(colo_key).collect(),
            pins: config.site().affinity.mode == AffinityMode::Cookie,
            overrides: Overrides::none(config.origins.len()),
            overrides_as_of_ms: 0,
            standings: vec![Standing::Auto; config.origins.len()],
            standings_change_ms: None,
            names: config.origins.iter().map(|o| o.name.clone()).collect(),
            recent: History::new(RECENT_CHANGES),
            changes_seen: 0,
            reported_ms: vec![None; config.origins.len()],
            slow_start: config.site().slow_start,
            policy: config.site().steering,
            weights: config.origins.iter().map(|o| o.weight).collect(),
            sites: config.sites.iter().map(SiteRules::of).collect(),
        }
    }

    /// With the global checker (`checker_id`: its Durable Object id): with
    /// colo health on, its answer is read from the location's copy
    /// (`edge::consult`), and asked for only when that is stale; with colo
    /// health off, every isolate asks it itself, once per interval. Without
    /// it (an isolate made by `new` alone) no consultation is ever due.
    pub fn with_checker(mut self, config: &WorkerConfig, checker_id: &str) -> Isolate {
        let interval = Duration::from_millis(config.health_interval_ms);
        self.global_reads = Some(Cadence::new(interval));
        if config.colo_health {
            self.via_location = Some(ViaLocation {
                reads: Cadence::new(snapshot_read_every(interval)),
                snapshot_key: snapshot_key(checker_id),
                claim_key: claim_key(checker_id),
            });
        }
        self
    }

    /// Keeps a flip of this isolate's map (whatever caused it) for the
    /// status page; an event never sent anywhere.
    pub fn record_change(&mut self, t: &Transition, now_ms: u64) {
        self.changes_seen = self.changes_seen.saturating_add(1);
        let name = self.names.get(t.origin).map_or("?", String::as_str);
        let id = format!("isolate-{}", self.changes_seen);
        self.recent.push(origin_event(id, name, t, now_ms, ""));
    }

    /// This isolate's last [`RECENT_CHANGES`] flips, newest first.
    pub fn recent_changes(&self) -> impl Iterator<Item = &Event> {
        self.recent.newest(RECENT_CHANGES)
    }

    /// True (and remembered) when a failure of `origin` on live traffic
    /// should be reported to the global checker now: at most once per
    /// [`REPORT_EVERY`] per origin.
    pub fn take_checker_report(&mut self, origin: usize, now_ms: u64) -> bool {
        let Some(last) = self.reported_ms.get_mut(origin) else {
            return false;
        };
        if last.is_some_and(|at| now_ms < after(at, REPORT_EVERY)) {
            return false;
        }
        *last = Some(now_ms);
        true
    }

    /// The health map, to read.
    pub fn health(&self) -> &HealthMap {
        &self.health
    }

    /// Changes the health map, and says whether the fast path's lease
    /// survives the change: it rests on which origins are up and on the
    /// earliest due probe, and nothing else (a streak counter, a probe
    /// taken, evidence recorded leave it standing).
    pub fn change_health<T>(
        &mut self,
        change: impl FnOnce(&mut HealthMap) -> T,
    ) -> (T, LeaseAfter) {
        let before = Routing::of(&self.health, &self.standings);
        let result = change(&mut self.health);
        let after = if Routing::of(&self.health, &self.standings).moved_from(&before) {
            LeaseAfter::Revoked
        } else {
            LeaseAfter::Stands
        };
        (result, after)
    }

    /// Records an answer a client got from `origin` as evidence (a shared
    /// "down" older than it is not adopted). It changes no verdict, so it
    /// cannot move the lease, and skips `change_health`'s before-and-after
    /// comparison: it runs on every request the full path serves.
    pub fn record_answer(&mut self, origin: usize, now_ms: u64) {
        self.health.record_success(origin, now_ms);
    }

    /// Whether a colo read could change where a request goes: some origin
    /// is down here, or `waiting` says an attempt has been outstanding for
    /// longer than [`Isolate::suspect_after`] (asked only when no origin is
    /// down: the shell asks JS). See the module's header.
    pub fn colo_read_wanted(&self, waiting: impl FnOnce() -> bool) -> bool {
        self.first_down().is_some() || waiting()
    }

    /// Whether the colo's verdicts are due to be read (the read period has
    /// passed, and the read is wanted: `waiting` is asked only then),
    /// without taking the read (`take_colo_read` does); never with
    /// `COLO_HEALTH=off`.
    pub fn colo_read_due(&self, now_ms: u64, waiting: impl FnOnce() -> bool) -> bool {
        self.colo_reads.as_ref().is_some_and(|c| c.is_due(now_ms)) && self.colo_read_wanted(waiting)
    }

    /// When the read period next allows a colo read, wanted or not
    /// (`u64::MAX` with `COLO_HEALTH=off`): the fast path starts one from
    /// then on for an attempt that has waited too long.
    pub fn colo_due_ms(&self) -> u64 {
        self.colo_reads
            .as_ref()
            .map_or(u64::MAX, Cadence::next_due_ms)
    }

    /// How long an attempt may wait for its answer before a colo read is
    /// wanted (`shared::suspect_after`).
    pub fn suspect_after(&self) -> Duration {
        self.suspect_after
    }

    /// Bodies held for replay across the isolate's requests.
    pub fn budget(&self) -> &ReplayBudget {
        &self.budget
    }

    /// The replay budget, to hold or release bytes.
    pub fn budget_mut(&mut self) -> &mut ReplayBudget {
        &mut self.budget
    }

    /// Every origin's affinity cookie value, by index, made once.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// Origin `origin`'s colo cache key (`shared::colo_key`), made once.
    pub fn colo_key(&self, origin: usize) -> Option<&str> {
        self.colo_keys.get(origin).map(String::as_str)
    }

    /// Every origin's colo cache key, by index.
    pub fn colo_keys(&self) -> &[String] {
        &self.colo_keys
    }

    /// True (and the next read is scheduled) when the colo's verdicts are
    /// due to be read (`colo_read_due`); never with `COLO_HEALTH=off`.
    pub fn take_colo_read(&mut self, now_ms: u64, waiting: impl FnOnce() -> bool) -> bool {
        if !self.colo_read_due(now_ms, waiting) {
            return false;
        }
        self.colo_reads.as_mut().is_some_and(|c| c.take(now_ms))
    }

    /// True (and the next one is scheduled) when the global checker is due
    /// to be consulted directly: never while its answer comes through the
    /// location's copy (`take_snapshot_read`), nor without a checker.
    pub fn take_global_read(&mut self, now_ms: u64) -> bool {
        self.via_location.is_none() && self.take_direct_read(now_ms)
    }

    /// True (and the next one is scheduled) when the location's copy of the
    /// checker's answer is due to be read: on its own cadence, whether or
    /// not the origins' verdicts are wanted (it carries the overrides).
    pub fn take_snapshot_read(&mut self, now_ms: u64) -> bool {
        self.via_location
            .as_mut()
            .is_some_and(|v| v.reads.take(now_ms))
    }

    /// Whether the location's copy is due to be read, without taking it.
    pub fn snapshot_read_due(&self, now_ms: u64) -> bool {
        self.via_location
            .as_ref()
            .is_some_and(|v| v.reads.is_due(now_ms))
    }

    /// The location's copy's cache key and its claim key, with a checker
    /// and colo health.
    pub fn snapshot_keys(&self) -> Option<(&str, &str)> {
        self.via_location
            .as_ref()
            .map(|v| (v.snapshot_key.as_str(), v.claim_key.as_str()))
    }

    /// True (and the next one is scheduled) when an isolate whose cache
    /// keeps nothing may ask the checker itself: once per interval; never
    /// without a checker.
    pub fn take_direct_read(&mut self, now_ms: u64) -> bool {
        self.global_reads.as_mut().is_some_and(|c| c.take(now_ms))
    }

    /// The overrides this isolate routes by.
    pub fn overrides(&self) -> &Overrides {
        &self.overrides
    }

    /// When the checker made the answer `overrides` came from (0: none yet).
    pub fn overrides_as_of_ms(&self) -> u64 {
        self.overrides_as_of_ms
    }

    /// Every origin's standing as of the last look (`tick_overrides`).
    pub fn standings(&self) -> &[Standing] {
        &self.standings
    }

    /// Takes the overrides of a checker's answer made at `as_of_ms`, unless
    /// this isolate already has a newer answer's; says whether the lease
    /// survives.
    pub fn set_overrides(
        &mut self,
        overrides: Overrides,
        as_of_ms: u64,
        now_ms: u64,
    ) -> LeaseAfter {
        if as_of_ms < self.overrides_as_of_ms || overrides.len() != self.health.len() {
            return LeaseAfter::Stands;
        }
        self.overrides = overrides;
        self.overrides_as_of_ms = as_of_ms;
        self.restand(now_ms)
    }

    /// Looks at the overrides again if one comes into or out of force by
    /// itself by `now_ms` (a TTL ran out, a drain ended); cheap otherwise.
    pub fn tick_overrides(&mut self, now_ms: u64) -> LeaseAfter {
        match self.standings_change_ms {
            Some(at) if now_ms >= at => self.restand(now_ms),
            _ => LeaseAfter::Stands,
        }
    }

    fn restand(&mut self, now_ms: u64) -> LeaseAfter {
        let before = Routing::of(&self.health, &self.standings);
        self.standings = self.overrides.standings(now_ms);
        self.standings_change_ms = self.overrides.next_change_ms(now_ms);
        if Routing::of(&self.health, &self.standings).moved_from(&before) {
            LeaseAfter::Revoked
        } else {
            LeaseAfter::Stands
        }
    }

    /// Whether some override is in force.
    pub fn overrides_in_force(&self) -> bool {
        self.standings.iter().any(|&s| s != Standing::Auto)
    }

    /// Whether a request not pinned anywhere may go to `origin` now: up (or
    /// forced up) and not held by an override.
    pub fn routable(&self, origin: usize) -> bool {
        self.standing(origin)
            .routable(self.health.is_up(origin), false)
    }

    /// Whether an override lets requests be meant for `origin`.
    pub fn intendable(&self, origin: usize) -> bool {
        self.standing(origin).intendable()
    }

    fn standing(&self, origin: usize) -> Standing {
        self.standings
            .get(origin)
            .copied()
            .unwrap_or(Standing::Auto)
    }

    /// When the next piece of periodic work falls due without another
    /// change: a colo read (while some origin is down), a checker
    /// consultation (with a checker) or a probe of a down origin (0 when
    /// one has never run); `u64::MAX` when nothing can fall due by itself
    /// (no checker, every origin up, no override to run out).
    pub fn next_due_ms(&self) -> u64 {
        // The origins' verdicts only while a read is wanted without an
        // attempt waiting (one that waits starts it from `colo_due_ms`). The
        // location's copy of the checker's answer keeps its own cadence (it
        // carries overrides); a direct consultation is not due while it
        // runs, nor ever without a checker.
        let colo = self
            .colo_reads
            .as_ref()
            .filter(|_| self.colo_read_wanted(|| false));
        let (direct, snapshot) = match &self.via_location {
            Some(v) => (None, Some(v.reads.next_due_ms())),
            None => (self.global_reads.as_ref().map(Cadence::next_due_ms), None),
        };
        [
            colo.map(Cadence::next_due_ms),
            direct,
            snapshot,
            self.health.next_probe_ms(),
            self.standings_change_ms,
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(u64::MAX)
    }

    /// The fast path's lease: the first origin requests may go to, and when
    /// periodic work is next due. None when no origin may take requests (the
    /// full path walks them all, held ones first, and waits for the colo's
    /// verdicts first: one may say an origin is back), while an origin
    /// drains under affinity (its pinned requests are the full path's), and
    /// while a slow-start ramp is in effect at `now_ms` (the full path holds
    /// requests back; the fast path, which knows nothing of ramps, gets its
    /// lease again once the ramp is over).
    pub fn lease(&self, now_ms: u64) -> Option<Lease> {
        if self.pins && self.standings.contains(&Standing::Draining) {
            return None;
        }
        let n = self.health.len();
        let origin = (0..n).find(|&i| self.routable(i))?;
        if self.ramp_in_effect(now_ms) {
            return None;
        }
        let intended = (0..n).find(|&i| self.intendable(i)).unwrap_or(0);
        Some(Lease {
            origin,
            work_due_ms: self.next_due_ms(),
            failover: origin != intended,
            colo_due_ms: self.colo_due_ms(),
        })
    }

    /// Site `site`'s part of the fast path's lease when there are several
    /// sites: the first of its origins requests may go to, and whether it
    /// is not the one they are meant for. None (the full path takes the
    /// site's requests) when the site routes each request itself (a
    /// steering policy, affinity, an Access token: the fast path's own
    /// routing knows one site only), when none of its origins may take
    /// requests, or while a slow-start ramp is in effect among them.
    pub fn site_lease(&self, site: usize, now_ms: u64) -> Option<SiteLease> {
        let rules = self.sites.get(site)?;
        if !rules.plain {
            return None;
        }
        let origin = rules.origins.clone().find(|&i| self.routable(i))?;
        if rules.slow_start.is_on() {
            let tier: Vec<f64> = rules
                .origins
                .clone()
                .filter(|&i| self.routable(i))
                .map(|i| {
                    if self.standing(i).ramps() {
                        rules.slow_start.share(self.health.up_since_ms(i), now_ms)
                    } else {
                        1.0
                    }
                })
                .collect();
            if slow_start::in_effect(Policy::Failover, &tier) {
                return None;
            }
        }
        let intended = rules
            .origins
            .clone()
            .find(|&i| self.intendable(i))
            .unwrap_or(rules.origins.start);
        Some(SiteLease {
            origin,
            failover: origin != intended,
        })
    }

    /// Whether a slow-start ramp can move a request at `now_ms`
    /// (`slow_start::in_effect` over the origins the policy picks from that
    /// requests may go to, overrides folded in as `route_ramped` folds
    /// them: only an `auto` origin ramps). Nothing to compute with slow
    /// start off.
    pub fn ramp_in_effect(&self, now_ms: u64) -> bool {
        if !self.slow_start.is_on() {
            return false;
        }
        let tier: Vec<f64> = (0..self.health.len())
            .filter(|&i| {
                let weighted = self.weights.get(i).is_some_and(|&w| w > 0);
                self.routable(i) && (self.policy == Policy::Failover || weighted)
            })
            .map(|i| {
                if self.standing(i).ramps() {
                    self.slow_start.share(self.health.up_since_ms(i), now_ms)
                } else {
                    1.0
                }
            })
            .collect();
        slow_start::in_effect(self.policy, &tier)
    }

    /// The first origin the health map calls up, in priority order.
    pub fn first_up(&self) -> Option<usize> {
        (0..self.health.len()).find(|&i| self.health.is_up(i))
    }

    /// Whether the site is up somewhere, for the fallback page
    /// (`fallback::serves`: an app's 5xx stays the client's answer then):
    /// an origin the health map calls up, or one an operator forced up,
    /// whose word stands against the checks.
    pub fn any_serving(&self) -> bool {
        self.any_serving_in(0..self.health.len())
    }

    /// [`Isolate::any_serving`] among the origins `origins` (one site's,
    /// by global index).
    pub fn any_serving_in(&self, origins: std::ops::Range<usize>) -> bool {
        origins
            .into_iter()
            .any(|i| self.health.is_up(i) || self.standings.get(i) == Some(&Standing::ForcedUp))
    }

    /// The first origin the health map calls down.
    fn first_down(&self) -> Option<usize> {
        (0..self.health.len()).find(|&i| !self.health.is_up(i))
    }
}

/// What the fast path's lease depends on: the health map and the overrides.
#[derive(PartialEq, Eq)]
struct Routing {
    up: Vec<bool>,
    /// When each origin came back up: a new one may start a slow-start
    /// ramp without any verdict flipping here (another isolate's "up").
    up_since: Vec<Option<u64>>,
    next_probe_ms: Option<u64>,
    standings: Vec<Standing>,
}

impl Routing {
    fn of(health: &HealthMap, standings: &[Standing]) -> Routing {
        Routing {
            up: (0..health.len()).map(|i| health.is_up(i)).collect(),
            up_since: (0..health.len()).map(|i| health.up_since_ms(i)).collect(),
            next_probe_ms: health.next_probe_ms(),
            standings: standings.to_vec(),
        }
    }

    /// A verdict flipped, an origin came back up (a ramp may have begun),
    /// or a probe fell due earlier than the lease knew.
    fn moved_from(&self, before: &Routing) -> bool {
        let earlier = match (self.next_probe_ms, before.next_probe_ms) {
            (Some(now), Some(then)) => now < then,
            (Some(_), None) => true,
            (None, _) => false,
        };
        self.up != before.up
            || self.up_since != before.up_since
            || self.standings != before.standings
            || earlier
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::classify::Failure;
    use crate::edge::time::millis;

    fn config(vars: &[(&str, &str)]) -> WorkerConfig {
        WorkerConfig::from_vars(|k| {
            if k == "ORIGINS" {
                return Some(
                    r#"[{"name":"a","url":"https://a.example"},{"name":"b","url":"https://b.example"}]"#
                        .to_string(),
                );
            }
            vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        })
        .unwrap()
    }

    #[test]
    fn each_plain_site_gets_its_own_part_of_the_lease() {
        let sites = r#"[
          {"name":"www","hosts":["www.example"],"origins":[
            {"name":"w1","url":"https://w1.example"},{"name":"w2","url":"https://w2.example"}]},
          {"name":"git","hosts":["git.example"],"steering":"weighted","origins":[
            {"name":"g1","url":"https://g1.example"},{"name":"g2","url":"https://g2.example"}]},
          {"name":"dash","hosts":["dash.example"],"origins":[
            {"name":"d1","url":"https://d1.example"},{"name":"d2","url":"https://d2.example"}]}
        ]"#;
        let c = WorkerConfig::from_vars(|k| (k == "SITES").then(|| sites.to_string())).unwrap();
        let mut isolate = Isolate::new(&c);
        let lease = |i: &Isolate| (0..3).map(|s| i.site_lease(s, 0)).collect::<Vec<_>>();
        let at = |origin, failover| Some(SiteLease { origin, failover });
        assert_eq!(
            lease(&isolate),
            [at(0, false), None, at(4, false)],
            "git steers itself"
        );
        isolate.change_health(|h| h.record_failure(4, Failure::Refused, 1_000));
        assert_eq!(lease(&isolate), [at(0, false), None, at(5, true)]);
        isolate.change_health(|h| h.record_failure(5, Failure::Refused, 1_000));
        assert_eq!(lease(&isolate), [at(0, false), None, None], "dash: none up");
        assert_eq!(isolate.site_lease(3, 0), None, "no such site");
    }

    /// An isolate with the global checker bound (its id "abc").
    fn checked(vars: &[(&str, &str)]) -> Isolate {
        let c = config(vars);
        Isolate::new(&c).with_checker(&c, "abc")
    }

    fn lease(origin: usize, work_due_ms: u64, colo_due_ms: u64) -> Option<Lease> {
        Some(Lease {
            origin,
            work_due_ms,
            failover: origin != 0,
            colo_due_ms,
        })
    }

    /// No attempt has waited `suspect_after`.
    fn not_waiting() -> bool {
        false
    }

    /// An attempt has.
    fn waiting() -> bool {
        true
    }

    #[test]
    fn a_fresh_isolate_leases_at_once_with_the_consultation_beside_it() {
        for isolate in [checked(&[]), checked(&[("COLO_HEALTH", "off")])] {
            assert_eq!(isolate.next_due_ms(), 0, "the first consultation");
            let colo_due = isolate.colo_due_ms();
            assert_eq!(isolate.lease(0), lease(0, 0, colo_due));
        }
    }

    /// Without a checker (no `HEALTH_CHECKER` binding) there is nothing to
    /// consult: no consultation is ever due, so while every origin is up
    /// and no override can run out, no periodic work falls due at all and
    /// the fast path never enters Wasm for it (it did once per interval,
    /// ~2k instructions per sparse request; bench/README.md). What an
    /// isolate without a checker still does periodically comes from its
    /// own map: a down origin's probe, the colo read that may say it is
    /// back.
    #[test]
    fn without_a_checker_nothing_is_due_while_every_origin_is_up() {
        for colo in ["on", "off"] {
            let mut isolate = Isolate::new(&config(&[
                ("COLO_HEALTH", colo),
                ("HEALTH_INTERVAL_MS", "15000"),
            ]));
            assert_eq!(isolate.next_due_ms(), u64::MAX, "colo {colo}");
            let colo_due = isolate.colo_due_ms();
            assert_eq!(isolate.lease(0), lease(0, u64::MAX, colo_due));
            assert!(!isolate.take_global_read(0), "no checker to consult");
            assert!(!isolate.take_direct_read(0), "nor to ask directly");
            assert!(!isolate.take_snapshot_read(0), "nor a copy of its answer");
            assert_eq!(isolate.lease(1_000_000), lease(0, u64::MAX, colo_due));
            isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 1_000));
            let down = isolate.next_due_ms();
            if colo == "on" {
                assert_eq!(down, 0, "the colo may say a is back");
            } else {
                assert_eq!(down, 16_000, "a's probe");
            }
        }
        // The checker bound: its consultation is due from the start.
        assert_eq!(checked(&[("COLO_HEALTH", "off")]).next_due_ms(), 0);
    }

    #[test]
    fn all_up_the_colo_is_read_only_for_an_attempt_that_waits() {
        let mut isolate = Isolate::new(&config(&[("HEALTH_INTERVAL_MS", "15000")]));
        assert!(
            !isolate.colo_read_due(1_000, not_waiting),
            "it could tell nothing"
        );
        assert!(!isolate.take_colo_read(1_000, not_waiting));
        assert_eq!(isolate.next_due_ms(), u64::MAX, "nothing else is due");
        assert_eq!(isolate.lease(0), lease(0, u64::MAX, 0));
        assert!(isolate.take_colo_read(1_000, waiting));
        assert!(
            !isolate.take_colo_read(1_100, waiting),
            "at most every 250 ms"
        );
        assert_eq!(isolate.lease(0), lease(0, u64::MAX, 1_250));
        assert!(isolate.take_colo_read(1_300, waiting));
        assert_eq!(isolate.lease(0), lease(0, u64::MAX, 1_550));
    }

    #[test]
    fn an_attempt_waits_a_read_period_or_half_its_timeout_before_a_read() {
        let suspect = |vars: &[(&str, &str)]| Isolate::new(&config(vars)).suspect_after();
        assert_eq!(suspect(&[]), Duration::from_millis(250));
        assert_eq!(
            suspect(&[("ATTEMPT_TIMEOUT_MS", "300")]),
            Duration::from_millis(150)
        );
        assert_eq!(
            suspect(&[("HEALTH_INTERVAL_MS", "100")]),
            Duration::from_millis(100)
        );
    }

    #[test]
    fn with_an_origin_down_the_colo_is_read_every_period() {
        let mut isolate = Isolate::new(&config(&[("HEALTH_INTERVAL_MS", "15000")]));
        let (flip, _) = isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 1_000));
        assert!(flip.is_some());
        // The colo may say a is back before a's own probe does.
        assert!(isolate.colo_read_due(1_000, not_waiting));
        assert_eq!(isolate.lease(0), lease(1, 0, 0));
        assert!(isolate.take_colo_read(1_000, not_waiting));
        assert_eq!(isolate.lease(0), lease(1, 1_250, 1_250));
        assert!(!isolate.take_colo_read(1_200, not_waiting));
        assert!(isolate.take_colo_read(1_250, not_waiting));
    }

    #[test]
    fn colo_off_reads_nothing_and_the_checker_alone_sets_the_pace() {
        let mut isolate = checked(&[("COLO_HEALTH", "off"), ("HEALTH_INTERVAL_MS", "15000")]);
        assert!(!isolate.take_colo_read(0, waiting));
        assert!(isolate.take_global_read(1_000));
        assert_eq!(isolate.lease(0), lease(0, 16_000, u64::MAX));
        isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 2_000));
        assert!(!isolate.take_colo_read(2_000, not_waiting));
    }

    #[test]
    fn a_flip_revokes_the_lease_and_a_counter_does_not() {
        let mut isolate = checked(&[("COLO_HEALTH", "off")]);
        isolate.take_global_read(0);
        let (_, after) = isolate.change_health(|h| h.record_success(0, 10));
        assert_eq!(after, LeaseAfter::Stands);
        let (flip, after) = isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 20));
        assert!(flip.is_some());
        assert_eq!(after, LeaseAfter::Revoked);
        // b serves now. Work is next due at the checker's consultation, just
        // before a's probe (one interval after the flip).
        assert_eq!(isolate.lease(0), lease(1, 15_000, u64::MAX));
        assert_eq!(isolate.health().next_probe_ms(), Some(15_020));
        let (_, after) = isolate.change_health(|h| h.record_failure(1, Failure::Refused, 40));
        assert_eq!(after, LeaseAfter::Revoked);
        assert_eq!(
            isolate.lease(0),
            None,
            "no origin up: the full path walks them all"
        );
    }

    #[test]
    fn no_lease_while_a_ramp_can_move_a_request() {
        use crate::edge::shared::{SharedVerdict, Source};
        use crate::streak::Verdict;
        let mut isolate = checked(&[
            ("COLO_HEALTH", "off"),
            ("HEALTH_RISE", "1"),
            ("SLOW_START_S", "60"),
        ]);
        isolate.take_global_read(0);
        let (_, after) = isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 1_000));
        assert_eq!(after, LeaseAfter::Revoked);
        assert_eq!(isolate.lease(2_000), lease(1, 15_000, u64::MAX), "b serves");
        let (_, after) = isolate.change_health(|h| h.record_probe(0, None, 16_000));
        assert_eq!(after, LeaseAfter::Revoked, "a came back: its ramp begins");
        for now in [16_000, 30_000, 75_999] {
            assert!(isolate.ramp_in_effect(now), "{now}");
            assert_eq!(isolate.lease(now), None, "{now}: the full path routes");
        }
        assert!(!isolate.ramp_in_effect(76_000));
        assert_eq!(
            isolate.lease(76_000),
            lease(0, 15_000, u64::MAX),
            "the ramp is over"
        );
        // With b down there is no one to hold a back for: no ramp in effect.
        isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 80_000));
        isolate.change_health(|h| h.record_probe(0, None, 95_000));
        isolate.change_health(|h| h.record_failure(1, Failure::Timeout, 96_000));
        assert!(!isolate.ramp_in_effect(96_000));
        assert_eq!(isolate.lease(96_000), lease(0, 15_000, u64::MAX));
        // Another isolate's news that b came back (this one never saw it
        // down and up) revokes the lease and starts b's ramp, which under
        // failover moves no request while a serves.
        let mut cold = Isolate::new(&config(&[("COLO_HEALTH", "off"), ("SLOW_START_S", "60")]));
        cold.take_global_read(0);
        let back = SharedVerdict {
            verdict: Verdict::Up,
            since_ms: 100_000,
            confirmed_ms: 100_000,
        };
        let (_, after) = cold
            .change_health(|h| h.adopt(1, back, Source::Global, 100_500, Duration::from_secs(30)));
        assert_eq!(after, LeaseAfter::Revoked);
        assert!(
            !cold.ramp_in_effect(100_500),
            "failover: a serves, b's ramp moves nothing"
        );
        let weighted = Isolate::new(&config(&[("STEERING", "weighted"), ("SLOW_START_S", "60")]));
        let mut weighted = weighted;
        weighted
            .change_health(|h| h.adopt(1, back, Source::Colo, 100_500, Duration::from_secs(30)));
        assert!(
            weighted.ramp_in_effect(100_500),
            "weighted: b's share is held back"
        );
        assert_eq!(weighted.lease(100_500), None);
        // Slow start off: never.
        let mut off = Isolate::new(&config(&[("STEERING", "weighted")]));
        off.change_health(|h| h.adopt(1, back, Source::Colo, 100_500, Duration::from_secs(30)));
        assert!(!off.ramp_in_effect(100_500));
        assert!(off.lease(100_500).is_some());
    }

    #[test]
    fn an_answer_is_evidence_and_colo_reads_can_be_peeked() {
        let mut isolate = Isolate::new(&config(&[]));
        isolate.record_answer(0, 5_000);
        assert!(isolate.colo_read_due(5_000, waiting));
        assert!(
            isolate.colo_read_due(5_000, waiting),
            "peeking takes nothing"
        );
        assert!(isolate.take_colo_read(5_000, waiting));
        assert!(!isolate.colo_read_due(5_100, waiting));
        let off = Isolate::new(&config(&[("COLO_HEALTH", "off")]));
        assert!(!off.colo_read_due(0, waiting));
    }

    #[test]
    fn own_flips_are_kept_newest_first_and_only_the_last_twenty() {
        let mut isolate = Isolate::new(&config(&[]));
        for n in 0..25u64 {
            let (flip, _) = isolate.change_health(|h| {
                if n % 2 == 0 {
                    h.record_failure(1, Failure::Refused, n)
                } else {
                    h.adopt(
                        1,
                        crate::edge::shared::SharedVerdict {
                            verdict: crate::streak::Verdict::Up,
                            since_ms: n * 1000,
                            confirmed_ms: n * 1000,
                        },
                        crate::edge::shared::Source::Colo,
                        n * 1000,
                        Duration::from_secs(60),
                    )
                }
            });
            isolate.record_change(&flip.expect("flips"), n * 1000);
        }
        let recent: Vec<&Event> = isolate.recent_changes().collect();
        assert_eq!(recent.len(), RECENT_CHANGES);
        assert_eq!(recent[0].id, "isolate-25");
        assert_eq!(recent[0].origin.as_deref(), Some("b"));
        assert_eq!(recent[0].kind, crate::notify::Kind::OriginDown);
        assert_eq!(recent[0].reason, "refused");
        assert_eq!(recent[1].reason, "colo verdict");
    }

    #[test]
    fn the_checker_hears_of_an_origin_at_most_every_few_seconds() {
        let mut isolate = Isolate::new(&config(&[]));
        let every = millis(REPORT_EVERY);
        assert!(isolate.take_checker_report(0, 1_000));
        assert!(!isolate.take_checker_report(0, 1_000 + every - 1));
        assert!(isolate.take_checker_report(1, 1_001), "per origin");
        assert!(isolate.take_checker_report(0, 1_000 + every));
        assert!(!isolate.take_checker_report(9, 0), "no such origin");
    }

    #[test]
    fn tokens_and_colo_keys_are_made_once_per_origin() {
        let c = config(&[]);
        let isolate = Isolate::new(&c);
        assert_eq!(isolate.tokens(), affinity::tokens(&c.origins).as_slice());
        assert_eq!(isolate.colo_key(1), Some(colo_key(&c.origins[1]).as_str()));
        assert_eq!(isolate.colo_key(2), None);
    }

    fn table(n: usize, set: &[(usize, crate::edge::overrides::Override)]) -> Overrides {
        let mut t = Overrides::none(n);
        for (i, o) in set {
            t.set(*i, *o);
        }
        t
    }

    fn over(
        mode: crate::edge::overrides::Mode,
        expires_at_ms: Option<u64>,
        drain_s: u64,
    ) -> crate::edge::overrides::Override {
        crate::edge::overrides::Override {
            mode,
            set_at_ms: 1_000,
            expires_at_ms,
            drain: Duration::from_secs(drain_s),
        }
    }

    /// Each mode moves the lease (or ends it), the change revokes the lease
    /// in force, and a TTL brings it back by itself at the instant
    /// `next_due_ms` names.
    #[test]
    fn overrides_move_the_lease_and_expire_by_themselves() {
        use crate::edge::overrides::Mode;
        let mut isolate = checked(&[("COLO_HEALTH", "off")]);
        isolate.take_global_read(0);
        let disabled = table(2, &[(0, over(Mode::Disable, Some(60_000), 0))]);
        assert_eq!(
            isolate.set_overrides(disabled, 2_000, 2_000),
            LeaseAfter::Revoked
        );
        let moved = isolate.lease(0).expect("b takes requests");
        assert_eq!(
            (moved.origin, moved.failover),
            (1, false),
            "moved on purpose: no x-failover"
        );
        assert_eq!(
            moved.work_due_ms, 15_000,
            "the checker's consultation comes first"
        );
        assert_eq!(isolate.tick_overrides(59_999), LeaseAfter::Stands);
        assert_eq!(
            isolate.tick_overrides(60_000),
            LeaseAfter::Revoked,
            "the TTL ran out"
        );
        assert_eq!(isolate.lease(0).map(|l| l.origin), Some(0));
        assert!(!isolate.overrides_in_force());

        // An older answer (a slower cache) does not undo a newer one.
        let none = table(2, &[]);
        assert_eq!(
            isolate.set_overrides(none, 1_999, 61_000),
            LeaseAfter::Stands
        );

        // Force-up beats a down verdict, and is no failover.
        isolate.change_health(|h| {
            h.record_failure(0, crate::edge::classify::Failure::Timeout, 61_000)
        });
        assert_eq!(
            isolate.lease(0).map(|l| (l.origin, l.failover)),
            Some((1, true))
        );
        let forced = table(2, &[(0, over(Mode::ForceUp, None, 0))]);
        assert_eq!(
            isolate.set_overrides(forced, 3_000, 61_000),
            LeaseAfter::Revoked
        );
        assert_eq!(
            isolate.lease(0).map(|l| (l.origin, l.failover)),
            Some((0, false))
        );

        // Both held: no lease; the full path walks them, held ones first.
        let held = table(
            2,
            &[
                (0, over(Mode::Disable, None, 0)),
                (1, over(Mode::Drain, None, 0)),
            ],
        );
        isolate.set_overrides(held, 4_000, 61_000);
        assert_eq!(isolate.lease(0), None);
    }

    /// Overrides × slow start: a ramp keeps the lease from the fast path
    /// only where it can move a request, overrides folded in as
    /// `route_ramped` folds them.
    #[test]
    fn overrides_fold_into_whether_a_ramp_is_in_effect() {
        use crate::edge::overrides::Mode;
        let mut isolate = Isolate::new(&config(&[
            ("COLO_HEALTH", "off"),
            ("HEALTH_RISE", "1"),
            ("SLOW_START_S", "60"),
        ]));
        isolate.take_global_read(0);
        isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 1_000));
        isolate.change_health(|h| h.record_probe(0, None, 16_000));
        assert_eq!(isolate.lease(20_000), None, "a ramps up against b");
        // Forced up: a gets all of its requests at once.
        let forced = table(2, &[(0, over(Mode::ForceUp, None, 0))]);
        assert_eq!(
            isolate.set_overrides(forced, 2_000, 20_000),
            LeaseAfter::Revoked
        );
        assert!(!isolate.ramp_in_effect(20_000));
        assert_eq!(
            isolate.lease(20_000).map(|l| (l.origin, l.failover)),
            Some((0, false))
        );
        // b disabled: nobody to hold a back to, so no ramp.
        let b_held = table(2, &[(1, over(Mode::Disable, None, 0))]);
        isolate.set_overrides(b_held, 3_000, 20_000);
        assert!(!isolate.ramp_in_effect(20_000));
        assert_eq!(isolate.lease(20_000).map(|l| l.origin), Some(0));
        // a disabled: b serves, and a's ramp brings nothing back to it.
        let a_held = table(2, &[(0, over(Mode::Disable, Some(40_000), 0))]);
        isolate.set_overrides(a_held, 4_000, 20_000);
        assert_eq!(
            isolate.lease(20_000).map(|l| (l.origin, l.failover)),
            Some((1, false))
        );
        // Auto again by its TTL, within the window of a's up verdict: the
        // ramp from that verdict goes on to its end (the override itself
        // starts none).
        assert_eq!(isolate.tick_overrides(40_000), LeaseAfter::Revoked);
        assert!(isolate.ramp_in_effect(40_000));
        assert_eq!(isolate.lease(40_000), None);
        assert_eq!(isolate.lease(76_000).map(|l| l.origin), Some(0));
    }

    #[test]
    fn a_forced_up_origin_keeps_the_site_up_for_the_fallback_page() {
        use crate::edge::overrides::Mode;
        let mut isolate = Isolate::new(&config(&[("COLO_HEALTH", "off")]));
        assert!(isolate.any_serving());
        isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 1_000));
        isolate.change_health(|h| h.record_failure(1, Failure::Timeout, 1_000));
        assert!(!isolate.any_serving(), "every origin down");
        let forced = table(2, &[(1, over(Mode::ForceUp, Some(60_000), 0))]);
        isolate.set_overrides(forced, 2_000, 2_000);
        assert!(isolate.any_serving());
        isolate.tick_overrides(60_000);
        assert!(!isolate.any_serving(), "the force-up ran out");
        // A disabled origin that is up still counts: the walk tries it last.
        let mut held = Isolate::new(&config(&[]));
        held.change_health(|h| h.record_failure(0, Failure::Timeout, 1_000));
        held.set_overrides(table(2, &[(1, over(Mode::Disable, None, 0))]), 2_000, 2_000);
        assert!(held.any_serving());
    }

    #[test]
    fn a_drain_under_affinity_leaves_the_pins_to_the_full_path_until_it_ends() {
        use crate::edge::overrides::Mode;
        let mut isolate = Isolate::new(&config(&[("AFFINITY", "cookie")]));
        let drain = table(2, &[(0, over(Mode::Drain, None, 30))]);
        isolate.set_overrides(drain.clone(), 1_000, 2_000);
        assert_eq!(
            isolate.lease(0),
            None,
            "pinned clients keep the draining origin"
        );
        assert!(
            isolate.next_due_ms() <= 31_000,
            "the drain's end is due work"
        );
        assert_eq!(isolate.tick_overrides(31_000), LeaseAfter::Revoked);
        assert_eq!(
            isolate.lease(0).map(|l| (l.origin, l.failover)),
            Some((1, false))
        );
        // Without affinity a drain is a hold at once.
        let mut plain = Isolate::new(&config(&[]));
        plain.set_overrides(drain, 1_000, 2_000);
        assert_eq!(plain.lease(0).map(|l| l.origin), Some(1));
    }

    #[test]
    fn with_a_checker_and_colo_health_the_location_s_copy_replaces_direct_reads() {
        let c = config(&[("HEALTH_INTERVAL_MS", "15000")]);
        let mut isolate = Isolate::new(&c).with_checker(&c, "abc");
        assert!(!isolate.take_global_read(0), "never directly, by cadence");
        assert!(isolate.snapshot_read_due(0));
        assert!(isolate.take_snapshot_read(0));
        assert!(!isolate.snapshot_read_due(999));
        assert!(!isolate.take_snapshot_read(999));
        // Every origin up and no attempt waiting: the origins' verdicts are
        // not wanted, but the copy (overrides ride in it) keeps its cadence.
        assert!(!isolate.colo_read_due(1_000, not_waiting));
        assert_eq!(isolate.next_due_ms(), 1_000);
        assert!(isolate.take_snapshot_read(1_000));
        assert!(
            isolate.take_direct_read(0),
            "a cache that keeps nothing: once per interval"
        );
        assert!(!isolate.take_direct_read(14_999));
        assert!(isolate
            .snapshot_keys()
            .is_some_and(|(s, c)| s.ends_with("/abc") && c.ends_with("/abc")));
        let off = config(&[("COLO_HEALTH", "off")]);
        let mut direct = Isolate::new(&off).with_checker(&off, "abc");
        assert!(direct.take_global_read(0));
        assert!(!direct.take_snapshot_read(0));
        assert_eq!(direct.snapshot_keys(), None);
    }
}
