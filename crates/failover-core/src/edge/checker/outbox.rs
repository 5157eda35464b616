//! The outbox: one delivery per event and receiver, kept until the
//! receiver takes it (2xx), refuses it for good (a 3xx, never followed, or
//! a 4xx other than 408, 425, 429: `retry::outcome`) or a day has passed
//! (`retry::GIVE_UP_AFTER`), and tried again in between with backoff
//! ([`RETRY_BASE`] doubling up to [`RETRY_CAP`], longer if a throttling
//! receiver's `Retry-After` asks). At
//! least once: a receiver drops duplicates by the event's `id`. A receiver
//! that fails holds back its other deliveries until its retry, so a dead
//! receiver costs one attempt per backoff step, not one per event, and a
//! live one gets its events in order. Tries run beside the probes, not in
//! their way: a delivery handed out is *out* (no one else tries it, nor
//! anything else for its receiver) until its answer is settled or its
//! lease ends (the try was lost with the object; it is tried again).

use std::time::Duration;

use serde_json::{json, Value};

use crate::edge::time::after;
use crate::notify::retry::{next_try_ms, outcome, Answer, Outcome, Refusal};
use crate::notify::Event;

/// The first pause after a failed delivery.
pub const RETRY_BASE: Duration = Duration::from_secs(2);
/// The longest pause: a receiver down for a minute hears everything within
/// 30 s of coming back (`retry` tests that bound).
pub const RETRY_CAP: Duration = Duration::from_secs(30);

/// One event on its way to one receiver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Its storage key: `outbox:<queue number>:<receiver>`, so keys sort
    /// in the order events were queued.
    pub key: String,
    /// The receiver's name (`Webhook::name`: the URL's var, never the URL).
    pub webhook: String,
    /// What is sent, `id` included: the same on every try.
    pub event: Event,
    /// When it was queued: the day's limit counts from here.
    pub queued_ms: u64,
    /// Failed tries so far.
    pub failures: u32,
    /// When it is next tried.
    pub next_ms: u64,
}

impl Delivery {
    /// The stored form.
    pub fn to_json(&self) -> Value {
        json!({
            "webhook": self.webhook,
            "event": self.event.to_json(),
            "queued_ms": self.queued_ms,
            "failures": self.failures,
            "next_ms": self.next_ms,
        })
    }

    /// Reads back [`Delivery::to_json`] stored under `key`; None for
    /// anything else (a row that does not parse is dropped, not a panic).
    pub fn from_json(key: &str, value: &Value) -> Option<Delivery> {
        Some(Delivery {
            key: key.to_owned(),
            webhook: value.get("webhook")?.as_str()?.to_owned(),
            event: Event::from_json(value.get("event")?)?,
            queued_ms: value.get("queued_ms")?.as_u64()?,
            failures: value
                .get("failures")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            next_ms: value.get("next_ms")?.as_u64()?,
        })
    }
}

/// What became of one try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// Taken; gone from the outbox.
    Delivered,
    /// Tried again at this time.
    Retry {
        /// When.
        at_ms: u64,
    },
    /// The receiver refused it for good (a redirect, a wrong URL, bad
    /// auth); dropped.
    Refused(Refusal),
    /// Undelivered for a day; dropped.
    GaveUp,
}

/// Every delivery not yet settled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outbox {
    rows: Vec<Delivery>,
    /// Deliveries being tried, by key, with when their lease ends. Memory
    /// only: a try lost with the object is simply tried again.
    out: Vec<(String, u64)>,
}

/// The storage key of queue number `seq`'s delivery to `webhook`.
pub fn key(seq: u64, webhook: &str) -> String {
    format!("{}{seq:016}:{webhook}", super::stored::OUTBOX_PREFIX)
}

impl Outbox {
    /// The outbox as stored.
    pub fn restore(mut rows: Vec<Delivery>) -> Outbox {
        rows.sort_by(|a, b| a.key.cmp(&b.key));
        Outbox {
            rows,
            out: Vec::new(),
        }
    }

