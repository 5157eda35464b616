//! `GET /metrics`: Prometheus text exposition, rendered from the machine's
//! snapshot and the last probe figures.

use std::fmt::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use failover_core::node::{AppState, Reason};

use crate::state::Shared;

pub(crate) fn render(shared: &Shared) -> String {
    let s = shared.node().snapshot();
    let p = *shared.probes();
    let labels = format!(
        "role=\"{}\",topology=\"{}\"",
        s.role.as_str(),
        s.role.topology().as_str()
    );
    let mut out = String::new();
    // The build is a label set of its own; written first, by hand.
    let _ = writeln!(
        out,
        "# HELP failover_agent_build_info Version and git revision of the running agent.\n\
         # TYPE failover_agent_build_info gauge\n\
         failover_agent_build_info{{{labels},version=\"{}\",revision=\"{}\"}} 1",
        crate::build::VERSION,
        crate::build::REVISION
    );
    // Decisions by their typed reason, one sample each.
    let _ = writeln!(
        out,
        "# HELP failover_agent_decisions_total Decisions carried out, by reason.\n\
         # TYPE failover_agent_decisions_total counter"
    );
    for reason in Reason::ALL.into_iter().filter(|r| *r != Reason::Steady) {
        let _ = writeln!(
            out,
            "failover_agent_decisions_total{{{labels},reason=\"{}\"}} {}",
            reason.as_str(),
            s.reasons.get(reason)
        );
    }
    // `[notify]`'s outbox, one sample per outcome.
    let n = shared.outbox.counts();
    let _ = writeln!(
        out,
        "# HELP failover_agent_notifications_total Notification messages by what became of \
         them: delivered (2xx), failed (refused with a 3xx or 4xx, or given up after a day), dropped \
         (oldest out of a full queue). One message per destination.\n\
         # TYPE failover_agent_notifications_total counter"
    );
    for (outcome, count) in [
        ("delivered", n.delivered),
        ("failed", n.failed),
        ("dropped", n.dropped),
    ] {
        let _ = writeln!(
            out,
            "failover_agent_notifications_total{{{labels},outcome=\"{outcome}\"}} {count}"
        );
    }
    let mut metric = |name: &str, kind: &str, help: &str, value: Option<f64>| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        if let Some(v) = value {
            let _ = writeln!(out, "{name}{{{labels}}} {v}");
        }
    };
    let flag = |b: bool| Some(if b { 1.0 } else { 0.0 });
    metric(
        "failover_agent_connector_running",
        "gauge",
        "1 while the local connector process runs, 0 when stopped (absent until first looked at).",
        s.local_running.and_then(flag),
    );
    metric(
        "failover_agent_connector_ready",
        "gauge",
        "1 while the local connector's /ready shows an edge connection (tunnel per node; absent \
         otherwise and while it is stopped).",
        s.local_ready.and_then(flag),
    );
    metric(
        "failover_agent_app_healthy",
        "gauge",
        "1 while the app is up by its rise/fall thresholds, 0 when down or not yet known (absent \
         without [app]).",
        s.app.map(|a| if a == AppState::Up { 1.0 } else { 0.0 }),
    );
    metric(
        "failover_agent_maintenance",
        "gauge",
        "1 while the maintenance flag file exists.",
        flag(s.maintenance),
    );
    metric(
        "failover_agent_maintenance_since_timestamp_seconds",
        "gauge",
        "Unix time the maintenance flag was last set or cleared (absent before).",
        s.maintenance_since_ms.and_then(|since| {
            let ago = shared.now_ms().saturating_sub(since) as f64 / 1000.0;
            let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
            Some((now.as_secs_f64() - ago).floor())
        }),
    );
    metric(
        "failover_agent_peer_misses_in_a_row",
        "gauge",
        "Consecutive non-ready looks at the peer's connector (standby).",
        Some(f64::from(s.peer_misses_in_a_row)),
    );
    metric(
        "failover_agent_peer_misses_total",
        "counter",
        "Non-ready looks at the peer's connector since start (standby).",
        Some(s.peer_misses_total as f64),
    );
    metric(
        "failover_agent_takeovers_total",
        "counter",
        "Take-overs by this standby.",
        Some(s.takeovers as f64),
    );
    metric(
        "failover_agent_standdowns_total",
        "counter",
        "Stand-downs by this standby.",
        Some(s.standdowns as f64),
    );
    metric(
        "failover_agent_failbacks_total",
        "counter",
        "Fail-backs by this primary.",
        Some(s.failbacks as f64),
    );
    metric(
        "failover_agent_drains_total",
        "counter",
        "Connector stops for the maintenance flag.",
        Some(s.drains as f64),
    );
    metric(
        "failover_agent_withdrawals_total",
        "counter",
        "Connector stops because the app was down or the connector lost its uplink.",
        Some(s.withdrawals as f64),
    );
    metric(
        "failover_agent_egress_good_in_a_row",
        "gauge",
        "Consecutive good egress checks (primary).",
        Some(f64::from(s.egress_good_in_a_row)),
    );
    metric(
        "failover_agent_failback_required_checks",
        "gauge",
        "Good egress checks needed to fail back; doubles after a reversed fail-back.",
        Some(f64::from(s.failback_required)),
    );
    metric(
        "failover_agent_last_transition_timestamp_seconds",
        "gauge",
        "Unix time of the last take-over, stand-down, fail-back or drain.",
        p.last_transition_unix,
    );
    metric(
        "failover_agent_peer_probe_seconds",
        "gauge",
        "Duration of the last readiness look through the peer agent.",
        p.peer_seconds,
    );
    metric(
        "failover_agent_peer_direct_probe_seconds",
        "gauge",
        "Duration of the last direct readiness look at the peer connector.",
        p.peer_direct_seconds,
    );
    metric(
        "failover_agent_egress_probe_seconds",
        "gauge",
        "Duration of the last egress check.",
        p.egress_seconds,
    );
    metric(
        "failover_agent_relay_probe_seconds",
        "gauge",
        "Duration of the last relayed look at the local connector's /ready.",
        p.relay_seconds,
    );
    metric(
        "failover_agent_app_probe_seconds",
        "gauge",
        "Duration of the last app health check.",
        p.app_seconds,
    );
    metric(
        "failover_agent_notifications_queued",
        "gauge",
        "Notification messages waiting for their receiver, over all [notify] destinations.",
        Some(n.queued as f64),
    );
    metric(
        "failover_agent_uptime_seconds",
        "gauge",
        "Seconds since the agent started.",
        Some(shared.uptime_seconds()),
    );
    out
}
