//! The checker's state in its Durable Object: the config, and the pure
//! machine (`failover_core::edge::checker::Checker`) in a `RefCell`, never
//! borrowed across an `.await` (isolates' requests interleave with the
//! alarm at every await); and the probes the machine asks for.

use std::cell::RefCell;

use failover_core::edge::checker::stored::Restored;
use failover_core::edge::config::WorkerConfig;
use failover_core::edge::overrides::wire::Snapshot;
use failover_core::edge::overrides::Overrides;
use failover_core::edge::report;
use futures_util::future::join_all;

use crate::{clock, forward, log};

pub struct Checker {
    pub config: WorkerConfig,
    pub machine: RefCell<failover_core::edge::checker::Checker>,
    /// Operators' overrides (src/overrides.rs); the checker is their one
    /// writer.
    pub overrides: RefCell<Overrides>,
}

impl Checker {
    /// The checker for `config`, from what its storage held.
    pub fn new(config: WorkerConfig, restored: Restored, overrides: Overrides) -> Checker {
        let machine =
            failover_core::edge::checker::Checker::new(&config, restored, clock::now_ms());
        Checker {
            config,
            machine: RefCell::new(machine),
            overrides: RefCell::new(overrides),
        }
    }

    /// What isolates are told: the verdicts and the overrides, as of now.
    pub fn snapshot(&self, now_ms: u64) -> String {
        let verdicts = self.machine.borrow().shared_verdicts();
        Snapshot::of(&self.config, now_ms, verdicts, &self.overrides.borrow()).encode()
    }

    /// Probes what is due (a round, or origins an isolate reported), all at
    /// once, and hands each result to the machine.
    pub async fn probe_due(&self) {
        let due = self.machine.borrow_mut().take_due_probes(clock::now_ms());
        join_all(due.into_iter().map(|origin| self.probe(origin))).await;
        self.machine.borrow_mut().probes_done(clock::now_ms());
    }

    async fn probe(&self, origin: usize) {
        let Some(target) = self.config.origins.get(origin) else {
            return;
        };
        let result = forward::probe(target, self.config.attempt_timeout_ms).await;
        let change = self
            .machine
            .borrow_mut()
            .record_probe(origin, result, clock::now_ms());
        if let Some(change) = change {
            log::line(&report::health_change(&self.config, &change));
        }
    }
}
