//! The global checker's decisions: the machine its Durable Object
//! (src/checker/) drives. It probes every origin on a schedule, turns the
//! verdicts' flips into events, keeps the last [`HISTORY`] of them, lets
//! the flap guard pass at most one message per origin per
//! `NOTIFY_MIN_INTERVAL_S`, and queues one delivery per receiver in an
//! outbox it tries until each is taken. It is the one writer of events:
//! isolates flip their own maps too, but never notify (they would notify
//! once per isolate).
//!
//! quinn-proto's shape: the machine owns its clocks ([`Checker::next_wake_ms`]
//! is when the shell's alarm must fire) and says what to store
//! ([`Checker::take_writes`]); the shell probes, POSTs and writes.
//!
//! Layout:
//! - [`schedule`]: when each origin is probed (rounds, and at once on an
//!   isolate's word).
//! - [`outbox`]: deliveries, retries and backoff.
//! - [`stored`]: the storage keys and rows, and the writes the shell makes.

use std::time::Duration;

use crate::edge::classify::Failure;
use crate::edge::config::WorkerConfig;
use crate::edge::events::{all_change, all_event, evidence, origin_event, EventIds};
use crate::edge::health::{HealthMap, Transition};
use crate::edge::shared::{decode_map, encode_map, SharedVerdict, Source};
use crate::notify::flap::FlapGuard;
use crate::notify::history::History;
use crate::notify::retry::Answer;
use crate::notify::{Event, Kind, Source as NotifySource};

pub mod outbox;
pub mod schedule;
pub mod stored;

use outbox::{Delivery, Outbox, Settled};
use schedule::Schedule;
use stored::{event_key, event_seq, Meta, Restored, Writes, META_KEY, VERDICTS_KEY};

/// How many events the checker keeps.
pub const HISTORY: usize = 500;

/// What events name as their `site` until a request has told the checker
/// the public hostname.
pub const UNKNOWN_SITE: &str = "tunnel-failover";

/// See the module doc.
#[derive(Clone, Debug)]
pub struct Checker {
    names: Vec<String>,
    webhooks: Vec<String>,
    fall: u32,
    health: HealthMap,
    /// When the last full round of probes finished.
    confirmed_ms: u64,
    schedule: Schedule,
    /// The probes out are a full round.
    round_out: bool,
    ids: EventIds,
    site: String,
    /// With several sites (`SITES`): each origin's site, by its range of
    /// global indices, and that site's name, which its events name
    /// instead of the public hostname; `all.down` / `all.up` are per site.
    /// Empty with `ORIGINS`.
    sites: Vec<(std::ops::Range<usize>, String)>,
    history: History<(u64, Event)>,
    guard: FlapGuard,
    outbox: Outbox,
    writes: Writes,
    meta_dirty: bool,
}

impl Checker {
    /// The checker for `config`, from what its storage held (`restored`).
    /// Rows that do not parse are dropped (and deleted), never a panic.
    pub fn new(config: &WorkerConfig, restored: Restored, now_ms: u64) -> Checker {
        let interval = Duration::from_millis(config.health_interval_ms);
        let min_interval_ms = config.notify_min_interval_s.saturating_mul(1000);
        let mut checker = Checker {
            names: config.origins.iter().map(|o| o.name.clone()).collect(),
            webhooks: config.notify.iter().map(|w| w.name.clone()).collect(),
            fall: config.health_fall,
            health: HealthMap::new(
                config.origins.len(),
                config.health_rise,
                config.health_fall,
                interval,
            ),
            confirmed_ms: 0,
            schedule: Schedule::new(config.origins.len(), interval),
            round_out: false,
            ids: EventIds::new(now_ms, 1),
            site: String::new(),
            sites: if config.sites.len() > 1 {
                config
                    .sites
                    .iter()
                    .map(|s| (s.global(), s.name.clone()))
                    .collect()
            } else {
                Vec::new()
            },
            history: History::new(HISTORY),
            guard: FlapGuard::new(min_interval_ms),
            outbox: Outbox::default(),
            writes: Writes::default(),
            meta_dirty: true,
        };
        checker.restore(restored, min_interval_ms);
        checker
    }

