//! What the monitor loop and the HTTP API share: the decision machine, the
//! connector controller and the last probe figures.

use std::sync::{Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use failover_core::node::{Decision, Node, Outcome};

use crate::client::Client;
use crate::config::Config;
use crate::connector::ConnectorControl;
use crate::log;
use crate::sd_notify;

/// Last probe latencies in seconds, for `/metrics`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Probes {
    pub peer_seconds: Option<f64>,
    pub peer_direct_seconds: Option<f64>,
    pub egress_seconds: Option<f64>,
    pub relay_seconds: Option<f64>,
    pub last_transition_unix: Option<f64>,
}

pub struct Shared {
    pub config: Config,
    pub client: Client,
    pub control: Box<dyn ConnectorControl>,
    node: Mutex<Node>,
    probes: Mutex<Probes>,
    /// Serialises connector starts and stops between the monitor and the
    /// API: the monitor holds it across observe, decide and act, the API
    /// across recording and carrying out a stop or start, so neither
    /// decides on a state the other is changing.
    pub actions: tokio::sync::Mutex<()>,
    started: Instant,
    /// systemd asked for watchdog pings.
    watchdog: bool,
}

impl Shared {
    pub fn new(config: Config, client: Client, control: Box<dyn ConnectorControl>) -> Shared {
        let node = Node::new(config.role, config.timing);
        Shared {
            config,
            client,
            control,
            node: Mutex::new(node),
            probes: Mutex::new(Probes::default()),
            actions: tokio::sync::Mutex::new(()),
            started: Instant::now(),
            watchdog: sd_notify::watchdog_period().is_some(),
        }
    }

    /// Milliseconds on the agent's monotonic clock: the core's timestamps.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    pub fn uptime_seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// A poisoned lock only means another task panicked mid-update; the
    /// machine's state is still the best we have.
    pub fn node(&self) -> MutexGuard<'_, Node> {
        self.node.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn probes(&self) -> MutexGuard<'_, Probes> {
        self.probes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tells systemd's watchdog the agent is alive. Called between the
    /// steps of a monitor turn too, so a slow turn (every step has its own
    /// deadline) never goes quiet for longer than one step.
    pub fn alive(&self) {
        if self.watchdog {
            sd_notify::notify("WATCHDOG=1");
        }
    }

    /// Carries out a decision: logs why, then starts/stops the connector and
    /// asks the peer to stand down, in the order the outcome lists. The
    /// caller holds [`Shared::actions`] across the observation, the decision
    /// and this, so that an API-ordered stop cannot slip in between.
    pub async fn carry_out(&self, outcome: &Outcome, _turn: &tokio::sync::MutexGuard<'_, ()>) {
        use failover_core::node::Action;
        if outcome.decision == Decision::Hold {
            return;
        }
        let message = format!("decision {}: {}", outcome.decision.as_str(), outcome.why);
        match outcome.decision {
            Decision::FailBack | Decision::TakeOver => log::notice(&message),
            _ => log::info(&message),
        }
        if let Ok(now) = SystemTime::now().duration_since(UNIX_EPOCH) {
            self.probes().last_transition_unix = Some(now.as_secs_f64());
        }
        for action in outcome.actions {
            self.alive();
            match action {
                Action::StartLocal => match self.control.start().await {
                    Ok(()) => log::info(&format!(
                        "local connector started ({})",
                        self.control.describe()
                    )),
                    Err(e) => {
                        // Not serving ourselves, we must not take the tunnel
                        // from a peer that might: the rest is skipped.
                        log::error(&format!(
                            "starting the local connector failed: {e}; not asking the peer to \
                             stand down; deciding again at the next poll"
                        ));
                        break;
                    }
                },
                Action::StopLocal => match self.control.stop().await {
                    Ok(()) => log::info(&format!(
                        "local connector stopped ({})",
                        self.control.describe()
                    )),
                    Err(e) => log::error(&format!(
                        "stopping the local connector failed: {e}; deciding again at the next poll"
                    )),
                },
                Action::AskPeerToStop => self.ask_peer_to_stop().await,
            }
        }
        self.alive();
    }

    /// The peer's stop may take its whole `command_timeout`; waiting less
    /// would log a stop that still happens as "not reachable".
    async fn ask_peer_to_stop(&self) {
        let url = self.config.peer_agent_url.with_path("/failover/stop");
        let deadline = self.config.command_timeout + self.config.probe_timeout;
        match self.client.post(&url, &self.config.token, deadline).await {
            Ok(r) if r.status == 200 => log::info("peer agent stopped its connector on request"),
            Ok(r) => log::warn(&format!(
                "peer agent refused to stand down: HTTP {}",
                r.status
            )),
            // A dead peer is the usual reason for a take-over.
            Err(e) => log::info(&format!(
                "peer agent not reachable to stand down ({e}); serving anyway"
            )),
        }
    }
}
