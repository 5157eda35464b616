//! The outbox: one bounded queue per destination, emptied by a task of its
//! own, so a receiver that hangs or refuses holds back only its own
//! messages, never the monitor loop (which only pushes, under a lock held
//! for a `VecDeque` operation) nor another receiver.
//!
//! Delivery is at least once, in order per destination: the oldest message
//! is tried until its receiver takes it (2xx), refuses it for good (a 3xx,
//! never followed, or a 4xx other than 408/425/429:
//! `failover_core::notify::retry` says why each), or a day has passed;
//! between tries the core's pauses, doubling from 1 s to a minute, or
//! longer when a throttled receiver's `Retry-After` asks (at most 10 min).
//! A queue over [`QUEUE_MAX`] drops its oldest message, counted and logged:
//! a receiver down for days must not grow the agent without bound.
//!
//! The queues live in memory: when the agent stops, [`Outbox::finish`]
//! gives what is queued a short grace ([`STOP_GRACE`]) and says how many
//! messages it leaves undelivered.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;
use tokio::time::Instant;

use failover_core::notify::retry::{self, Answer, Outcome};
use failover_core::notify::Event;

use crate::client::Client;
use crate::log;

use super::deliver;
use super::destination::Destination;

/// Messages waiting per destination. The agent decides a few times a day
/// at most; 64 is hours of a flapping node.
pub(crate) const QUEUE_MAX: usize = 64;
/// The first pause after a failed try; it doubles up to [`RETRY_CAP`].
const RETRY_BASE: Duration = Duration::from_secs(1);
/// The longest pause between tries: a receiver back up hears within a
/// minute.
const RETRY_CAP: Duration = Duration::from_secs(60);
/// How long a stopping agent waits for its queued messages, at most. A
/// decision told just before a stop (a maintenance drain, then the
/// node's shutdown) usually needs one round trip; systemd's stop timeout
/// (90 s by default) is far above it, and a restart waits no longer than
/// this for a dead receiver.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(5);

/// One message waiting for one destination.
struct Pending {
    event: Event,
    /// When it was first tried, on the outbox's clock; `None` until then.
    first_try_ms: Option<u64>,
    failures: u32,
    next_try_ms: u64,
}

/// A destination and its queue.
struct Lane {
    /// Its place in the config, from 1, for log lines (never the URL).
    number: usize,
    destination: Destination,
    queue: Mutex<VecDeque<Pending>>,
    wake: Notify,
}

/// What the outbox did, for `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub delivered: u64,
    /// Refused for good by the receiver (a 3xx or 4xx), or given up after
    /// a day.
    pub failed: u64,
    /// Dropped from a full queue, oldest first.
    pub dropped: u64,
    /// Waiting now, over all destinations.
    pub queued: u64,
}

pub(crate) struct Outbox {
    lanes: Vec<Arc<Lane>>,
    /// Woken whenever a head message is settled, for [`Outbox::finish`].
    settled: Notify,
    started: Instant,
    delivered: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
}

