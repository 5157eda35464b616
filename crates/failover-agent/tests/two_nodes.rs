//! Two agents of a shared tunnel, in this process on paused time, each with
//! a connector that runs no process (`support::in_process`), 1 s polls. The
//! agents are the real ones on loopback; the clock jumps whenever both are
//! idle, so a scenario of a minute of polls takes milliseconds, and the
//! waits are generous deadlines on that clock, never wall-clock claims.
//! `scripts/gate.sh` runs the same pair as two real processes.

// Test code: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use support::in_process::Pair;
use support::{POLL_MS, TAKEOVER_AFTER};

async fn polls(n: u64) {
    tokio::time::sleep(Duration::from_millis(POLL_MS * n)).await;
}

/// Make before break: each time the standby's connector stopped while the
/// primary served, the primary's was ready first. Checked when it stops.
fn primary_ready_when_the_standby_stopped(pair: &Pair) -> bool {
    !pair.standby_connector.is_running() && pair.primary_connector.is_ready()
}

#[tokio::test(start_paused = true)]
async fn standby_takes_over_when_the_primary_loses_egress_then_stands_down_after_fail_back() {
    let pair = Pair::start("egress", false, TAKEOVER_AFTER).await;
    pair.primary_egress.cut();
    pair.expect(
        20,
        "the standby serves and the primary's connector is stopped",
        |p| p.standby_connector.is_ready() && !p.primary_connector.is_running(),
    )
    .await;
    let health = pair.standby.health().await;
    assert!(health.contains(r#""takeovers":1"#), "{health}");
    // Isolated: the primary must not fail back while egress is down.
    polls(4).await;
    assert!(
        !pair.primary_connector.is_running(),
        "fail-back without egress: {}",
        pair.primary.health().await
    );

    pair.primary_egress.restore();
    pair.expect(
        20,
        "the primary fails back and the standby stands down",
        primary_ready_when_the_standby_stopped,
    )
    .await;
    // One fail-back at start-up, one now; the standby stood down once,
    // by itself or on the primary's order.
    let primary = pair.primary.health().await;
    assert!(primary.contains(r#""failbacks":2"#), "{primary}");
    let stops = pair.standby_connector.stops.lock().unwrap().len();
    assert_eq!(stops, 1, "{}", pair.standby.health().await);
}

#[tokio::test(start_paused = true)]
async fn maintenance_flag_holds_the_primary_down_until_released() {
    let pair = Pair::start("maintenance", false, TAKEOVER_AFTER).await;
    pair.primary.maintenance(true);
    pair.expect(20, "the primary drains and the standby takes over", |p| {
        p.standby_connector.is_ready() && !p.primary_connector.is_running()
    })
    .await;
    polls(4).await;
    assert!(
        !pair.primary_connector.is_running(),
        "started under the flag: {}",
        pair.primary.health().await
    );
    let health = pair.primary.health().await;
    assert!(health.contains(r#""maintenance":true"#), "{health}");
    assert!(health.contains(r#""drains":1"#), "{health}");

    pair.primary.maintenance(false);
    pair.expect(
        20,
        "the primary serves again and the standby stands down",
        primary_ready_when_the_standby_stopped,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_bare_stop_of_the_primary_connector_is_undone_by_the_primary() {
    // The margin is structural: the primary restarts its connector at its
    // next local look (one poll), the standby would need eight misses.
    let pair = Pair::start("bare-stop", false, 8).await;
    pair.primary_connector.stop_behind_the_agents_back();
    pair.expect(20, "the primary restarts its own connector", |p| {
        p.primary_connector.is_ready()
    })
    .await;
    polls(2).await;
    assert!(
        !pair.standby_connector.is_running(),
        "the standby serves: {}",
        pair.standby.health().await
    );
    let standby = pair.standby.health().await;
    assert!(standby.contains(r#""takeovers":0"#), "{standby}");
    // One fail-back at start-up, one for the bare stop.
    let primary = pair.primary.health().await;
    assert!(primary.contains(r#""failbacks":2"#), "{primary}");
    assert_eq!(pair.primary_connector.starts(), 2);
}

#[tokio::test(start_paused = true)]
async fn peer_agent_down_while_its_connector_serves_is_no_takeover() {
    let mut pair = Pair::start("agent-down", true, TAKEOVER_AFTER).await;
    pair.primary.kill();
    assert!(
        pair.primary_connector.is_ready(),
        "the primary's connector still serves"
    );
    polls(8).await;
    assert!(
        !pair.standby_connector.is_running(),
        "took over from a serving connector: {}",
        pair.standby.health().await
    );
    let standby = pair.standby.health().await;
    assert!(standby.contains(r#""takeovers":0"#), "{standby}");

    // The connector loses its edge too: now the standby must serve.
    pair.primary_connector.disconnect();
    pair.expect(20, "the standby takes over", |p| {
        p.standby_connector.is_ready()
    })
    .await;
}

/// Two standbys (a `role` copied from one node's config to the other):
/// each says so in its log and its `/health`, once the other answers. A
/// proper pair says nothing.
#[tokio::test(start_paused = true)]
async fn two_nodes_with_the_same_role_are_told_apart_from_a_bad_token() {
    use support::in_process::{Agent, Connector, Dir, Egress, Spec};
    let dir = Dir::new("same-role");
    let (a_listener, b_listener) = (Agent::listener().await, Agent::listener().await);
    let (a_port, b_port) = (
        a_listener.local_addr().unwrap().port(),
        b_listener.local_addr().unwrap().port(),
    );
    let egress = Egress::start().await;
    let (a_connector, b_connector) = (
        Connector::new(std::sync::Arc::clone(&egress)).await,
        Connector::new(std::sync::Arc::clone(&egress)).await,
    );
    let spec = |connector: &Connector, peer, flag: &str| Spec {
        role: "standby",
        poll_ms: POLL_MS,
        takeover_after: TAKEOVER_AFTER,
        connector_ready_url: connector.ready_url(),
        peer_agent_port: peer,
        peer_connector_ready_url: None,
        egress_port: egress.port(),
        flag: dir.path(flag),
    };
    let a = Agent::start(
        &spec(&a_connector, b_port, "a.maintenance"),
        a_listener,
        &a_connector,
    );
    let b = Agent::start(
        &spec(&b_connector, a_port, "b.maintenance"),
        b_listener,
        &b_connector,
    );
    polls(3).await;
    for agent in [&a, &b] {
        let health = agent.health().await;
        assert!(
            health.contains("is configured as standby too"),
            "no word of the clash: {health}"
        );
    }

    let pair = Pair::start("roles-fine", false, TAKEOVER_AFTER).await;
    polls(3).await;
    for agent in [&pair.primary, &pair.standby] {
        let health = agent.health().await;
        assert!(health.contains(r#""peer_role_problem":null"#), "{health}");
    }
}
