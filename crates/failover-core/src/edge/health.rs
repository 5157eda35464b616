//! The Worker's map of origin health, one entry per configured origin, in
//! priority order. A failed attempt marks an origin down at once (the next
//! request must not wait for the same timeout); only background probes bring
//! it back, after `rise` good ones in a row, so a flapping origin is not
//! handed traffic on a single lucky answer. Verdicts shared by other
//! isolates or the global checker are adopted only when they are fresher than
//! anything this isolate saw itself.

use std::time::Duration;

use crate::edge::classify::Failure;
use crate::edge::shared::{SharedVerdict, Source};
use crate::edge::time::{after, millis};
use crate::streak::{Streak, Verdict};

/// One flip of an origin's verdict, for the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// Index into the configured origins.
    pub origin: usize,
    /// The verdict before.
    pub from: Verdict,
    /// The verdict now.
    pub to: Verdict,
    /// What flipped it, for the log line: a failure's label, or where an
    /// adopted verdict came from.
    pub reason: String,
    /// Whose evidence flipped it. Only `Local` flips are worth sharing.
    pub source: Source,
}

/// What the map knows about one origin.
#[derive(Clone, Debug)]
pub struct OriginHealth {
    streak: Streak,
    last_error: Option<Failure>,
    last_change_ms: Option<u64>,
    next_probe_ms: u64,
    /// When the probe now in flight started. A probe whose task the
    /// runtime cancelled never reports back, so after PROBE_LOST_MS it is
    /// presumed lost and the origin is probed again.
    probe_started_ms: Option<u64>,
    /// Whose evidence flipped the verdict last.
    last_source: Source,
    /// When this map last learned anything about the origin, from any source.
    last_evidence_ms: u64,
    colo: Option<SharedVerdict>,
    global: Option<SharedVerdict>,
    /// When the last confirmation probe (an app's own 5xx, asking whether
    /// the origin is down) started, and whether it is still out.
    confirm_started_ms: Option<u64>,
    confirm_in_flight: bool,
    /// When the origin came back up, for slow start: None while it is down,
    /// and while it has been up since before anything this map knows.
    up_since_ms: Option<u64>,
}

impl OriginHealth {
    /// What requests are routed by.
    pub fn verdict(&self) -> Verdict {
        self.streak.verdict()
    }
    /// Good probes in a row: how far a down origin is on its way back.
    pub fn good_streak(&self) -> u32 {
        self.streak.good_streak()
    }
    /// Failures in a row.
    pub fn bad_streak(&self) -> u32 {
        self.streak.bad_streak()
    }
    /// The last failure seen, kept after the origin recovers.
    pub fn last_error(&self) -> Option<Failure> {
        self.last_error
    }
    /// When the verdict last flipped, None since the isolate started.
    pub fn last_change_ms(&self) -> Option<u64> {
        self.last_change_ms
    }
    /// Whose evidence decided the current verdict: `Local` for this
    /// isolate's own attempts and probes, else the shared view it adopted.
    pub fn last_source(&self) -> Source {
        self.last_source
    }
    fn probe_due(&self, now_ms: u64) -> bool {
        let in_flight = self
            .probe_started_ms
            .is_some_and(|started| now_ms.saturating_sub(started) < PROBE_LOST_MS);
        !self.streak.is_up() && !in_flight && now_ms >= self.next_probe_ms
    }
    /// The last verdict read from the colo's cache, adopted or not.
    pub fn colo_view(&self) -> Option<SharedVerdict> {
        self.colo
    }
    /// The last verdict read from the global checker, adopted or not.
    pub fn global_view(&self) -> Option<SharedVerdict> {
        self.global
    }
    /// When the origin came back up (slow start's ramp begins there): this
    /// map's own flip, or the flip an adopted or agreeing shared verdict
    /// carries. None while it is down, and while it has been up since
    /// before anything this map knows (a cold isolate's presumption).
    pub fn up_since_ms(&self) -> Option<u64> {
        self.up_since_ms.filter(|_| self.streak.is_up())
    }
}

