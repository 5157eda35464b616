//! The loop that feeds the decision machine: on every poll the maintenance
//! flag and the local connector state (both roles) and the peer's connector
//! readiness (standby); on every fail-back tick the egress check (primary).
//! Each probe and command has its own deadline, so one step is bounded; the
//! watchdog is pinged between steps, so a slow turn (systemd taking its time)
//! is no reason to be killed. A turn holds the `actions` lock from its first
//! observation to its last action: an API-ordered stop is either wholly
//! before the turn (and seen by it) or wholly after it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use failover_core::node::{Outcome, PeerView, Role};
use tokio::time::{interval_at, MissedTickBehavior};

use crate::log;
use crate::readiness;
use crate::sd_notify;
use crate::state::Shared;

pub async fn run(shared: Arc<Shared>) {
    let config = &shared.config;
    let now = tokio::time::Instant::now();
    // The standby's first look waits one interval: after a joint boot the
    // primary gets its head start, and the standby needs several misses anyway.
    let first_poll = match config.role {
        Role::Primary => now,
        Role::Standby => now + config.poll_interval(),
    };
    let mut poll = interval_at(first_poll, config.poll_interval());
    poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut failback = interval_at(now, config.failback_interval());
    failback.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let watchdog_period = sd_notify::watchdog_period();
    let mut watchdog = interval_at(now, watchdog_period.unwrap_or(Duration::from_secs(3600)));
    let mut logged = String::new();
    loop {
        tokio::select! {
            _ = poll.tick() => poll_once(&shared, &mut logged).await,
            _ = failback.tick(), if config.role == Role::Primary => egress_once(&shared, &mut logged).await,
            // Pinged from this loop (and between the steps of a turn), so a
            // wedged loop stops the pings and systemd restarts the agent.
            _ = watchdog.tick(), if watchdog_period.is_some() => shared.alive(),
        }
    }
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

async fn poll_once(shared: &Shared, logged: &mut String) {
    let turn = shared.actions.lock().await;
    shared.alive();
    let flag = shared.config.maintenance_flag.exists();
    let outcome = shared.node().set_maintenance(shared.now_ms(), flag);
    handle(shared, outcome, logged, &turn).await;

    match shared.control.is_running().await {
        Ok(running) => {
            let outcome = shared.node().observe_local(shared.now_ms(), running);
            handle(shared, outcome, logged, &turn).await;
        }
        Err(e) => log::warn(&format!(
            "cannot tell whether the local connector runs: {e}"
        )),
    }

    if shared.node().wants_peer_check() {
        let view = probe_peer(shared).await;
        let outcome = shared.node().observe_peer(shared.now_ms(), &view);
        handle(shared, outcome, logged, &turn).await;
    }
}

/// Readiness of the peer CONNECTOR, through the peer agent's relay and, if
/// configured, directly; both at once, each with the probe timeout.
async fn probe_peer(shared: &Shared) -> PeerView {
    let config = &shared.config;
    let relay = config.peer_agent_url.with_path("/connector/ready");
    let timed = |url| async move {
        let started = Instant::now();
        let result = shared.client.get(url, config.probe_timeout).await;
        (
            readiness::from_result(result),
            started.elapsed().as_secs_f64(),
        )
    };
    let (via_agent, direct) = match &config.peer_connector_ready_url {
        Some(direct_url) => {
            let (a, d) = tokio::join!(timed(&relay), timed(direct_url));
            (a, Some(d))
        }
        None => (timed(&relay).await, None),
    };
    let mut probes = shared.probes();
    probes.peer_seconds = Some(via_agent.1);
    probes.peer_direct_seconds = direct.as_ref().map(|d| d.1);
    PeerView {
        via_agent: via_agent.0,
        direct: direct.map(|d| d.0),
    }
}

async fn egress_once(shared: &Shared, logged: &mut String) {
    if !shared.node().wants_egress_check() {
        return;
    }
    let turn = shared.actions.lock().await;
    shared.alive();
    let config = &shared.config;
    let started = Instant::now();
    // Directly, never through the tunnel: the question is whether this
    // node's uplink reaches Cloudflare.
    let mut problem = match shared
        .client
        .get(&config.egress_url, config.probe_timeout)
        .await
    {
        Ok(r) if (200..300).contains(&r.status) => None,
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
        // is why it stays down.
        if shared.node().snapshot().local_running == Some(false) {
            log::info(&format!("egress check failed: {problem}"));
        }
    }
    let outcome = shared
        .node()
        .observe_egress(shared.now_ms(), problem.is_none());
    handle(shared, outcome, logged, &turn).await;
}