    fn restore(&mut self, restored: Restored, min_interval_ms: u64) {
        if let Some(verdicts) = restored.verdicts {
            // Verdicts survive the object being evicted between alarms.
            for (name, verdict) in decode_map(&verdicts) {
                if let Some(i) = self.names.iter().position(|n| *n == name) {
                    self.health.adopt(
                        i,
                        verdict,
                        Source::Global,
                        verdict.confirmed_ms,
                        Duration::MAX,
                    );
                    self.confirmed_ms = self.confirmed_ms.max(verdict.confirmed_ms);
                }
            }
        }
        let mut next_seq = 1;
        if let Some(meta) = restored.meta.as_deref().and_then(Meta::parse) {
            self.ids = EventIds::new(meta.epoch_ms, meta.next_seq);
            self.site = meta.site.clone();
            self.guard = meta.guard(min_interval_ms);
            self.meta_dirty = false;
            next_seq = meta.next_seq;
        }
        let mut events: Vec<(u64, Event)> = Vec::new();
        for (key, text) in restored.events {
            let parsed = event_seq(&key).zip(
                serde_json::from_str(&text)
                    .ok()
                    .and_then(|v| Event::from_json(&v)),
            );
            match parsed {
                Some(row) => events.push(row),
                None => self.writes.delete(key),
            }
        }
        events.sort_by_key(|(seq, _)| *seq);
        for (seq, event) in events {
            next_seq = next_seq.max(seq.saturating_add(1));
            if let Some((old, _)) = self.history.push((seq, event)) {
                self.writes.delete(event_key(old));
            }
        }
        let mut rows = Vec::new();
        for (key, text) in restored.outbox {
            let row = serde_json::from_str(&text)
                .ok()
                .and_then(|v| Delivery::from_json(&key, &v));
            match row {
                // A receiver no longer configured hears nothing more.
                Some(row) if self.webhooks.contains(&row.webhook) => rows.push(row),
                _ => self.writes.delete(key),
            }
        }
        self.outbox = Outbox::restore(rows);
        if next_seq > self.ids.next_seq() {
            // The counter was lost but events were not: never reuse a key.
            self.ids = EventIds::new(self.ids.epoch_ms(), next_seq);
            self.meta_dirty = true;
        }
    }

    /// The public hostname events name (the shell takes it from the
    /// requests isolates make, `events::site_of`).
    pub fn set_site(&mut self, site: &str) {
        if self.site != site {
            self.site = site.to_owned();
            self.meta_dirty = true;
        }
    }

    /// An isolate saw origin `name` fail on live traffic: true when that
    /// starts a suspicion (the shell wakes the alarm now). An origin the
    /// checker already calls down needs none.
    pub fn suspect(&mut self, name: &str, now_ms: u64) -> bool {
        let Some(origin) = self.names.iter().position(|n| n == name) else {
            return false;
        };
        self.health.is_up(origin) && self.schedule.suspect(origin, self.fall, now_ms)
    }

    /// The origins to probe now; each must be answered with
    /// [`Checker::record_probe`], then [`Checker::probes_done`].
    pub fn take_due_probes(&mut self, now_ms: u64) -> Vec<usize> {
        let (due, round) = self.schedule.take_due(now_ms);
        self.round_out = round;
        due
    }

    /// A probe's result (`None`: healthy). Returns the flip, for the log;
    /// its events are recorded, guarded and queued.
    pub fn record_probe(
        &mut self,
        origin: usize,
        result: Option<Failure>,
        now_ms: u64,
    ) -> Option<Transition> {
        let any_up_before = self.any_up(origin);
        let change = self.health.record_probe(origin, result, now_ms);
        let down = !self.health.is_up(origin);
        self.schedule.probed(origin, result.is_some(), down, now_ms);
        let mut change = change?;
        if let Some(failure) = result {
            change.reason = format!("{} from probe", evidence(failure));
        }
        let name = self.names.get(origin).cloned().unwrap_or_default();
        let (seq, id) = self.ids.take();
        let event = origin_event(id, &name, &change, now_ms, self.site_of(origin));
        self.record(seq, event.clone(), now_ms);
        if let Some(kind) = all_change(any_up_before, self.any_up(origin)) {
            let (seq, id) = self.ids.take();
            self.record(seq, all_event(id, kind, &event), now_ms);
        }
        Some(change)
    }