/// Longer than any probe can take (the attempt timeout is at most 100 s);
/// a probe silent for this long was cancelled with its task.
pub const PROBE_LOST_MS: u64 = 120_000;

/// At most one confirmation probe per origin per this long: a client that
/// asks for a page the app answers with a 500, as fast as it can, makes
/// the isolate probe the origin once a second, not once per request.
pub const CONFIRM_EVERY_MS: u64 = 1_000;

/// Health of every origin, as seen by one isolate.
#[derive(Clone, Debug)]
pub struct HealthMap {
    origins: Vec<OriginHealth>,
    probe_interval: Duration,
}

impl HealthMap {
    /// A cold isolate presumes every origin healthy: it has no evidence
    /// otherwise, and the first failure costs one attempt at most. `fall` is
    /// 1 for the Worker (one failed attempt is enough); the global checker,
    /// which only probes, may ask for more.
    pub fn new(origin_count: usize, rise: u32, fall: u32, probe_interval: Duration) -> HealthMap {
        let fresh = OriginHealth {
            streak: Streak::new(Verdict::Up, rise, fall),
            last_error: None,
            last_change_ms: None,
            next_probe_ms: 0,
            probe_started_ms: None,
            last_source: Source::Local,
            last_evidence_ms: 0,
            colo: None,
            global: None,
            confirm_started_ms: None,
            confirm_in_flight: false,
            up_since_ms: None,
        };
        HealthMap {
            origins: vec![fresh; origin_count],
            probe_interval,
        }
    }

    /// Every origin's entry, by index.
    pub fn origins(&self) -> &[OriginHealth] {
        &self.origins
    }

    /// How many origins the map holds.
    pub fn len(&self) -> usize {
        self.origins.len()
    }

    /// True when the map holds no origin.
    pub fn is_empty(&self) -> bool {
        self.origins.is_empty()
    }

    /// The verdict on `origin`; false for an index the map does not hold.
    pub fn is_up(&self, origin: usize) -> bool {
        self.origins.get(origin).is_some_and(|o| o.streak.is_up())
    }

    /// When `origin` came back up (`OriginHealth::up_since_ms`).
    pub fn up_since_ms(&self, origin: usize) -> Option<u64> {
        self.origins.get(origin).and_then(OriginHealth::up_since_ms)
    }

    /// Healthy origins first, then down ones, each group in priority order:
    /// when everything is down the request still tries every origin.
    pub fn attempt_order(&self) -> Vec<usize> {
        let up = (0..self.origins.len()).filter(|&i| self.is_up(i));
        let down = (0..self.origins.len()).filter(|&i| !self.is_up(i));
        up.chain(down).collect()
    }

    /// Records a failed client attempt: the origin is down from now on.
    pub fn record_failure(
        &mut self,
        origin: usize,
        failure: Failure,
        now_ms: u64,
    ) -> Option<Transition> {
        let interval = self.probe_interval;
        let entry = self.origins.get_mut(origin)?;
        entry.last_error = Some(failure);
        entry.last_evidence_ms = entry.last_evidence_ms.max(now_ms);
        let flipped = entry.streak.observe(false)?;
        entry.last_change_ms = Some(now_ms);
        entry.last_source = Source::Local;
        entry.next_probe_ms = after(now_ms, interval);
        entry.up_since_ms = None;
        Some(Transition {
            origin,
            from: Verdict::Up,
            to: flipped,
            reason: failure.label(),
            source: Source::Local,
        })
    }

    /// Records an answer a client got from the origin. It changes no
    /// verdict (only probes bring an origin back), but it is evidence: a
    /// shared "down" older than a live answer is not adopted.
    pub fn record_success(&mut self, origin: usize, now_ms: u64) {
        if let Some(entry) = self.origins.get_mut(origin) {
            entry.last_evidence_ms = entry.last_evidence_ms.max(now_ms);
        }
    }