    /// Queues `event` for every receiver, due now, as queue number `seq`
    /// (unique per call, rising: deliveries sort by it); returns the new
    /// rows to store.
    pub fn enqueue(
        &mut self,
        seq: u64,
        event: &Event,
        webhooks: &[String],
        now_ms: u64,
    ) -> Vec<Delivery> {
        let new: Vec<Delivery> = webhooks
            .iter()
            .map(|webhook| Delivery {
                key: key(seq, webhook),
                webhook: webhook.clone(),
                event: event.clone(),
                queued_ms: now_ms,
                failures: 0,
                next_ms: now_ms,
            })
            .collect();
        self.rows.extend(new.iter().cloned());
        self.rows.sort_by(|a, b| a.key.cmp(&b.key));
        new
    }

    /// Hands out the deliveries due at `now_ms`, oldest first, each out
    /// for at most `lease`. A receiver gets its deliveries in order: none
    /// while one of its own is out, and none after one of its own that is
    /// not due yet (a newer event never overtakes a retried older one).
    pub fn take_due(&mut self, now_ms: u64, lease: Duration) -> Vec<Delivery> {
        self.out.retain(|(_, until)| *until > now_ms);
        let mut blocked: Vec<&str> = self
            .out
            .iter()
            .filter_map(|(key, _)| self.rows.iter().find(|d| d.key == *key))
            .map(|d| d.webhook.as_str())
            .collect();
        let mut due = Vec::new();
        for row in &self.rows {
            if blocked.contains(&row.webhook.as_str()) {
                continue;
            }
            if row.next_ms > now_ms {
                blocked.push(&row.webhook);
                continue;
            }
            due.push(row.clone());
        }
        let until = after(now_ms, lease);
        self.out.extend(due.iter().map(|d| (d.key.clone(), until)));
        due
    }

    /// Gives back a delivery handed out but not tried (its receiver failed
    /// an older one first): due as it was, for the next hand-out.
    pub fn release(&mut self, key: &str) {
        self.out.retain(|(k, _)| k != key);
    }

    /// Records the answer to a try of `key`. Returns what became of it and every row whose stored form
    /// changed (a retry's own, and the receiver's others it holds back), or
    /// None for a key the outbox no longer holds.
    pub fn settle(
        &mut self,
        key: &str,
        answer: Answer,
        now_ms: u64,
    ) -> Option<(Settled, Vec<Delivery>)> {
        self.out.retain(|(k, _)| k != key);
        let at = self.rows.iter().position(|d| d.key == key)?;
        let settled = match outcome(answer.status) {
            Outcome::Delivered => Settled::Delivered,
            Outcome::Refused(why) => Settled::Refused(why),
            Outcome::Retry => {
                let row = &self.rows[at];
                let failures = row.failures.saturating_add(1);
                let (base, cap, asked) = (RETRY_BASE, RETRY_CAP, answer.wait);
                match next_try_ms(row.queued_ms, failures, now_ms, base, cap, asked) {
                    Some(at_ms) => Settled::Retry { at_ms },
                    None => Settled::GaveUp,
                }
            }
        };
        let Settled::Retry { at_ms } = settled else {
            self.rows.remove(at);
            return Some((settled, Vec::new()));
        };
        let webhook = self.rows[at].webhook.clone();
        self.rows[at].failures = self.rows[at].failures.saturating_add(1);
        let mut changed = Vec::new();
        for (i, row) in self.rows.iter_mut().enumerate() {
            // Its own retry, and the receiver's others due before it.
            if i == at || (row.webhook == webhook && row.next_ms < at_ms) {
                row.next_ms = at_ms;
                changed.push(row.clone());
            }
        }
        Some((settled, changed))
    }

    /// Drops `key` without a try (its receiver is no longer configured).
    pub fn drop_row(&mut self, key: &str) -> bool {
        let before = self.rows.len();
        self.rows.retain(|d| d.key != key);
        self.out.retain(|(k, _)| k != key);
        self.rows.len() != before
    }

    /// When the next hand-out can give something: for each receiver, its
    /// oldest delivery decides (the others wait behind it), at its retry
    /// time, or at its lease's end while it is out (its answer usually
    /// comes first). None when the outbox is empty. Never "now" for a
    /// receiver that cannot be given anything now, so the alarm never spins.
    pub fn next_due_ms(&self) -> Option<u64> {
        let mut seen: Vec<&str> = Vec::new();
        let mut next: Option<u64> = None;
        for row in &self.rows {
            if seen.contains(&row.webhook.as_str()) {
                continue;
            }
            seen.push(&row.webhook);
            // Out rows are always a receiver's oldest: hand-outs are in
            // order and the untried are given back.
            let out = self
                .out
                .iter()
                .filter(|(key, _)| {
                    self.rows
                        .iter()
                        .any(|d| d.key == *key && d.webhook == row.webhook)
                })
                .map(|(_, until)| *until)
                .max();
            let due = out.map_or(row.next_ms, |until| until.max(row.next_ms));
            next = Some(next.map_or(due, |n| n.min(due)));
        }
        next
    }

