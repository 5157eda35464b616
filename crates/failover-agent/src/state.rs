//! What the monitor loop and the HTTP API share: the decision machine, the
//! connector controller and the last probe figures.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use failover_core::node::{Action, Decision, Node, Outcome};

use crate::client::Client;
use crate::config::Config;
use crate::connector::ConnectorControl;
use crate::log;
use crate::peer::{self, Asked};
use crate::readiness;
use crate::sd_notify;

/// Last probe latencies in seconds, for `/metrics`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Probes {
    pub peer_seconds: Option<f64>,
    pub peer_direct_seconds: Option<f64>,
    pub egress_seconds: Option<f64>,
    pub relay_seconds: Option<f64>,
    pub app_seconds: Option<f64>,
    /// Tunnel per node: the last look at the local connector's `/ready`.
    pub local_ready: Option<bool>,
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
    pub actions: Arc<tokio::sync::Mutex<()>>,
    started: Instant,
    /// The last `STATUS=` line sent to systemd.
    told_status: Mutex<String>,
    /// systemd asked for watchdog pings.
    watchdog: bool,
}

impl Shared {
    pub fn new(config: Config, client: Client, control: Box<dyn ConnectorControl>) -> Shared {
        let node = Node::new(
            config.role,
            config.timing,
            config.app.as_ref().map(|a| a.timing),
            0,
        );
        Shared {
            config,
            client,
            control,
            node: Mutex::new(node),
            probes: Mutex::new(Probes::default()),
            actions: Arc::new(tokio::sync::Mutex::new(())),
            started: Instant::now(),
            told_status: Mutex::new(String::new()),
            watchdog: sd_notify::watchdog_period().is_some(),
        }
    }

    /// Milliseconds on the agent's monotonic clock: the core's timestamps.
    /// tokio's clock, so that tests with paused time drive the core too.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The instant a core timestamp stands for.
    pub fn instant_at(&self, ms: u64) -> Instant {
        self.started + Duration::from_millis(ms)
    }