    /// Down origins whose probe is due at `now_ms`. They are marked as being
    /// probed, so concurrent requests in the isolate do not probe them again;
    /// every one must be answered with `record_probe`.
    pub fn take_due_probes(&mut self, now_ms: u64) -> Vec<usize> {
        let interval = self.probe_interval;
        let mut due = Vec::new();
        for (i, entry) in self.origins.iter_mut().enumerate() {
            if entry.probe_due(now_ms) {
                entry.probe_started_ms = Some(now_ms);
                entry.next_probe_ms = after(now_ms, interval);
                due.push(i);
            }
        }
        due
    }

    /// The earliest time `probe_due` can turn true without another change
    /// to the map, or None while every origin is up (no probe will be due).
    pub fn next_probe_ms(&self) -> Option<u64> {
        self.origins
            .iter()
            .filter(|e| !e.streak.is_up())
            .map(|e| match e.probe_started_ms {
                Some(started) => e.next_probe_ms.max(started.saturating_add(PROBE_LOST_MS)),
                None => e.next_probe_ms,
            })
            .min()
    }

    /// True when some probe is due; cheap enough for every request.
    pub fn probe_due(&self, now_ms: u64) -> bool {
        self.origins.iter().any(|e| e.probe_due(now_ms))
    }

    /// Records a background probe's result (`None` for a good answer).
    pub fn record_probe(
        &mut self,
        origin: usize,
        result: Option<Failure>,
        now_ms: u64,
    ) -> Option<Transition> {
        let interval = self.probe_interval;
        let entry = self.origins.get_mut(origin)?;
        entry.probe_started_ms = None;
        entry.last_evidence_ms = entry.last_evidence_ms.max(now_ms);
        if let Some(failure) = result {
            entry.last_error = Some(failure);
        }
        let before = entry.streak.verdict();
        let flipped = entry.streak.observe(result.is_none())?;
        entry.last_change_ms = Some(now_ms);
        entry.last_source = Source::Local;
        entry.next_probe_ms = after(now_ms, interval);
        entry.up_since_ms = (flipped == Verdict::Up).then_some(now_ms);
        let reason = match result {
            None => format!("{} good probes", entry.streak.good_streak()),
            Some(failure) => failure.label(),
        };
        Some(Transition {
            origin,
            from: before,
            to: flipped,
            reason,
            source: Source::Local,
        })
    }

    /// An app answered a client with a 5xx of its own
    /// (`Failure::is_app_error`): one page's answer, not yet a verdict.
    /// True when a confirmation probe of the origin's health path should be
    /// sent now: the origin is up (a down one is probed on its schedule),
    /// no confirmation is out (one presumed lost after `PROBE_LOST_MS`
    /// does not count) and none started in the last `CONFIRM_EVERY_MS`.
    /// Every true must be answered with `record_confirmation`.
    pub fn take_confirmation(&mut self, origin: usize, now_ms: u64) -> bool {
        let Some(entry) = self.origins.get_mut(origin) else {
            return false;
        };
        let since = entry
            .confirm_started_ms
            .map(|started| now_ms.saturating_sub(started));
        let out = entry.confirm_in_flight && since.is_some_and(|s| s < PROBE_LOST_MS);
        let recent = since.is_some_and(|s| s < CONFIRM_EVERY_MS);
        if !entry.streak.is_up() || out || recent {
            return false;
        }
        entry.confirm_started_ms = Some(now_ms);
        entry.confirm_in_flight = true;
        true
    }

    /// Records a confirmation probe's result (`None`: healthy). A probe
    /// that agrees with the request's `app_error` (`Failure::
    /// needs_confirmation`) marks the origin down at once,
    /// as a failed attempt would; a healthy one is evidence that it is up.
    pub fn record_confirmation(
        &mut self,
        origin: usize,
        app_error: Failure,
        probe: Option<Failure>,
        now_ms: u64,
    ) -> Option<Transition> {
        let entry = self.origins.get_mut(origin)?;
        entry.confirm_in_flight = false;
        let Some(probe) = probe else {
            entry.last_evidence_ms = entry.last_evidence_ms.max(now_ms);
            return None;
        };
        let mut change = self.record_failure(origin, probe, now_ms)?;
        let whose = match app_error {
            Failure::Timeout => "on a request",
            _ => "from the app",
        };
        change.reason = format!("{app_error} {whose}, then the probe: {probe}");
        Some(change)
    }