impl Outbox {
    pub(crate) fn new(destinations: Vec<Destination>) -> Outbox {
        Outbox {
            lanes: destinations
                .into_iter()
                .enumerate()
                .map(|(i, destination)| {
                    Arc::new(Lane {
                        number: i + 1,
                        destination,
                        queue: Mutex::new(VecDeque::new()),
                        wake: Notify::new(),
                    })
                })
                .collect(),
            settled: Notify::new(),
            started: Instant::now(),
            delivered: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    fn now_ms(&self) -> u64 {
        millis(self.started.elapsed())
    }

    /// Queues `event` for every destination and wakes their tasks. Never
    /// waits: the monitor calls it in the middle of a turn.
    pub(crate) fn push(&self, event: &Event) {
        let now = self.now_ms();
        for lane in &self.lanes {
            let mut queue = lock(&lane.queue);
            if queue.len() >= QUEUE_MAX {
                if let Some(oldest) = queue.pop_front() {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                    log::warn(&format!(
                        "notification {} ({}) dropped unsent: [notify] #{} has {QUEUE_MAX} \
                         messages waiting (its receiver has not taken one for a while)",
                        oldest.event.kind.as_str(),
                        oldest.event.id,
                        lane.number
                    ));
                }
            }
            queue.push_back(Pending {
                event: event.clone(),
                first_try_ms: None,
                failures: 0,
                next_try_ms: now,
            });
            drop(queue);
            lane.wake.notify_one();
        }
    }

    pub(crate) fn counts(&self) -> Counts {
        Counts {
            delivered: self.delivered.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            queued: self.lanes.iter().map(|l| lock(&l.queue).len() as u64).sum(),
        }
    }

    /// When the agent stops: lets the destinations' tasks go on for at
    /// most `grace`, while some queue holds a message due within it, and
    /// returns how many are still queued then (lost with the process). A
    /// message waiting for its retry is not hurried: the pauses and a
    /// receiver's `Retry-After` still hold, so a receiver that is down
    /// costs the stop nothing unless its retry falls inside the grace.
    pub(crate) async fn finish(&self, grace: Duration) -> u64 {
        let deadline = Instant::now() + grace;
        let deadline_ms = self.now_ms().saturating_add(millis(grace));
        loop {
            // Registered before looking, so a settle in between wakes it.
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            let due_within = self.lanes.iter().any(|lane| {
                lock(&lane.queue)
                    .front()
                    .is_some_and(|head| head.next_try_ms < deadline_ms)
            });
            if !due_within {
                break;
            }
            tokio::select! {
                () = settled => {}
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        self.counts().queued
    }

    /// The destinations with messages waiting, for a person: `[notify] #2
    /// (json): 3`, comma-separated.
    pub(crate) fn waiting(&self) -> String {
        let waiting: Vec<String> = self
            .lanes
            .iter()
            .map(|lane| (lane, lock(&lane.queue).len()))
            .filter(|(_, n)| *n > 0)
            .map(|(lane, n)| {
                format!(
                    "[notify] #{} ({}): {n}",
                    lane.number,
                    lane.destination.format.as_str()
                )
            })
            .collect();
        waiting.join(", ")
    }

    /// One task per destination, for as long as the agent runs.
    pub(crate) fn spawn(self: &Arc<Self>, client: &Client) {
        for lane in &self.lanes {
            let (outbox, lane, client) = (Arc::clone(self), Arc::clone(lane), client.clone());
            tokio::spawn(async move { outbox.drain(&lane, &client).await });
        }
    }

    async fn drain(&self, lane: &Lane, client: &Client) {
        loop {
            // The oldest message, if it is due; else how long to wait.
            let head = {
                let queue = lock(&lane.queue);
                queue.front().map(|p| (p.event.clone(), p.next_try_ms))
            };
            let Some((event, due_ms)) = head else {
                lane.wake.notified().await;
                continue;
            };
            let now = self.now_ms();
            if due_ms > now {
                let at = self.started + Duration::from_millis(due_ms);
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    // A push may have dropped the head: look again.
                    () = lane.wake.notified() => {}
                }
                continue;
            }
            let answer = deliver::attempt(client, &lane.destination, &event, unix_s()).await;
            let what = match &answer {
                Ok(Answer {
                    status: Some(status),
                    ..
                }) => format!("HTTP {status}"),
                Ok(_) => "no status".to_string(),
                Err(e) => e.to_string(),
            };
            self.settle(lane, &event, answer.unwrap_or_default(), &what);
            self.settled.notify_waiters();
        }
    }

    /// Books one attempt's answer on the head of the queue, if the head is
    /// still the message tried (a push may have dropped it meanwhile).
    fn settle(&self, lane: &Lane, event: &Event, answer: Answer, what: &str) {
        let now = self.now_ms();
        let mut queue = lock(&lane.queue);
        let Some(head) = queue.front_mut().filter(|p| p.event.id == event.id) else {
            return;
        };
        let name = format!(
            "notification {} ({}) to [notify] #{} ({})",
            event.kind.as_str(),
            event.id,
            lane.number,
            lane.destination.format.as_str()
        );
        match retry::outcome(answer.status) {
            Outcome::Delivered => {
                if head.failures > 0 {
                    log::info(&format!(
                        "{name} delivered after {} failed tries",
                        head.failures
                    ));
                }
                queue.pop_front();
                self.delivered.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Refused(why) => {
                log::warn(&format!(
                    "{name} refused ({what}): not sent again: {}",
                    why.advice()
                ));
                queue.pop_front();
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Retry => {
                let first = *head.first_try_ms.get_or_insert(now);
                head.failures = head.failures.saturating_add(1);
                let (base, cap, asked) = (RETRY_BASE, RETRY_CAP, answer.wait);
                match retry::next_try_ms(first, head.failures, now, base, cap, asked) {
                    Some(next) => {
                        // The first failure and then the debug log: a
                        // receiver down for an hour is one line, not sixty.
                        let line = format!(
                            "{name} not delivered ({what}); trying again in {} s",
                            next.saturating_sub(now).div_ceil(1000)
                        );
                        if head.failures == 1 {
                            log::warn(&line);
                        } else {
                            log::debug(&line);
                        }
                        head.next_try_ms = next;
                    }
                    None => {
                        log::warn(&format!(
                            "{name} given up after {} tries over a day ({what})",
                            head.failures
                        ));
                        queue.pop_front();
                        self.failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn unix_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A poisoned lock only means a task panicked mid-update; the queue is
/// still the best there is.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use failover_core::notify::{Format, Kind, Source};

    use crate::url::Url;

    fn event(n: u64) -> Event {
        Event {
            id: format!("e-{n}"),
            kind: Kind::Withdraw,
            origin: None,
            at_ms: n,
            reason: "app down".into(),
            site: "home".into(),
            source: Source::Agent,
            node: Some("home".into()),
            from: None,
            to: None,
            more: 0,
        }
    }

    /// A stop waits for a message due within the grace (here no task
    /// tries it: the whole grace), and not for one whose retry comes
    /// after it.
    #[tokio::test(start_paused = true)]
    async fn a_stop_waits_only_for_what_is_due_within_the_grace() {
        let destination = Destination {
            format: Format::Json,
            url: Url::parse_secret("http://127.0.0.1:1/hook").unwrap(),
            secret: None,
        };
        let outbox = Outbox::new(vec![destination]);
        outbox.push(&event(1));
        let started = Instant::now();
        assert_eq!(outbox.finish(STOP_GRACE).await, 1);
        assert_eq!(started.elapsed(), STOP_GRACE, "due now: waited for");
        if let Some(head) = lock(&outbox.lanes[0].queue).front_mut() {
            head.next_try_ms = outbox.now_ms() + 30_000;
        }
        let started = Instant::now();
        assert_eq!(outbox.finish(STOP_GRACE).await, 1);
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "a retry after the grace: not waited for"
        );
        assert_eq!(outbox.waiting(), "[notify] #1 (json): 1");
    }

    /// A receiver gone for days costs at most QUEUE_MAX messages per
    /// destination; the oldest go first, each counted.
    #[test]
    fn a_full_queue_drops_its_oldest_and_counts_them() {
        let destination = Destination {
            format: Format::Json,
            url: Url::parse_secret("http://127.0.0.1:1/hook").unwrap(),
            secret: None,
        };
        let outbox = Outbox::new(vec![destination.clone(), destination]);
        for n in 0..(QUEUE_MAX as u64 + 6) {
            outbox.push(&event(n));
        }
        let counts = outbox.counts();
        assert_eq!(counts.dropped, 12, "{counts:?}");
        assert_eq!(counts.queued, 2 * QUEUE_MAX as u64, "{counts:?}");
        let oldest = lock(&outbox.lanes[0].queue)
            .front()
            .map(|p| p.event.id.clone());
        assert_eq!(oldest.as_deref(), Some("e-6"));
    }
}
