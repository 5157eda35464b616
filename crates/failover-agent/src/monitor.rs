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

use failover_core::node::{Check, Outcome};
use tokio::time::{interval, MissedTickBehavior};

use crate::log;
use crate::peer;
use crate::readiness;
use crate::sd_notify;
use crate::state::Shared;

pub async fn run(shared: Arc<Shared>) {
    let watchdog_period = sd_notify::watchdog_period();
    let mut watchdog = interval(watchdog_period.unwrap_or(Duration::from_secs(3600)));
    watchdog.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut logged = String::new();
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
        turn(&shared, &mut logged).await;
    }
}

async fn turn(shared: &Shared, logged: &mut String) {
    let turn = shared.actions.lock().await;
    shared.alive();
    let due = shared.node().take_due(shared.now_ms());
    for check in due {
        match check {
            Check::App => app_once(shared, logged, &turn).await,
            Check::Local => local_once(shared, logged, &turn).await,
            Check::Peer => peer_once(shared, logged, &turn).await,
            Check::Egress => egress_once(shared, logged, &turn).await,
        }
    }
    shared.tell_systemd_status();
}

/// Logs a hold only when its reason changed; carries out anything else.
async fn handle(
    shared: &Shared,
    outcome: Outcome,
    logged: &mut String,
    turn: &tokio::sync::MutexGuard<'_, ()>,
) {
    shared.alive();
    if outcome.is_hold() {
        if *logged != outcome.why {
            log::info(&outcome.why);
            *logged = outcome.why;
        }
        return;
    }
    shared.carry_out(&outcome, turn).await;
    *logged = outcome.why;
}

type Turn<'a> = tokio::sync::MutexGuard<'a, ()>;

/// The app's health URL: 2xx or 3xx response headers within the probe
/// timeout. The body is never read: an endpoint that streams megabytes or
/// garbage costs nothing but its status line.
async fn app_once(shared: &Shared, logged: &mut String, turn: &Turn<'_>) {
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
        Ok(status) => Some(format!("{} answered HTTP {status}", app.health_url)),
        Err(e) => Some(format!("{}: {e}", app.health_url)),
    };
    shared.probes().app_seconds = Some(started.elapsed().as_secs_f64());
    let outcome = shared
        .node()
        .observe_app(shared.now_ms(), problem.as_deref());
    handle(shared, outcome, logged, turn).await;
}

/// The maintenance flag, the connector's process state and, with a tunnel
/// per node, its readiness.
async fn local_once(shared: &Shared, logged: &mut String, turn: &Turn<'_>) {
    let flag = shared.config.maintenance_flag.exists();
    let outcome = shared.node().set_maintenance(shared.now_ms(), flag);
    handle(shared, outcome, logged, turn).await;

    match shared.control.is_running().await {
        Ok(running) => {
            let outcome = shared.node().observe_local(shared.now_ms(), running);
            handle(shared, outcome, logged, turn).await;
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
        shared.probes().local_ready = Some(ready.is_ready());
        let outcome = shared.node().observe_local_ready(shared.now_ms(), &ready);
        handle(shared, outcome, logged, turn).await;
    }
}

async fn peer_once(shared: &Shared, logged: &mut String, turn: &Turn<'_>) {
    let Some(peer_agent) = &shared.config.peer_agent_url else {
        return;
    };
    let view = peer::look(shared, peer_agent).await;
    let outcome = shared.node().observe_peer(shared.now_ms(), &view);
    handle(shared, outcome, logged, turn).await;
}

async fn egress_once(shared: &Shared, logged: &mut String, turn: &Turn<'_>) {
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
        Ok(r) if (300..400).contains(&r.status) => Some(format!(
            "{} redirects (HTTP {} to {}): egress.url must answer 2xx itself",
            config.egress_url,
            r.status,
            // The redirect's target is whatever the far end chose.
            r.location
                .as_deref()
                .map_or_else(|| "no Location".to_string(), log::quoted)
        )),
        Ok(r) => Some(format!("{} answered HTTP {}", config.egress_url, r.status)),
        Err(e) => Some(format!("{}: {e}", config.egress_url)),
    };
    if problem.is_none() {
        if let Some(addr) = &config.egress_tcp {
            problem = crate::client::tcp_connect(addr, config.probe_timeout)
                .await
                .err();
        }
    }
    shared.probes().egress_seconds = Some(started.elapsed().as_secs_f64());
    if let Some(problem) = &problem {
        // Only worth a line when it matters: the connector is down and this
        // is why it stays down, or the check itself is misconfigured.
        let redirect = problem.contains(" redirects ");
        if redirect || shared.node().snapshot().local_running == Some(false) {
            log::info(&format!("egress check failed: {problem}"));
        }
    }
    let outcome = shared
        .node()
        .observe_egress(shared.now_ms(), problem.is_none());
    handle(shared, outcome, logged, turn).await;
}