    /// How many deliveries wait.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when none waits.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::event::tests::down;

    const LEASE: Duration = Duration::from_secs(5);

    #[test]
    fn a_newer_event_never_overtakes_a_retried_older_one() {
        let mut out = Outbox::default();
        out.enqueue(1, &down("e-1", "primary", 0), &hooks(), 0);
        assert_eq!(out.take_due(0, LEASE).len(), 2);
        out.settle(&key(1, "SLACK_URL"), Some(500).into(), 10);
        out.settle(&key(1, "HOOK_URL"), Some(200).into(), 10);
        out.enqueue(2, &down("e-2", "replica", 0), &hooks(), 20);
        let due: Vec<String> = out.take_due(20, LEASE).into_iter().map(|d| d.key).collect();
        assert_eq!(
            due,
            [key(2, "HOOK_URL")],
            "SLACK waits for its retry of e-1"
        );
        out.settle(&key(2, "HOOK_URL"), Some(200).into(), 30);
        let due: Vec<String> = out
            .take_due(2_010, LEASE)
            .into_iter()
            .map(|d| d.key)
            .collect();
        assert_eq!(due, [key(1, "SLACK_URL"), key(2, "SLACK_URL")]);
        // The first fails again: the second, handed out but not tried, is
        // given back and waits behind it.
        out.settle(&key(1, "SLACK_URL"), Some(500).into(), 2_020);
        out.release(&key(2, "SLACK_URL"));
        assert!(out.take_due(2_030, LEASE).is_empty());
        assert_eq!(out.next_due_ms(), Some(6_020));
    }

    #[test]
    fn a_receiver_with_a_try_out_gets_nothing_else_until_it_settles() {
        let mut out = Outbox::default();
        out.enqueue(1, &down("e-1", "primary", 0), &hooks()[..1], 0);
        assert_eq!(out.take_due(0, LEASE).len(), 1);
        out.enqueue(2, &down("e-2", "primary", 0), &hooks()[..1], 10);
        assert!(
            out.take_due(10, LEASE).is_empty(),
            "in order, one at a time"
        );
        out.settle(&key(1, "SLACK_URL"), Some(200).into(), 20);
        assert_eq!(out.take_due(20, LEASE)[0].event.id, "e-2");
    }

    fn hooks() -> Vec<String> {
        vec!["SLACK_URL".into(), "HOOK_URL".into()]
    }

    #[test]
    fn one_delivery_per_receiver_due_at_once_in_event_order() {
        let mut out = Outbox::default();
        let new = out.enqueue(10, &down("e-10", "primary", 0), &hooks(), 100);
        assert_eq!(new.len(), 2);
        out.enqueue(9, &down("e-9", "primary", 0), &hooks(), 100);
        assert!(out.take_due(99, LEASE).is_empty());
        let due = out.take_due(100, LEASE);
        assert_eq!(due.len(), 4);
        assert_eq!(due[0].event.id, "e-9", "by number, not by text");
        assert!(
            out.take_due(100, LEASE).is_empty(),
            "out: not handed out twice"
        );
        assert_eq!(out.next_due_ms(), Some(100 + 5_000), "the lease's end");
        assert_eq!(
            out.take_due(5_100, LEASE).len(),
            4,
            "a lost try is tried again"
        );
    }

