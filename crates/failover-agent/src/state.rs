//! What the monitor loop and the HTTP API share: the decision machine, the
//! connector controller and the last probe figures. How decisions and
//! orders are carried out lives in `actions`.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use failover_core::node::Node;
use failover_core::notify::agent::Teller;

use crate::client::Client;
use crate::config::{Config, Token};
use crate::connector::ConnectorControl;
use crate::history::History;
use crate::maintenance_flag::MaintenanceFlag;
use crate::notify::{Destination, Hidden, Outbox};
use crate::sd_notify;

/// Whether this node drained its origin at the Worker (`edge_drain`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct EdgeState {
    /// Set by a drain the Worker took; cleared once `auto` is taken.
    pub drained: bool,
    /// The last attempt to give it back failed (its log line was written).
    pub resume_failing: bool,
}

/// Last probe latencies in seconds, for `/metrics`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Probes {
    pub peer_seconds: Option<f64>,
    pub peer_direct_seconds: Option<f64>,
    pub egress_seconds: Option<f64>,
    pub relay_seconds: Option<f64>,
    pub app_seconds: Option<f64>,
    pub last_transition_unix: Option<f64>,
}

pub(crate) struct Shared {
    pub config: Config,
    pub token: Token,
    pub client: Client,
    pub control: Box<dyn ConnectorControl>,
    /// `maintenance_flag`, looked at by the monitor and a drain's wait.
    pub maintenance_flag: MaintenanceFlag,
    /// `[notify]`: messages waiting, per destination.
    pub outbox: Arc<Outbox>,
    /// Who the agent's events say they are from.
    pub teller: Teller,
    /// The last decisions, kept in `state_dir`.
    history: Mutex<History>,
    /// `[worker]`'s admin token, read at start.
    pub worker_token: Option<Hidden>,
    /// This node's origin at the Worker (`edge_drain`).
    edge: Mutex<EdgeState>,
    node: Mutex<Node>,
    probes: Mutex<Probes>,
    /// Serialises connector starts and stops between the monitor and the
    /// API: the monitor holds it across observe, decide and act, the API
    /// across an order's recording and carrying out (`actions::obey`), so
    /// neither decides on a state the other is changing.
    pub actions: Arc<tokio::sync::Mutex<()>>,
    started: Instant,
    /// The last `STATUS=` line sent to systemd.
    told_status: Mutex<String>,
    /// systemd asked for watchdog pings.
    watchdog: bool,
    /// What is wrong with the pair's roles, once the peer said its own
    /// (`peer_role`); `/health` shows it.
    peer_role_problem: Mutex<Option<String>>,
}

impl Shared {
    pub(crate) fn new(
        config: Config,
        token: Token,
        client: Client,
        control: Box<dyn ConnectorControl>,
        destinations: Vec<Destination>,
        worker_token: Option<Hidden>,
    ) -> Shared {
        // How long the peer may keep looking ready after it handed us the
        // tunnel: its wait for our readiness and its stop, each bounded.
        let grace = (config.command_timeout + config.probe_timeout) * 2;
        let node = Node::new(
            config.role,
            config.timing,
            config.app.as_ref().map(|a| a.timing),
            0,
        )
        .with_handover_grace_ms(u64::try_from(grace.as_millis()).unwrap_or(u64::MAX));
        let worker = config.worker.as_ref();
        let teller = Teller {
            node: config.name.clone(),
            origin: worker.and_then(|w| w.origin.clone()),
            site: worker.map_or_else(|| config.name.clone(), |w| w.url.host.clone()),
        };
        let edge = EdgeState {
            // An agent restarted during maintenance still gives the origin
            // back once it serves again.
            drained: config
                .state_dir
                .join(crate::worker::DRAINED_MARKER)
                .symlink_metadata()
                .is_ok(),
            resume_failing: false,
        };
        let history = History::load(&config.state_dir);
        Shared {
            maintenance_flag: MaintenanceFlag::new(&config.maintenance_flag),
            config,
            token,
            client,
            control,
            outbox: Arc::new(Outbox::new(destinations)),
            teller,
            history: Mutex::new(history),
            worker_token,
            edge: Mutex::new(edge),
            node: Mutex::new(node),
            probes: Mutex::new(Probes::default()),
            actions: Arc::new(tokio::sync::Mutex::new(())),
            started: Instant::now(),
            told_status: Mutex::new(String::new()),
            watchdog: sd_notify::watchdog_period().is_some(),
            peer_role_problem: Mutex::new(None),
        }
    }

    /// What `peer_role::check` found wrong with the pair's roles.
    pub(crate) fn set_peer_role_problem(&self, problem: Option<String>) {
        *self
            .peer_role_problem
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = problem;
    }

    pub(crate) fn peer_role_problem(&self) -> Option<String> {
        self.peer_role_problem
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Milliseconds on the agent's monotonic clock: the core's timestamps.
    /// tokio's clock, so that tests with paused time drive the core too.
    pub(crate) fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The instant a core timestamp stands for.
    pub(crate) fn instant_at(&self, ms: u64) -> Instant {
        self.started + Duration::from_millis(ms)
    }

    pub(crate) fn uptime_seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// A poisoned lock only means another task panicked mid-update; the
    /// machine's state is still the best we have.
    pub(crate) fn node(&self) -> MutexGuard<'_, Node> {
        self.node.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn edge(&self) -> MutexGuard<'_, EdgeState> {
        self.edge.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn history(&self) -> MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn probes(&self) -> MutexGuard<'_, Probes> {
        self.probes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state in words on `systemctl status` (`STATUS=`), sent when it
    /// changes.
    pub(crate) fn tell_systemd_status(&self) {
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
        line += &format!("; last: {}: {}", s.last_decision.as_str(), s.last_evidence);
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
    pub(crate) fn alive(&self) {
        if self.watchdog {
            sd_notify::notify("WATCHDOG=1");
        }
    }
}
