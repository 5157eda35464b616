//! The outbox: one delivery per event and receiver, kept until the
//! receiver takes it (2xx), refuses it for good (a 4xx other than 408, 425,
//! 429) or a day has passed (`retry::GIVE_UP_AFTER`), and tried again in
//! between with backoff ([`RETRY_BASE`] doubling up to [`RETRY_CAP`]). At
//! least once: a receiver drops duplicates by the event's `id`. A receiver
//! that fails holds back its other deliveries until its retry, so a dead
//! receiver costs one attempt per backoff step, not one per event, and a
//! live one gets its events in order.

use std::time::Duration;

use serde_json::{json, Value};

use crate::notify::retry::{next_try_ms, outcome, Outcome};
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
    /// The receiver refused it for good (wrong URL, bad auth); dropped.
    Refused,
    /// Undelivered for a day; dropped.
    GaveUp,
}

/// Every delivery not yet settled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outbox {
    rows: Vec<Delivery>,
}

/// The storage key of queue number `seq`'s delivery to `webhook`.
pub fn key(seq: u64, webhook: &str) -> String {
    format!("{}{seq:016}:{webhook}", super::stored::OUTBOX_PREFIX)
}

impl Outbox {
    /// The outbox as stored.
    pub fn restore(mut rows: Vec<Delivery>) -> Outbox {
        rows.sort_by(|a, b| a.key.cmp(&b.key));
        Outbox { rows }
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

    /// The deliveries due at `now_ms`, oldest event first.
    pub fn due(&self, now_ms: u64) -> Vec<Delivery> {
        self.rows
            .iter()
            .filter(|d| d.next_ms <= now_ms)
            .cloned()
            .collect()
    }

    /// Records the answer to a try of `key` (`status`: None when there was
    /// none). Returns what became of it and every row whose stored form
    /// changed (a retry's own, and the receiver's others it holds back), or
    /// None for a key the outbox no longer holds.
    pub fn settle(
        &mut self,
        key: &str,
        status: Option<u16>,
        now_ms: u64,
    ) -> Option<(Settled, Vec<Delivery>)> {
        let at = self.rows.iter().position(|d| d.key == key)?;
        let settled = match outcome(status) {
            Outcome::Delivered => Settled::Delivered,
            Outcome::Refused => Settled::Refused,
            Outcome::Retry => {
                let row = &self.rows[at];
                let failures = row.failures.saturating_add(1);
                match next_try_ms(row.queued_ms, failures, now_ms, RETRY_BASE, RETRY_CAP) {
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
        self.rows.len() != before
    }

    /// When the next delivery is due; None when the outbox is empty.
    pub fn next_due_ms(&self) -> Option<u64> {
        self.rows.iter().map(|d| d.next_ms).min()
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

    fn hooks() -> Vec<String> {
        vec!["SLACK_URL".into(), "HOOK_URL".into()]
    }

    #[test]
    fn one_delivery_per_receiver_due_at_once_in_event_order() {
        let mut out = Outbox::default();
        let new = out.enqueue(10, &down("e-10", "primary", 0), &hooks(), 100);
        assert_eq!(new.len(), 2);
        out.enqueue(9, &down("e-9", "primary", 0), &hooks(), 100);
        let due = out.due(100);
        assert_eq!(due.len(), 4);
        assert_eq!(due[0].event.id, "e-9", "by number, not by text");
        assert_eq!(out.next_due_ms(), Some(100));
        assert!(out.due(99).is_empty());
    }

    #[test]
    fn a_failing_receiver_holds_its_others_back_and_the_rest_go_on() {
        let mut out = Outbox::default();
        out.enqueue(1, &down("e-1", "primary", 0), &hooks(), 0);
        out.enqueue(2, &down("e-2", "replica", 0), &hooks(), 0);
        let first = key(1, "SLACK_URL");
        let (settled, changed) = out.settle(&first, Some(500), 10).unwrap();
        assert_eq!(settled, Settled::Retry { at_ms: 2_010 });
        assert_eq!(changed.len(), 2, "its own row and the receiver's next");
        assert!(changed.iter().all(|d| d.next_ms == 2_010));
        let due: Vec<String> = out.due(10).into_iter().map(|d| d.key).collect();
        assert_eq!(due, [key(1, "HOOK_URL"), key(2, "HOOK_URL")]);
        let taken = key(1, "HOOK_URL");
        assert_eq!(
            out.settle(&taken, Some(204), 11).unwrap().0,
            Settled::Delivered
        );
        assert_eq!(out.settle(&taken, Some(204), 11), None, "gone");
        // Again and again: the pauses double.
        let (settled, _) = out.settle(&first, None, 2_010).unwrap();
        assert_eq!(settled, Settled::Retry { at_ms: 6_010 });
        assert_eq!(
            out.settle(&first, Some(404), 6_010).unwrap().0,
            Settled::Refused
        );
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn a_day_undelivered_is_given_up() {
        let mut out = Outbox::default();
        out.enqueue(1, &down("e-1", "primary", 0), &hooks()[..1], 0);
        let day = 24 * 3600 * 1000;
        let k = key(1, "SLACK_URL");
        assert_eq!(out.settle(&k, Some(503), day).unwrap().0, Settled::GaveUp);
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
        assert_eq!(Outbox::restore(vec![row.clone()]).due(5), vec![row]);
    }
}
