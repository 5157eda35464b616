//! The driver of the decision machine: it sleeps until the time the core
//! gives ([`failover_core::node::Node::next_due_ms`]), takes the due checks,
//! runs each (app health, the flag and the local connector, the peer's
//! connector, egress) and feeds the results back. Each probe and command has
//! its own deadline, so one step is bounded; the watchdog is pinged while
//! sleeping and between steps. A turn holds the `actions` lock from its
//! first observation to its last action: an API-ordered stop is either
//! wholly before the turn (and seen by it) or wholly after it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use std::fmt;

use failover_core::node::{Check, Evidence, Outcome};
use tokio::time::{interval, MissedTickBehavior};

use crate::actions::{self, Turn};
use crate::announce;
use crate::client::ProbeError;
use crate::edge_drain;
use crate::log;
use crate::peer;
use crate::readiness;
use crate::sd_notify;
use crate::state::Shared;
use crate::url::Url;
use failover_core::node::edge_drain::resume_due;

pub(crate) async fn run(shared: Arc<Shared>) {
    let watchdog_period = sd_notify::watchdog_period();
    let mut watchdog = interval(watchdog_period.unwrap_or(Duration::from_secs(3600)));
    watchdog.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut seen = Seen::default();
    loop {
        let due = shared.instant_at(shared.node().next_due_ms());
        let sleep = tokio::time::sleep_until(due);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                () = &mut sleep => break,
                // Pinged from this loop (and between the steps of a turn),
                // so a wedged loop stops the pings and systemd restarts the
                // agent.
                _ = watchdog.tick(), if watchdog_period.is_some() => shared.alive(),
            }
        }
        turn(&shared, &mut seen).await;
    }
}

async fn turn(shared: &Shared, seen: &mut Seen) {
    let turn = shared.actions.lock().await;
    shared.alive();
    let due = shared.node().take_due(shared.now_ms());
    for check in due {
        match check {
            Check::App => app_once(shared, seen, &turn).await,
            Check::Local => local_once(shared, seen, &turn).await,
            Check::Peer => peer_once(shared, seen, &turn).await,
            Check::Egress => egress_once(shared, seen, &turn).await,
        }
    }
    shared.tell_systemd_status();
}

/// What the monitor remembers between turns.
#[derive(Default)]
struct Seen {
    /// The evidence last logged: a hold is logged only when its evidence
    /// differs (the machine repeats the last evidence when an observation
    /// brought nothing new).
    logged: Option<Evidence>,
    /// The maintenance flag at the last local look; `None` before the
    /// first, which changes nothing worth telling (an agent restarted under
    /// the flag is not news; a drain it then carries out is).
    flag: Option<bool>,
}

/// Logs a hold only when its evidence changed; carries out anything else.
/// Tells what was carried out, and a flag change (`flag_changed_to`) even
/// when it moved nothing.
async fn handle(
    shared: &Shared,
    outcome: Outcome,
    seen: &mut Seen,
    turn: &Turn<'_>,
    flag_changed_to: Option<bool>,
) {
    shared.alive();
    if outcome.is_hold() {
        if flag_changed_to.is_some() {
            announce::tell(shared, &outcome, flag_changed_to);
        }
        if seen.logged.as_ref() != Some(&outcome.evidence) {
            log::info(&outcome.evidence.to_string());
            seen.logged = Some(outcome.evidence);
        } else if log::enabled(log::Level::Debug) {
            // -v: proof the checks run while nothing changes.
            log::debug(&format!("unchanged: {}", outcome.evidence));
        }
        return;
    }
    if actions::carry_out(shared, &outcome, turn).await {
        announce::tell(shared, &outcome, flag_changed_to);
    }
    seen.logged = Some(outcome.evidence);
}

/// The app's health URL: 2xx or 3xx response headers within the probe
/// timeout. The body is never read: an endpoint that streams megabytes or
/// garbage costs nothing but its status line.
async fn app_once(shared: &Shared, seen: &mut Seen, turn: &Turn<'_>) {
    let Some(app) = &shared.config.app else {
        return;
    };
    let started = Instant::now();
    let problem = match shared
        .client
        .status(&app.health_url, shared.config.probe_timeout)
        .await
    {
        Ok(status) if (200..400).contains(&status) => None,
        Ok(status) => Some(Problem::Status {
            url: &app.health_url,
            status,
        }),
        Err(error) => Some(Problem::Probe {
            url: &app.health_url,
            error,
        }),
    };
    shared.probes().app_seconds = Some(started.elapsed().as_secs_f64());
    // The core keeps the last problem as the app's `last check` text.
    let problem = problem.map(|p| p.to_string());
    let outcome = shared
        .node()
        .observe_app(shared.now_ms(), problem.as_deref());
    handle(shared, outcome, seen, turn, None).await;
}