    /// The probes [`Checker::take_due_probes`] gave are all answered.
    pub fn probes_done(&mut self, now_ms: u64) {
        if std::mem::take(&mut self.round_out) {
            self.confirmed_ms = now_ms;
            self.writes.put(VERDICTS_KEY.into(), self.verdicts());
        }
    }

    /// Whether some origin of `origin`'s site is up (every origin is one
    /// site's with `ORIGINS`).
    fn any_up(&self, origin: usize) -> bool {
        let range = self
            .sites
            .iter()
            .find(|(r, _)| r.contains(&origin))
            .map_or(0..self.health.len(), |(r, _)| r.clone());
        range.into_iter().any(|i| self.health.is_up(i))
    }

    /// What `origin`'s events name as their site: its site's name with
    /// several sites, else the public hostname ([`Checker::site`]).
    fn site_of(&self, origin: usize) -> &str {
        self.sites
            .iter()
            .find(|(r, _)| r.contains(&origin))
            .map_or_else(|| self.site(), |(_, name)| name.as_str())
    }

    /// Keeps `event` (number `seq`) and passes it to the flap guard; what
    /// passes is queued for every receiver.
    fn record(&mut self, seq: u64, event: Event, now_ms: u64) {
        self.keep(seq, &event);
        if self.webhooks.is_empty() {
            return;
        }
        if let Some(event) = self.guard.offer(event, now_ms) {
            self.queue(seq, &event, now_ms);
        }
    }

    /// Keeps `event` (number `seq`) in the history, dropping the oldest.
    fn keep(&mut self, seq: u64, event: &Event) {
        self.writes.put(event_key(seq), event.to_json().to_string());
        if let Some((old, _)) = self.history.push((seq, event.clone())) {
            self.writes.delete(event_key(old));
        }
        self.meta_dirty = true;
    }

    fn queue(&mut self, seq: u64, event: &Event, now_ms: u64) {
        for row in self.outbox.enqueue(seq, event, &self.webhooks, now_ms) {
            self.writes.put(row.key.clone(), row.to_json().to_string());
        }
    }

    /// The deliveries to try now, oldest first (what the flap guard held
    /// back and now lets go is queued first); each is out for at most
    /// `lease` (longer than a try can take), and must be answered with
    /// [`Checker::settle`].
    pub fn take_deliveries(&mut self, now_ms: u64, lease: Duration) -> Vec<Delivery> {
        let released = self.guard.take_due(now_ms);
        if !released.is_empty() {
            self.meta_dirty = true;
        }
        for event in released {
            let seq = self.ids.take_number();
            self.queue(seq, &event, now_ms);
        }
        self.outbox.take_due(now_ms, lease)
    }

    /// The answer to a try of delivery `key`; None for a key no longer
    /// queued.
    pub fn settle(&mut self, key: &str, answer: Answer, now_ms: u64) -> Option<Settled> {
        let (settled, changed) = self.outbox.settle(key, answer, now_ms)?;
        match settled {
            Settled::Retry { .. } => {
                for row in changed {
                    self.writes.put(row.key.clone(), row.to_json().to_string());
                }
            }
            Settled::Delivered | Settled::Refused(_) | Settled::GaveUp => {
                self.writes.delete(key.to_owned());
            }
        }
        Some(settled)
    }

    /// Gives back a delivery [`Checker::take_deliveries`] handed out and
    /// the shell did not try (its receiver failed an older one first).
    pub fn release(&mut self, key: &str) {
        self.outbox.release(key);
    }

