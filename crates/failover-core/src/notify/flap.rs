//! The flap guard: at most one message per subject (an origin, a node, the
//! site) per interval. A change inside the interval is held back; when the
//! interval has passed, the newest held change goes out if it says
//! something other than the last message did, with the number of changes
//! it stands for ("and 4 more changes"). A subject that flapped and came
//! back to where the last message left it sends nothing, and its count
//! rides on its next message. So a ten-flip storm costs two messages, and
//! the last message about a subject always tells its current state.

use serde_json::{json, Value};

use super::event::{Event, Kind};

/// Per-subject memory of what was last said and what is held back.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Subject {
    name: String,
    last_sent_ms: u64,
    last_sent: Kind,
    /// The newest change held back, if it may still need telling.
    pending: Option<Event>,
    /// Changes held back since the last message (pending included).
    held: u32,
}

/// See the module doc. Persisted by the shell with [`FlapGuard::to_json`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlapGuard {
    min_interval_ms: u64,
    subjects: Vec<Subject>,
}

impl FlapGuard {
    /// A guard allowing one message per subject per `min_interval_ms`.
    pub fn new(min_interval_ms: u64) -> FlapGuard {
        FlapGuard {
            min_interval_ms,
            subjects: Vec::new(),
        }
    }

    /// A new event: returned (to send now) or held back.
    pub fn offer(&mut self, mut event: Event, now_ms: u64) -> Option<Event> {
        let interval = self.min_interval_ms;
        let Some(subject) = self.subjects.iter_mut().find(|s| s.name == event.subject()) else {
            self.subjects.push(Subject {
                name: event.subject().to_owned(),
                last_sent_ms: now_ms,
                last_sent: event.kind,
                pending: None,
                held: 0,
            });
            return Some(event);
        };
        if now_ms < subject.last_sent_ms.saturating_add(interval) {
            subject.held = subject.held.saturating_add(1);
            subject.pending = Some(event);
            return None;
        }
        event.more = subject.held;
        subject.last_sent_ms = now_ms;
        subject.last_sent = event.kind;
        subject.pending = None;
        subject.held = 0;
        Some(event)
    }

    /// Held-back changes whose interval has passed and that change what the
    /// last message said.
    pub fn take_due(&mut self, now_ms: u64) -> Vec<Event> {
        let interval = self.min_interval_ms;
        let mut due = Vec::new();
        for subject in &mut self.subjects {
            if now_ms < subject.last_sent_ms.saturating_add(interval) {
                continue;
            }
            let Some(mut event) = subject.pending.take() else {
                continue;
            };
            if event.kind == subject.last_sent {
                continue; // Back where the last message left it: the count waits.
            }
            event.more = subject.held.saturating_sub(1);
            subject.last_sent_ms = now_ms;
            subject.last_sent = event.kind;
            subject.held = 0;
            due.push(event);
        }
        due
    }

    /// When [`FlapGuard::take_due`] next has something to look at.
    pub fn next_due_ms(&self) -> Option<u64> {
        self.subjects
            .iter()
            .filter(|s| s.pending.is_some())
            .map(|s| s.last_sent_ms.saturating_add(self.min_interval_ms))
            .min()
    }

    /// The guard as JSON, for storage between a Durable Object's wake-ups.
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.subjects
                .iter()
                .map(|s| {
                    json!({
                        "name": s.name,
                        "last_sent_ms": s.last_sent_ms,
                        "last_sent": s.last_sent.as_str(),
                        "pending": s.pending.as_ref().map(Event::to_json),
                        "held": s.held,
                    })
                })
                .collect(),
        )
    }

    /// Reads back [`FlapGuard::to_json`]; rows that do not parse are
    /// dropped (at worst one extra message), never a panic.
    pub fn from_json(min_interval_ms: u64, value: &Value) -> FlapGuard {
        let subjects = value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|row| {
                Some(Subject {
                    name: row.get("name")?.as_str()?.to_owned(),
                    last_sent_ms: row.get("last_sent_ms")?.as_u64()?,
                    last_sent: Kind::parse(row.get("last_sent")?.as_str()?)?,
                    pending: row.get("pending").and_then(Event::from_json),
                    held: row
                        .get("held")
                        .and_then(Value::as_u64)
                        .and_then(|n| u32::try_from(n).ok())
                        .unwrap_or(0),
                })
            })
            .collect();
        FlapGuard {
            min_interval_ms,
            subjects,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::event::tests::down;

    const MIN: u64 = 300_000;

    fn flip(n: u64, at_ms: u64) -> Event {
        let mut e = down(&format!("e-{n}"), "primary", at_ms);
        if n % 2 == 1 {
            e.kind = Kind::OriginUp;
        }
        e
    }

    #[test]
    fn a_ten_flip_storm_in_five_minutes_sends_at_most_two() {
        let mut guard = FlapGuard::new(MIN);
        let mut sent = Vec::new();
        // Ten flips 30 s apart: down, up, down, ... ending up.
        for n in 0..10 {
            let now = n * 30_000;
            sent.extend(guard.offer(flip(n, now), now));
            sent.extend(guard.take_due(now));
        }
        // Then an hour of quiet, looked at each second.
        for now in (300_000..3_900_000).step_by(1000) {
            sent.extend(guard.take_due(now));
        }
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert_eq!(sent[0].kind, Kind::OriginDown);
        assert_eq!(
            sent[1].kind,
            Kind::OriginUp,
            "the last message tells the state"
        );
        assert_eq!(sent[1].more, 8, "the nine held changes, less the one sent");
    }

    #[test]
    fn separate_subjects_do_not_hold_each_other() {
        let mut guard = FlapGuard::new(MIN);
        assert!(guard.offer(down("a", "primary", 0), 0).is_some());
        assert!(guard.offer(down("b", "replica", 1), 1).is_some());
    }

    #[test]
    fn back_where_it_was_says_nothing_and_the_count_rides_along() {
        let mut guard = FlapGuard::new(MIN);
        assert!(guard.offer(flip(0, 0), 0).is_some()); // down
        assert!(guard.offer(flip(1, 10), 10).is_none()); // up, held
        assert!(guard.offer(flip(2, 20), 20).is_none()); // down again, held
        assert!(guard.take_due(MIN).is_empty(), "still down: nothing new");
        assert_eq!(guard.next_due_ms(), None);
        let next = guard
            .offer(flip(3, MIN + 5), MIN + 5)
            .expect("interval passed");
        assert_eq!(next.more, 2);
    }

    #[test]
    fn due_time_is_the_end_of_the_interval() {
        let mut guard = FlapGuard::new(MIN);
        guard.offer(flip(0, 1000), 1000);
        assert_eq!(guard.next_due_ms(), None);
        guard.offer(flip(1, 2000), 2000);
        assert_eq!(guard.next_due_ms(), Some(1000 + MIN));
        assert!(guard.take_due(MIN + 999).is_empty());
        assert_eq!(guard.take_due(MIN + 1000).len(), 1);
    }

    #[test]
    fn storage_round_trips_and_junk_is_dropped() {
        let mut guard = FlapGuard::new(MIN);
        guard.offer(flip(0, 0), 0);
        guard.offer(flip(1, 10), 10);
        let back = FlapGuard::from_json(MIN, &guard.to_json());
        assert_eq!(back, guard);
        let junk = FlapGuard::from_json(MIN, &json!([1, {"name": 2}, "x", null]));
        assert_eq!(junk, FlapGuard::new(MIN));
        assert_eq!(
            FlapGuard::from_json(MIN, &json!({"not": "a list"})),
            FlapGuard::new(MIN)
        );
    }
}