/// The maintenance flag, the connector's process state and, with a tunnel
/// per node, its readiness.
async fn local_once(shared: &Shared, seen: &mut Seen, turn: &Turn<'_>) {
    let flag = shared.maintenance_flag.is_set();
    let outcome = shared.node().set_maintenance(shared.now_ms(), flag);
    let changed = seen.flag.is_some_and(|was| was != flag).then_some(flag);
    seen.flag = Some(flag);
    handle(shared, outcome, seen, turn, changed).await;

    match shared.control.is_running().await {
        Ok(running) => {
            let outcome = shared.node().observe_local(shared.now_ms(), running);
            handle(shared, outcome, seen, turn, None).await;
        }
        Err(e) => log::warn(&format!(
            "cannot tell whether the local connector runs: {e}"
        )),
    }

    if shared.node().wants_local_readiness() {
        let result = shared
            .client
            .get(
                &shared.config.connector_ready_url,
                shared.config.probe_timeout,
            )
            .await;
        let ready = readiness::from_result(result);
        let outcome = shared.node().observe_local_ready(shared.now_ms(), &ready);
        handle(shared, outcome, seen, turn, None).await;
    }

    // A drain this node set at the Worker, not given back yet (its
    // fail-back's attempt failed, or the agent restarted): again, now that
    // the connector serves.
    let s = shared.node().snapshot();
    if resume_due(edge_drain::drained(shared), s.maintenance, s.local_ready) {
        edge_drain::resume(shared).await;
    }
}

async fn peer_once(shared: &Shared, seen: &mut Seen, turn: &Turn<'_>) {
    let Some(peer_agent) = &shared.config.peer_agent_url else {
        return;
    };
    let view = peer::look(shared, peer_agent).await;
    let outcome = shared.node().observe_peer(shared.now_ms(), &view);
    handle(shared, outcome, seen, turn, None).await;
}

async fn egress_once(shared: &Shared, seen: &mut Seen, turn: &Turn<'_>) {
    let config = &shared.config;
    let started = Instant::now();
    // Directly, never through the tunnel: the question is whether this
    // node's uplink reaches Cloudflare. A redirect is not an answer from
    // the place asked about (a captive portal answers that way too).
    let mut problem = match shared
        .client
        .get(&config.egress_url, config.probe_timeout)
        .await
    {
        Ok(r) if (200..300).contains(&r.status) => None,
        Ok(r) if (300..400).contains(&r.status) => Some(Problem::Redirect {
            url: &config.egress_url,
            status: r.status,
            location: r.location,
        }),
        Ok(r) => Some(Problem::Status {
            url: &config.egress_url,
            status: r.status,
        }),
        Err(error) => Some(Problem::Probe {
            url: &config.egress_url,
            error,
        }),
    };
    if problem.is_none() {
        if let Some(addr) = &config.egress_tcp {
            problem = crate::client::tcp_connect(addr, config.probe_timeout)
                .await
                .err()
                .map(Problem::Tcp);
        }
    }
    shared.probes().egress_seconds = Some(started.elapsed().as_secs_f64());
    if let Some(problem) = &problem {
        // Only worth a line when it matters: the connector is down and this
        // is why it stays down, or the check itself is misconfigured.
        let redirect = matches!(problem, Problem::Redirect { .. });
        if redirect || shared.node().snapshot().local_running == Some(false) {
            log::info(&format!("egress check failed: {problem}"));
        } else {
            log::debug(&format!("egress check failed: {problem}"));
        }
    }
    let outcome = shared
        .node()
        .observe_egress(shared.now_ms(), problem.is_none());
    handle(shared, outcome, seen, turn, None).await;
}

/// What a failed app or egress check found.
enum Problem<'a> {
    /// Egress must answer 2xx itself: a redirect is not an answer from the
    /// place asked about (a captive portal answers that way too).
    Redirect {
        url: &'a Url,
        status: u16,
        location: Option<String>,
    },
    Status {
        url: &'a Url,
        status: u16,
    },
    Probe {
        url: &'a Url,
        error: ProbeError,
    },
    /// `egress.tcp`: the error names the address.
    Tcp(ProbeError),
}

impl fmt::Display for Problem<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Redirect {
                url,
                status,
                location,
            } => write!(
                f,
                "{url} redirects (HTTP {status} to {}): egress.url must answer 2xx itself",
                // The redirect's target is whatever the far end chose.
                location
                    .as_deref()
                    .map_or_else(|| "no Location".to_string(), log::quoted)
            ),
            Problem::Status { url, status } => write!(f, "{url} answered HTTP {status}"),
            Problem::Probe { url, error } => write!(f, "{url}: {error}"),
            Problem::Tcp(error) => write!(f, "{error}"),
        }
    }
}