    /// How long the peer may keep looking ready after it handed us the
    /// tunnel: its wait for our readiness and its stop, each bounded.
    pub fn handover_grace(&self) -> Duration {
        (self.config.command_timeout + self.config.probe_timeout) * 2
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

    /// The state in words on `systemctl status` (`STATUS=`), sent when it
    /// changes.
    pub fn tell_systemd_status(&self) {
        let s = self.node().snapshot();
        let connector = match s.local_running {
            Some(true) => "connector running",
            Some(false) => "connector stopped",
            None => "connector not looked at yet",
        };
        let mut line = format!(
            "{} ({}): {connector}",
            s.role.as_str(),
            s.role.topology().as_str()
        );
        if let Some(app) = s.app {
            line += &format!(", app {}", app.as_str());
        }
        if s.maintenance {
            line += ", MAINTENANCE";
        }
        line += &format!("; last: {}: {}", s.last_decision.as_str(), s.last_why);
        // One line, and short: systemctl shows it in full.
        let line: String = line.replace('\n', " ").chars().take(200).collect();
        let mut told = self.told_status.lock().unwrap_or_else(|e| e.into_inner());
        if *told != line {
            sd_notify::notify(&format!("STATUS={line}"));
            *told = line;
        }
    }

    /// Tells systemd's watchdog the agent is alive. Called between the
    /// steps of a monitor turn too, so a slow turn (every step has its own
    /// deadline) never goes quiet for longer than one step.
    pub fn alive(&self) {
        if self.watchdog {
            sd_notify::notify("WATCHDOG=1");
        }
    }

    /// Carries out a decision: logs why, then runs its actions in order.
    /// The caller holds [`Shared::actions`] across the observation, the
    /// decision and this, so that an API-ordered stop cannot slip in
    /// between.
    pub async fn carry_out(&self, outcome: &Outcome, _turn: &tokio::sync::MutexGuard<'_, ()>) {
        if outcome.decision == Decision::Hold {
            return;
        }
        let message = format!("decision {}: {}", outcome.decision.as_str(), outcome.why);
        match outcome.decision {
            Decision::FailBack | Decision::TakeOver | Decision::Withdraw => log::notice(&message),
            _ => log::info(&message),
        }
        if let Ok(now) = SystemTime::now().duration_since(UNIX_EPOCH) {
            self.probes().last_transition_unix = Some(now.as_secs_f64());
        }
        let mut peer_took_it = false;
        for action in outcome.actions {
            self.alive();
            if !self.act(*action, outcome.decision, &mut peer_took_it).await {
                break;
            }
        }
        self.alive();
    }

    /// One action; false when the actions after it must be skipped.
    async fn act(&self, action: Action, decision: Decision, peer_took_it: &mut bool) -> bool {
        let peer_agent = self.config.peer_agent_url.as_ref();
        match (action, peer_agent) {
            (Action::StartLocal, _) => match self.control.start().await {
                Ok(()) => {
                    log::info(&format!(
                        "local connector started ({})",
                        self.control.describe()
                    ));
                    true
                }
                Err(e) => {
                    // Not serving ourselves, we must not take the tunnel
                    // from a peer that might: the rest is skipped.
                    log::error(&format!(
                        "starting the local connector failed: {e}; not asking the peer to \
                         stand down; deciding again at the next poll"
                    ));
                    false
                }
            },
            (Action::StopLocal, _) => {
                match self.control.stop().await {
                    Ok(()) => log::info(&format!(
                        "local connector stopped ({})",
                        self.control.describe()
                    )),
                    Err(e) => log::error(&format!(
                        "stopping the local connector failed: {e}; deciding again at the next poll"
                    )),
                }
                true
            }
            (Action::AwaitLocalReady, _) => {
                let bound = self.config.command_timeout;
                if self.await_local_ready(bound).await {
                    true
                } else {
                    log::warn(&format!(
                        "local connector not ready within {} ms of its start; not asking the \
                         peer to stand down (it does at its next look once ours is ready)",
                        bound.as_millis()
                    ));
                    false
                }
            }
            (Action::AskPeerToStop, Some(url)) => {
                // A take-over insists (the peer that missed our looks must
                // stop, or its link's flapping goes undamped). A fail-back
                // waits out one ordinary turn of the standby (a peer look
                // holds its lock for up to a probe timeout), but gives up
                // first when the two cross: the standby's take-over is then
                // let through, and a standby merely slow stands down by
                // itself once it sees ours ready.
                let retry_busy = if decision == Decision::TakeOver {
                    self.config.command_timeout
                } else {
                    self.config.probe_timeout * 3
                };
                peer::ask_to_stop(self, url, retry_busy).await;
                true
            }
            (Action::HandOverToPeer, Some(url)) => {
                *peer_took_it =
                    peer::hand_over(self, url, self.config.command_timeout).await == Asked::Done;
                true
            }
            (Action::AwaitPeerReady, Some(url)) => {
                let bound = self.config.command_timeout;
                let ready = *peer_took_it && peer::await_ready(self, url, bound).await;
                if ready {
                    log::info("peer connector ready: stopping ours (make before break)");
                } else {
                    log::error(&format!(
                        "PEER CONNECTOR NOT READY{}: stopping the local connector anyway; the \
                         tunnel has NO serving connector until the peer's starts",
                        if *peer_took_it {
                            format!(" within {} ms", bound.as_millis())
                        } else {
                            " (the handover was refused or not answered)".to_string()
                        }
                    ));
                }
                true
            }
            // The core asks nothing of a peer in the tunnel-per-node
            // topology, the only one without a peer URL.
            (Action::AskPeerToStop | Action::HandOverToPeer | Action::AwaitPeerReady, None) => true,
        }
    }

    /// Polls the local connector's `/ready` until it shows an edge
    /// connection or `bound` passes.
    async fn await_local_ready(&self, bound: Duration) -> bool {
        let until = Instant::now() + bound;
        loop {
            self.alive();
            let result = self
                .client
                .get(&self.config.connector_ready_url, self.config.probe_timeout)
                .await;
            if readiness::from_result(result).is_ready() {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(peer::READY_POLL).await;
        }
    }
}
