//! Everything one Worker isolate keeps between requests, and the two
//! questions its shell asks of it: which origin the fast path may send
//! requests to on its own (the [`Lease`], good until a change to the health
//! map revokes it), and when periodic work (a probe, a colo read, a checker
//! consultation) is next due. Periodic work ends no lease: the request that
//! finds it due is sent as usual, and the work runs beside it, in the
//! background (`ctx.waitUntil`), so no request waits for a cache read.
//!
//! A colo read is due only when it can change where a request goes
//! ([`Isolate::colo_read_wanted`]): while some origin is down here (the
//! colo may know it is back), or while an attempt has waited longer than
//! [`shared::suspect_after`] for its answer (another isolate may already
//! have found the origin dead). A read beside a request never helps that
//! request, only the ones after it; when every origin is up and answers
//! promptly, a read can tell the isolate nothing its own next attempt would
//! not, and a small site paid one on nearly every request (two Cache API
//! matches, most of a request's cost; see bench/README.md). The edge's
//! counterpart of `node::Node`, in quinn-proto's shape: the machine owns its
//! clocks and answers `next_due_ms`; the shell (src/isolate.rs) holds it in
//! a `RefCell`, never across an `.await`, and carries out what it says.

use std::time::Duration;

use crate::edge::affinity;
use crate::edge::budget::ReplayBudget;
use crate::edge::config::WorkerConfig;
use crate::edge::health::HealthMap;
use crate::edge::shared::{self, colo_key, colo_read_every, Cadence};

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
    /// When the global checker is next consulted.
    global_reads: Cadence,
    budget: ReplayBudget,
    tokens: Vec<String>,
    colo_keys: Vec<String>,
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
    /// The first healthy origin, in priority order.
    pub origin: usize,
    /// When periodic work is next due (`Isolate::next_due_ms`).
    pub work_due_ms: u64,
    /// When a colo read may next start for a waiting attempt
    /// (`Isolate::colo_due_ms`); `u64::MAX` with `COLO_HEALTH=off`.
    pub colo_due_ms: u64,
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
            global_reads: Cadence::new(interval),
            budget: ReplayBudget::new(config.replay_buffer_budget_bytes),
            tokens: affinity::tokens(&config.origins),
            colo_keys: config.origins.iter().map(colo_key).collect(),
        }
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
        let before = Routing::of(&self.health);
        let result = change(&mut self.health);
        let after = if Routing::of(&self.health).moved_from(&before) {
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
    /// to be consulted.
    pub fn take_global_read(&mut self, now_ms: u64) -> bool {
        self.global_reads.take(now_ms)
    }

    /// When the next piece of periodic work falls due without another
    /// change: a colo read (while some origin is down), a checker
    /// consultation or a probe of a down origin (0 when one has never run).
    pub fn next_due_ms(&self) -> u64 {
        let colo = self
            .colo_reads
            .as_ref()
            .filter(|_| self.colo_read_wanted(|| false));
        [
            colo.map(Cadence::next_due_ms),
            Some(self.global_reads.next_due_ms()),
            self.health.next_probe_ms(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(u64::MAX)
    }

    /// The fast path's lease: the first healthy origin, and when periodic
    /// work is next due. None when no origin is up (the full path walks
    /// them all, and waits for the colo's verdicts first: one may say an
    /// origin is back).
    pub fn lease(&self) -> Option<Lease> {
        let origin = self.first_up()?;
        Some(Lease {
            origin,
            work_due_ms: self.next_due_ms(),
            colo_due_ms: self.colo_due_ms(),
        })
    }

    /// The first origin the health map calls up, in priority order.
    pub fn first_up(&self) -> Option<usize> {
        (0..self.health.len()).find(|&i| self.health.is_up(i))
    }

    /// The first origin the health map calls down.
    fn first_down(&self) -> Option<usize> {
        (0..self.health.len()).find(|&i| !self.health.is_up(i))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::classify::Failure;

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

    fn lease(origin: usize, work_due_ms: u64, colo_due_ms: u64) -> Option<Lease> {
        Some(Lease {
            origin,
            work_due_ms,
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
        let isolate = Isolate::new(&config(&[]));
        assert_eq!(isolate.next_due_ms(), 0, "the first consultation");
        assert_eq!(isolate.lease(), lease(0, 0, 0));
    }

    #[test]
    fn all_up_the_colo_is_read_only_for_an_attempt_that_waits() {
        let mut isolate = Isolate::new(&config(&[("HEALTH_INTERVAL_MS", "15000")]));
        assert!(isolate.take_global_read(1_000));
        assert!(
            !isolate.colo_read_due(1_000, not_waiting),
            "it could tell nothing"
        );
        assert!(!isolate.take_colo_read(1_000, not_waiting));
        assert_eq!(isolate.next_due_ms(), 16_000, "the consultation alone");
        assert_eq!(isolate.lease(), lease(0, 16_000, 0));
        assert!(isolate.take_colo_read(1_000, waiting));
        assert!(
            !isolate.take_colo_read(1_100, waiting),
            "at most every 250 ms"
        );
        assert_eq!(isolate.lease(), lease(0, 16_000, 1_250));
        assert!(isolate.take_colo_read(1_300, waiting));
        assert_eq!(isolate.lease(), lease(0, 16_000, 1_550));
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
        assert!(isolate.take_global_read(0));
        let (flip, _) = isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 1_000));
        assert!(flip.is_some());
        // The colo may say a is back before a's own probe does.
        assert!(isolate.colo_read_due(1_000, not_waiting));
        assert_eq!(isolate.lease(), lease(1, 0, 0));
        assert!(isolate.take_colo_read(1_000, not_waiting));
        assert_eq!(isolate.lease(), lease(1, 1_250, 1_250));
        assert!(!isolate.take_colo_read(1_200, not_waiting));
        assert!(isolate.take_colo_read(1_250, not_waiting));
    }

    #[test]
    fn colo_off_reads_nothing_and_the_checker_alone_sets_the_pace() {
        let mut isolate = Isolate::new(&config(&[
            ("COLO_HEALTH", "off"),
            ("HEALTH_INTERVAL_MS", "15000"),
        ]));
        assert!(!isolate.take_colo_read(0, waiting));
        assert!(isolate.take_global_read(1_000));
        assert_eq!(isolate.lease(), lease(0, 16_000, u64::MAX));
        isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 2_000));
        assert!(!isolate.take_colo_read(2_000, not_waiting));
    }

    #[test]
    fn a_flip_revokes_the_lease_and_a_counter_does_not() {
        let mut isolate = Isolate::new(&config(&[("COLO_HEALTH", "off")]));
        isolate.take_global_read(0);
        let (_, after) = isolate.change_health(|h| h.record_success(0, 10));
        assert_eq!(after, LeaseAfter::Stands);
        let (flip, after) = isolate.change_health(|h| h.record_failure(0, Failure::Timeout, 20));
        assert!(flip.is_some());
        assert_eq!(after, LeaseAfter::Revoked);
        // b serves now. Work is next due at the checker's consultation, just
        // before a's probe (one interval after the flip).
        assert_eq!(isolate.lease(), lease(1, 15_000, u64::MAX));
        assert_eq!(isolate.health().next_probe_ms(), Some(15_020));
        let (_, after) = isolate.change_health(|h| h.record_failure(1, Failure::Refused, 40));
        assert_eq!(after, LeaseAfter::Revoked);
        assert_eq!(
            isolate.lease(),
            None,
            "no origin up: the full path walks them all"
        );
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
    fn tokens_and_colo_keys_are_made_once_per_origin() {
        let c = config(&[]);
        let isolate = Isolate::new(&c);
        assert_eq!(isolate.tokens(), affinity::tokens(&c.origins).as_slice());
        assert_eq!(isolate.colo_key(1), Some(colo_key(&c.origins[1]).as_str()));
        assert_eq!(isolate.colo_key(2), None);
    }
}