    /// Considers a verdict shared by another isolate (`Colo`) or the global
    /// checker (`Global`). It is adopted only when it still holds (confirmed
    /// within `max_age`) and is news: it flipped after the last evidence
    /// this map has of its own. A live answer always beats a hint.
    pub fn adopt(
        &mut self,
        origin: usize,
        shared: SharedVerdict,
        source: Source,
        now_ms: u64,
        max_age: Duration,
    ) -> Option<Transition> {
        let interval = self.probe_interval;
        let entry = self.origins.get_mut(origin)?;
        match source {
            Source::Colo => entry.colo = Some(shared),
            Source::Global => entry.global = Some(shared),
            Source::Local => return None,
        }
        // Future-dated entries (a skewed publisher) are as untrustworthy as stale ones.
        let holds = now_ms.saturating_sub(shared.confirmed_ms) <= millis(max_age)
            && shared.confirmed_ms <= after(now_ms, max_age);
        if !holds || shared.since_ms <= entry.last_evidence_ms {
            return None;
        }
        entry.last_evidence_ms = shared.since_ms;
        // An "up" that is news came back up then, whether or not this map
        // ever saw it down: slow start ramps from there, in every isolate
        // that hears of it, as in the one whose probes found it.
        entry.up_since_ms = (shared.verdict == Verdict::Up).then_some(shared.since_ms);
        let from = entry.streak.verdict();
        if from == shared.verdict {
            return None;
        }
        entry.streak.reset(shared.verdict);
        entry.last_change_ms = Some(shared.since_ms);
        entry.last_source = source;
        // An adopted "down" is probed here too, on the usual schedule.
        entry.next_probe_ms = after(now_ms, interval);
        Some(Transition {
            origin,
            from,
            to: shared.verdict,
            reason: format!("{} verdict", source.as_str()),
            source,
        })
    }

    /// Whether the origin is down on another isolate's or the checker's
    /// word alone (an adopted verdict nothing here has confirmed since).
    pub fn down_by_shared_verdict(&self, origin: usize) -> bool {
        self.origins
            .get(origin)
            .is_some_and(|o| !o.streak.is_up() && o.last_source != Source::Local)
    }

    /// The fast path got an answer from the origin at `seen_ms` (it records
    /// answers without entering Wasm; the shell pulls them). An answer given
    /// after an adopted "down" flipped proves the hint stale: the origin is
    /// up again at once, as if the verdict had never been adopted. (Colo
    /// reads run beside requests, so a verdict can be adopted while an
    /// answer that outdates it is still on its way.) Anything else is
    /// evidence only, as `record_success`.
    pub fn answered_after_shared(&mut self, origin: usize, seen_ms: u64) -> Option<Transition> {
        let entry = self.origins.get_mut(origin)?;
        entry.last_evidence_ms = entry.last_evidence_ms.max(seen_ms);
        let stale = !entry.streak.is_up()
            && entry.last_source != Source::Local
            && entry.last_change_ms.is_some_and(|since| seen_ms > since);
        if !stale {
            return None;
        }
        let hint = entry.last_source;
        entry.streak.reset(Verdict::Up);
        entry.last_change_ms = Some(seen_ms);
        entry.last_source = Source::Local;
        // It was serving all along: nothing to ramp.
        entry.up_since_ms = None;
        Some(Transition {
            origin,
            from: Verdict::Down,
            to: Verdict::Up,
            reason: format!("answered after the {} verdict", hint.as_str()),
            source: Source::Local,
        })
    }

