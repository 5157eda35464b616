//! The checker's own state, built once per object from `[vars]` and the
//! verdicts it stored (they survive the object being evicted between
//! alarms), and one round of probes over every origin.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use failover_core::edge::config::WorkerConfig;
use failover_core::edge::health::HealthMap;
use failover_core::edge::overrides::wire::Snapshot;
use failover_core::edge::overrides::Overrides;
use failover_core::edge::report;
use failover_core::edge::shared::{decode_map, encode_map, Source};
use futures_util::future::join_all;

use crate::{clock, forward, log};

pub struct Checker {
    pub config: WorkerConfig,
    health: RefCell<HealthMap>,
    /// When the last round of probes finished.
    confirmed_ms: Cell<u64>,
    /// Operators' overrides (src/overrides.rs); the checker is their one
    /// writer.
    pub overrides: RefCell<Overrides>,
}

impl Checker {
    /// The checker for `config`, with the verdicts it stored last (`stored`,
    /// as [`Checker::verdicts`] wrote them), if any.
    pub fn new(config: WorkerConfig, stored: Option<String>, overrides: Overrides) -> Checker {
        let mut health = HealthMap::new(
            config.origins.len(),
            config.health_rise,
            config.health_fall,
            Duration::from_millis(config.health_interval_ms),
        );
        let mut confirmed_ms = 0;
        if let Some(stored) = stored {
            for (name, verdict) in decode_map(&stored) {
                if let Some(i) = config.origins.iter().position(|o| o.name == name) {
                    health.adopt(
                        i,
                        verdict,
                        Source::Global,
                        verdict.confirmed_ms,
                        Duration::MAX,
                    );
                    confirmed_ms = confirmed_ms.max(verdict.confirmed_ms);
                }
            }
        }
        Checker {
            config,
            health: RefCell::new(health),
            confirmed_ms: Cell::new(confirmed_ms),
            overrides: RefCell::new(overrides),
        }
    }

    /// Every origin's verdict, in the wire format isolates adopt.
    pub fn verdicts(&self) -> String {
        let health = self.health.borrow();
        let confirmed = self.confirmed_ms.get();
        encode_map(
            self.config.origins.iter().enumerate().filter_map(|(i, o)| {
                Some((o.name.as_str(), health.verdict_to_share(i, confirmed)?))
            }),
        )
    }

    /// What isolates are told: the verdicts and the overrides, as of now.
    pub fn snapshot(&self, now_ms: u64) -> String {
        let health = self.health.borrow();
        let confirmed = self.confirmed_ms.get();
        let verdicts = (0..self.config.origins.len())
            .filter_map(|i| Some((i, health.verdict_to_share(i, confirmed)?)));
        Snapshot::of(&self.config, now_ms, verdicts, &self.overrides.borrow()).encode()
    }

    /// Probes every origin at once, and records when the round finished.
    pub async fn round(&self) {
        join_all((0..self.config.origins.len()).map(|i| self.probe(i))).await;
        self.confirmed_ms.set(clock::now_ms());
    }

    async fn probe(&self, origin: usize) {
        let Some(target) = self.config.origins.get(origin) else {
            return;
        };
        let result = forward::probe(target, self.config.attempt_timeout_ms).await;
        let change = self
            .health
            .borrow_mut()
            .record_probe(origin, result, clock::now_ms());
        if let Some(change) = change {
            log::line(&report::health_change(&self.config, &change));
        }
    }
}