    #[test]
    fn a_failing_receiver_holds_its_others_back_and_the_rest_go_on() {
        let mut out = Outbox::default();
        out.enqueue(1, &down("e-1", "primary", 0), &hooks(), 0);
        out.enqueue(2, &down("e-2", "replica", 0), &hooks(), 0);
        let first = key(1, "SLACK_URL");
        let (settled, changed) = out.settle(&first, Some(500).into(), 10).unwrap();
        assert_eq!(settled, Settled::Retry { at_ms: 2_010 });
        assert_eq!(changed.len(), 2, "its own row and the receiver's next");
        assert!(changed.iter().all(|d| d.next_ms == 2_010));
        let due: Vec<String> = out.take_due(10, LEASE).into_iter().map(|d| d.key).collect();
        assert_eq!(due, [key(1, "HOOK_URL"), key(2, "HOOK_URL")]);
        let taken = key(1, "HOOK_URL");
        assert_eq!(
            out.settle(&taken, Some(204).into(), 11).unwrap().0,
            Settled::Delivered
        );
        assert_eq!(out.settle(&taken, Some(204).into(), 11), None, "gone");
        // Again and again: the pauses double.
        let (settled, _) = out.settle(&first, None.into(), 2_010).unwrap();
        assert_eq!(settled, Settled::Retry { at_ms: 6_010 });
        assert_eq!(
            out.settle(&first, Some(404).into(), 6_010).unwrap().0,
            Settled::Refused(Refusal::NotFound)
        );
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn a_redirect_is_dropped_after_one_try_and_the_receivers_next_goes_on() {
        let mut out = Outbox::default();
        out.enqueue(1, &down("e-1", "primary", 0), &hooks()[..1], 0);
        out.enqueue(2, &down("e-2", "replica", 0), &hooks()[..1], 0);
        let due = out.take_due(0, LEASE);
        let (settled, changed) = out.settle(&due[0].key, Some(302).into(), 10).unwrap();
        assert_eq!(settled, Settled::Refused(Refusal::Redirect));
        assert!(changed.is_empty(), "nothing held back behind it");
        assert_eq!(out.len(), 1, "dropped, not retried");
        out.release(&due[1].key);
        let next: Vec<String> = out
            .take_due(10, LEASE)
            .into_iter()
            .map(|d| d.event.id)
            .collect();
        assert_eq!(
            next,
            ["e-2"],
            "the next event is still tried (and refused in turn)"
        );
    }

    #[test]
    fn a_throttled_receiver_is_left_alone_as_long_as_it_asks_with_its_others() {
        let mut out = Outbox::default();
        out.enqueue(1, &down("e-1", "primary", 0), &hooks(), 0);
        out.enqueue(2, &down("e-2", "replica", 0), &hooks(), 0);
        let first = key(1, "SLACK_URL");
        let throttled = Answer::new(Some(429), Some("120"));
        let (settled, changed) = out.settle(&first, throttled, 10).unwrap();
        assert_eq!(settled, Settled::Retry { at_ms: 120_010 });
        assert!(changed.iter().all(|d| d.next_ms == 120_010), "{changed:?}");
        let due: Vec<String> = out
            .take_due(60_000, LEASE)
            .into_iter()
            .map(|d| d.key)
            .collect();
        assert_eq!(
            due,
            [key(1, "HOOK_URL"), key(2, "HOOK_URL")],
            "the other receiver goes on"
        );
        for k in due {
            out.settle(&k, Some(204).into(), 60_000);
        }
        assert!(out.take_due(120_009, LEASE).is_empty());
        assert_eq!(out.take_due(120_010, LEASE).len(), 2, "both, in order");
    }

    #[test]
    fn a_day_undelivered_is_given_up() {
        let mut out = Outbox::default();
        out.enqueue(1, &down("e-1", "primary", 0), &hooks()[..1], 0);
        let day = 24 * 3600 * 1000;
        let k = key(1, "SLACK_URL");
        assert_eq!(
            out.settle(&k, Some(503).into(), day).unwrap().0,
            Settled::GaveUp
        );
        assert!(out.is_empty());
    }

    #[test]
    fn stored_rows_round_trip_and_junk_is_dropped() {
        let mut out = Outbox::default();
        let row = out
            .enqueue(7, &down("e-7", "primary", 0), &hooks()[..1], 5)
            .remove(0);
        assert_eq!(
            Delivery::from_json(&row.key, &row.to_json()),
            Some(row.clone())
        );
        assert_eq!(Delivery::from_json("k", &json!({"webhook": 1})), None);
        assert!(out.drop_row(&row.key));
        assert!(!out.drop_row(&row.key));
        assert_eq!(
            Outbox::restore(vec![row.clone()]).take_due(5, LEASE),
            vec![row]
        );
    }
}