    /// When the shell's alarm must next fire: a probe, a delivery or the
    /// end of a flap guard's interval, whichever is first.
    pub fn next_wake_ms(&self) -> u64 {
        [
            Some(self.schedule.next_due_ms()),
            self.outbox.next_due_ms(),
            self.guard.next_due_ms(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(u64::MAX)
    }

    /// Every origin's verdict, in the wire format isolates adopt.
    pub fn verdicts(&self) -> String {
        let confirmed = self.confirmed_ms;
        encode_map(self.names.iter().enumerate().filter_map(|(i, name)| {
            Some((name.as_str(), self.health.verdict_to_share(i, confirmed)?))
        }))
    }

    /// Every origin's verdict by index, for the answer that carries the
    /// overrides too (`overrides::wire::Snapshot`).
    pub fn shared_verdicts(&self) -> Vec<(usize, SharedVerdict)> {
        let confirmed = self.confirmed_ms;
        (0..self.names.len())
            .filter_map(|i| Some((i, self.health.verdict_to_share(i, confirmed)?)))
            .collect()
    }

    /// An operator's override of origin `name` changed, or ran out
    /// (`reason` says which, in words): an event of the history and a
    /// message, never held back by the flap guard (a person did it, and
    /// expects to hear of it).
    pub fn record_override(&mut self, name: &str, reason: String, now_ms: u64) {
        let site = match self.names.iter().position(|n| n == name) {
            Some(origin) => self.site_of(origin).to_owned(),
            None => self.site().to_owned(),
        };
        let (seq, id) = self.ids.take();
        let event = Event {
            id,
            kind: Kind::Override,
            origin: Some(name.to_owned()),
            at_ms: now_ms,
            reason,
            site,
            source: NotifySource::Edge,
            node: None,
            from: None,
            to: None,
            more: 0,
        };
        self.keep(seq, &event);
        if !self.webhooks.is_empty() {
            self.queue(seq, &event, now_ms);
        }
    }

    /// The newest `n` events, newest first.
    pub fn recent(&self, n: usize) -> impl Iterator<Item = &Event> {
        self.history.newest(n).map(|(_, e)| e)
    }

    /// The public hostname events name.
    pub fn site(&self) -> &str {
        if self.site.is_empty() {
            UNKNOWN_SITE
        } else {
            &self.site
        }
    }

    /// What to write to storage since the last call.
    pub fn take_writes(&mut self) -> Writes {
        if std::mem::take(&mut self.meta_dirty) {
            let meta = Meta {
                epoch_ms: self.ids.epoch_ms(),
                next_seq: self.ids.next_seq(),
                site: self.site.clone(),
                guard: self.guard.to_json(),
            };
            self.writes.put(META_KEY.into(), meta.to_text());
        }
        std::mem::take(&mut self.writes)
    }
}

/// A query parameter of a request an isolate sent the checker, as written:
/// the values it sends (an origin name, a host name) need no decoding, and
/// anything encoded fails their validation. The shell uses this and not a
/// URL parser, which would cost the Worker's Wasm ~100 KB of tables.
pub fn query_param<'a>(url: &'a str, name: &str) -> Option<&'a str> {
    let query = url.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or("");
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// The checker's answer to an isolate asking for its events (the status
/// page): a JSON array of events, newest first.
pub fn events_text<'a>(events: impl IntoIterator<Item = &'a Event>) -> String {
    serde_json::Value::Array(events.into_iter().map(Event::to_json).collect()).to_string()
}

/// Reads [`events_text`]; rows that do not parse are skipped, anything
/// else is no events.
pub fn parse_events(text: &str) -> Vec<Event> {
    // Read as a `Value`, not as a `Vec`: a typed read links serde's
    // "invalid type" messages, and with them `f64`'s formatting (14 KB of
    // the request path's Wasm, which reads these for the status page).
    let rows = serde_json::from_str::<serde_json::Value>(text).unwrap_or_default();
    rows.as_array()
        .map(|rows| rows.iter().filter_map(Event::from_json).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