    /// This map's verdict on an origin, as last confirmed at `confirmed_ms`.
    /// A verdict that never flipped is "since 0": never news to anyone.
    pub fn verdict_to_share(&self, origin: usize, confirmed_ms: u64) -> Option<SharedVerdict> {
        let entry = self.origins.get(origin)?;
        Some(SharedVerdict {
            verdict: entry.streak.verdict(),
            since_ms: entry.last_change_ms.unwrap_or(0),
            confirmed_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const INTERVAL: u64 = 15_000;
    const EVERY: Duration = Duration::from_millis(INTERVAL);
    const AGE: Duration = Duration::from_secs(30);

    #[test]
    fn an_answer_after_an_adopted_down_undoes_it_and_an_older_one_does_not() {
        let mut map = HealthMap::new(2, 2, 1, EVERY);
        let shared = SharedVerdict {
            verdict: Verdict::Down,
            since_ms: 1_000,
            confirmed_ms: 1_000,
        };
        assert!(map.adopt(0, shared, Source::Colo, 1_100, AGE).is_some());
        assert!(map.down_by_shared_verdict(0));
        assert_eq!(
            map.answered_after_shared(0, 900),
            None,
            "older than the verdict"
        );
        assert!(!map.is_up(0));
        let back = map.answered_after_shared(0, 1_200).expect("undone");
        assert_eq!(back.reason, "answered after the colo verdict");
        assert!(map.is_up(0));
        assert!(!map.down_by_shared_verdict(0));
        // A local "down" (our own failed attempt) is only undone by probes.
        map.record_failure(1, Failure::Timeout, 2_000);
        assert!(!map.down_by_shared_verdict(1));
        assert_eq!(map.answered_after_shared(1, 3_000), None);
        assert!(!map.is_up(1));
    }

    #[test]
    fn up_since_is_when_it_came_back_from_any_source() {
        let mut map = HealthMap::new(3, 2, 1, EVERY);
        assert_eq!(map.up_since_ms(0), None, "a cold isolate's presumption");
        map.record_failure(0, Failure::Timeout, 1_000);
        assert_eq!(map.up_since_ms(0), None, "down");
        map.record_probe(0, None, 16_000);
        assert_eq!(map.up_since_ms(0), None, "one good probe of two");
        map.record_probe(0, None, 31_000);
        assert_eq!(map.up_since_ms(0), Some(31_000), "its own probes");
        map.record_failure(0, Failure::Refused, 40_000);
        assert_eq!(map.up_since_ms(0), None, "a failure during the ramp");
        // Another isolate's or the checker's up: adopted, with its time.
        let back = shared(Verdict::Up, 45_000);
        assert!(map.adopt(0, back, Source::Colo, 46_000, AGE).is_some());
        assert_eq!(map.up_since_ms(0), Some(45_000));
        // A cold isolate that never saw origin 1 down hears it came back.
        assert_eq!(map.adopt(1, back, Source::Global, 46_000, AGE), None);
        assert_eq!(
            map.up_since_ms(1),
            Some(45_000),
            "an agreeing up is news too"
        );
        // ... unless it has heard from the origin itself since.
        map.record_success(2, 45_500);
        assert_eq!(map.adopt(2, back, Source::Colo, 46_000, AGE), None);
        assert_eq!(map.up_since_ms(2), None);
        // A stale shared down undone by an answer: it was serving all along.
        let down = shared(Verdict::Down, 50_000);
        assert!(map.adopt(2, down, Source::Colo, 50_100, AGE).is_some());
        assert!(map.answered_after_shared(2, 50_200).is_some());
        assert_eq!(map.up_since_ms(2), None);
        assert_eq!(map.up_since_ms(9), None, "no such origin");
    }

    #[test]
    fn cold_isolate_trusts_every_origin() {
        let map = HealthMap::new(3, 2, 1, EVERY);
        assert_eq!(map.attempt_order(), vec![0, 1, 2]);
        assert!(!map.probe_due(0));
    }

    #[test]
    fn one_failure_marks_down_and_reorders() {
        let mut map = HealthMap::new(2, 2, 1, EVERY);
        let t = map
            .record_failure(0, Failure::Timeout, 1_000)
            .expect("flips");
        assert_eq!(
            (t.from, t.to, t.reason.as_str()),
            (Verdict::Up, Verdict::Down, "timeout")
        );
        assert_eq!(map.attempt_order(), vec![1, 0]);
        assert_eq!(
            map.record_failure(0, Failure::Refused, 1_001),
            None,
            "already down"
        );
        assert_eq!(map.origins()[0].last_error(), Some(Failure::Refused));
    }

    #[test]
    fn all_down_keeps_priority_order() {
        let mut map = HealthMap::new(2, 2, 1, EVERY);
        map.record_failure(1, Failure::Network, 0);
        map.record_failure(0, Failure::Network, 0);
        assert_eq!(map.attempt_order(), vec![0, 1]);
    }

    #[test]
    fn probes_wait_an_interval_and_do_not_overlap() {
        let mut map = HealthMap::new(2, 2, 1, EVERY);
        map.record_failure(0, Failure::Status(530), 1_000);
        assert!(map.take_due_probes(1_000 + INTERVAL - 1).is_empty());
        assert!(map.probe_due(1_000 + INTERVAL));
        assert_eq!(map.take_due_probes(1_000 + INTERVAL), vec![0]);
        assert!(
            map.take_due_probes(1_000 + 3 * INTERVAL).is_empty(),
            "in flight"
        );
        map.record_probe(0, Some(Failure::Refused), 1_000 + 3 * INTERVAL);
        assert_eq!(
            map.take_due_probes(1_000 + 3 * INTERVAL),
            vec![0],
            "overdue"
        );
    }

    #[test]
    fn rise_good_probes_bring_it_back() {
        let mut map = HealthMap::new(2, 3, 1, EVERY);
        map.record_failure(0, Failure::Timeout, 0);
        assert_eq!(map.record_probe(0, None, 1), None);
        assert_eq!(map.record_probe(0, None, 2), None);
        let t = map
            .record_probe(0, None, 3)
            .expect("third good probe flips");
        assert_eq!(
            (t.from, t.to, t.reason.as_str()),
            (Verdict::Down, Verdict::Up, "3 good probes")
        );
        assert_eq!(map.origins()[0].last_change_ms(), Some(3));
        assert_eq!(map.attempt_order(), vec![0, 1]);
    }

    #[test]
    fn a_bad_probe_restarts_the_count() {
        let mut map = HealthMap::new(1, 2, 1, EVERY);
        map.record_failure(0, Failure::Timeout, 0);
        map.record_probe(0, None, 1);
        map.record_probe(0, Some(Failure::Status(502)), 2);
        assert_eq!(map.record_probe(0, None, 3), None);
        assert!(map.record_probe(0, None, 4).is_some());
    }

    #[test]
    fn unknown_origin_is_ignored() {
        let mut map = HealthMap::new(1, 2, 1, EVERY);
        assert_eq!(map.record_failure(5, Failure::Timeout, 0), None);
        assert_eq!(map.record_probe(5, None, 0), None);
    }

    fn shared(verdict: Verdict, since_ms: u64) -> SharedVerdict {
        SharedVerdict {
            verdict,
            since_ms,
            confirmed_ms: since_ms,
        }
    }

    #[test]
    fn adopts_a_fresh_colo_down_and_probes_it() {
        let mut map = HealthMap::new(2, 2, 1, EVERY);
        let t = map
            .adopt(0, shared(Verdict::Down, 900), Source::Colo, 1_000, AGE)
            .expect("adopted");
        assert_eq!(
            (t.to, t.source, t.reason.as_str()),
            (Verdict::Down, Source::Colo, "colo verdict")
        );
        assert_eq!(map.attempt_order(), vec![1, 0]);
        assert!(map.take_due_probes(1_000 + INTERVAL).contains(&0));
        assert_eq!(
            map.origins()[0].colo_view(),
            Some(shared(Verdict::Down, 900))
        );
    }

    #[test]
    fn stale_or_future_verdicts_are_ignored_but_shown() {
        let mut map = HealthMap::new(1, 2, 1, EVERY);
        assert_eq!(
            map.adopt(0, shared(Verdict::Down, 1_000), Source::Colo, 40_000, AGE),
            None
        );
        assert_eq!(
            map.adopt(
                0,
                shared(Verdict::Down, 90_000),
                Source::Global,
                40_000,
                AGE
            ),
            None
        );
        assert!(map.is_up(0));
        assert_eq!(
            map.origins()[0].global_view(),
            Some(shared(Verdict::Down, 90_000))
        );
    }

    #[test]
    fn local_evidence_beats_an_older_hint() {
        let mut map = HealthMap::new(1, 2, 1, EVERY);
        map.record_failure(0, Failure::Timeout, 5_000);
        // Another isolate said "up" before our own failure: ignored.
        assert_eq!(
            map.adopt(0, shared(Verdict::Up, 4_000), Source::Colo, 6_000, AGE),
            None
        );
        assert!(!map.is_up(0));
        // A newer "up" (someone's probes succeeded since) is adopted.
        let t = map
            .adopt(0, shared(Verdict::Up, 5_500), Source::Colo, 6_000, AGE)
            .expect("adopted");
        assert_eq!((t.from, t.to), (Verdict::Down, Verdict::Up));
        // The same entry read again changes nothing.
        assert_eq!(
            map.adopt(0, shared(Verdict::Up, 5_500), Source::Colo, 6_100, AGE),
            None
        );
    }

    #[test]
    fn an_old_verdict_reconfirmed_is_not_news() {
        let mut map = HealthMap::new(1, 2, 1, EVERY);
        map.record_failure(0, Failure::Timeout, 5_000);
        // The global checker has said "up" since before our failure, and
        // keeps confirming it: our own evidence wins until our probes agree.
        let up_since_long_ago = SharedVerdict {
            verdict: Verdict::Up,
            since_ms: 1_000,
            confirmed_ms: 5_900,
        };
        assert_eq!(
            map.adopt(0, up_since_long_ago, Source::Global, 6_000, AGE),
            None
        );
        assert!(!map.is_up(0));
    }

    #[test]
    fn a_long_standing_down_is_adopted_by_a_cold_isolate() {
        let mut map = HealthMap::new(2, 2, 1, EVERY);
        let down_for_an_hour = SharedVerdict {
            verdict: Verdict::Down,
            since_ms: 1_000,
            confirmed_ms: 3_600_000,
        };
        assert!(map
            .adopt(0, down_for_an_hour, Source::Colo, 3_610_000, AGE)
            .is_some());
        assert_eq!(map.attempt_order(), vec![1, 0]);
        let shared = map.verdict_to_share(0, 3_620_000).expect("origin 0");
        assert_eq!(
            (shared.verdict, shared.since_ms, shared.confirmed_ms),
            (Verdict::Down, 1_000, 3_620_000)
        );
    }

    #[test]
    fn a_live_answer_beats_an_older_shared_down() {
        let mut map = HealthMap::new(1, 2, 1, EVERY);
        map.record_success(0, 5_000);
        assert_eq!(
            map.adopt(0, shared(Verdict::Down, 4_000), Source::Colo, 5_100, AGE),
            None
        );
        assert!(map.is_up(0));
        let t = map
            .adopt(0, shared(Verdict::Down, 5_050), Source::Colo, 5_100, AGE)
            .expect("newer");
        assert_eq!(t.to, Verdict::Down);
        assert_eq!(map.origins()[0].last_source(), Source::Colo);
    }

    #[test]
    fn a_lost_probe_is_retried() {
        let mut map = HealthMap::new(1, 2, 1, EVERY);
        map.record_failure(0, Failure::Timeout, 0);
        assert_eq!(map.take_due_probes(INTERVAL), vec![0]);
        // Its task was cancelled: no record_probe ever comes.
        assert!(map.take_due_probes(INTERVAL + PROBE_LOST_MS - 1).is_empty());
        assert_eq!(map.take_due_probes(INTERVAL + PROBE_LOST_MS), vec![0]);
    }

    #[test]
    fn global_checker_uses_fall() {
        let mut map = HealthMap::new(1, 2, 2, EVERY);
        assert_eq!(map.record_probe(0, Some(Failure::Timeout), 1), None);
        let t = map
            .record_probe(0, Some(Failure::Timeout), 2)
            .expect("second miss flips");
        assert_eq!((t.from, t.to), (Verdict::Up, Verdict::Down));
    }

    #[test]
    fn next_probe_follows_failures_and_probes_in_flight() {
        let mut map = HealthMap::new(2, 2, 1, EVERY);
        assert_eq!(map.next_probe_ms(), None, "all up: no probe will be due");
        map.record_failure(1, Failure::Timeout, 1_000);
        assert_eq!(map.next_probe_ms(), Some(1_000 + INTERVAL));
        assert_eq!(map.take_due_probes(1_000 + INTERVAL), vec![1]);
        assert_eq!(
            map.next_probe_ms(),
            Some(1_000 + INTERVAL + PROBE_LOST_MS),
            "in flight: due again only if it is lost"
        );
        map.record_probe(1, Some(Failure::Timeout), 2_000 + INTERVAL);
        assert_eq!(map.next_probe_ms(), Some(1_000 + 2 * INTERVAL));
    }

    proptest! {
        /// Whatever happens, the attempt order is a permutation of all
        /// origins with the healthy ones first, each group by priority.
        #[test]
        fn attempt_order_is_a_prioritised_permutation(
            events in proptest::collection::vec((0usize..4, any::<bool>(), any::<bool>()), 0..200)
        ) {
            let mut map = HealthMap::new(4, 2, 1, Duration::from_millis(10));
            for (step, (origin, is_probe, good)) in events.into_iter().enumerate() {
                let now = step as u64 * 7;
                if is_probe {
                    map.take_due_probes(now);
                    map.record_probe(origin, (!good).then_some(Failure::Timeout), now);
                } else if !good {
                    map.record_failure(origin, Failure::Network, now);
                }
                let order = map.attempt_order();
                let mut sorted = order.clone();
                sorted.sort_unstable();
                prop_assert_eq!(sorted, vec![0, 1, 2, 3]);
                let ups = order.iter().take_while(|&&i| map.is_up(i)).count();
                prop_assert!(order[ups..].iter().all(|&i| !map.is_up(i)));
                prop_assert!(order[..ups].windows(2).all(|w| w[0] < w[1]));
                prop_assert!(order[ups..].windows(2).all(|w| w[0] < w[1]));
            }
        }

        /// `next_probe_ms` is exact: no probe is due before it, one is at it.
        #[test]
        fn next_probe_is_when_a_probe_turns_due(
            events in proptest::collection::vec((0usize..3, 0u8..3, 0u64..40_000), 0..60)
        ) {
            let mut map = HealthMap::new(3, 2, 1, Duration::from_millis(10_000));
            let mut now = 0;
            for (origin, op, gap) in events {
                now += gap;
                match op {
                    0 => { map.record_failure(origin, Failure::Network, now); }
                    1 => { map.take_due_probes(now); }
                    _ => { map.record_probe(origin, None, now); }
                }
                match map.next_probe_ms() {
                    None => prop_assert!(!map.probe_due(now) && !map.probe_due(u64::MAX / 2)),
                    Some(next) => {
                        prop_assert!(map.probe_due(next.max(now)));
                        if next > now {
                            prop_assert!(!map.probe_due(now));
                            prop_assert!(!map.probe_due(next - 1));
                        }
                    }
                }
            }
        }

        /// An origin is never back up with fewer than `rise` good probes
        /// since its last failure.
        #[test]
        fn no_fail_back_before_rise(results in proptest::collection::vec(any::<bool>(), 0..100), rise in 1u32..5) {
            let mut map = HealthMap::new(1, rise, 1, Duration::from_millis(10));
            map.record_failure(0, Failure::Timeout, 0);
            let mut good_in_a_row = 0;
            for (step, good) in results.into_iter().enumerate() {
                let was_up = map.is_up(0);
                if !was_up {
                    map.record_probe(0, (!good).then_some(Failure::Timeout), step as u64);
                    good_in_a_row = if good { good_in_a_row + 1 } else { 0 };
                    if map.is_up(0) {
                        prop_assert!(good_in_a_row >= rise);
                    }
                } else if !good {
                    map.record_failure(0, Failure::Timeout, step as u64);
                    good_in_a_row = 0;
                }
            }
        }
    }
}
