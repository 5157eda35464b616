//! Two real agents on loopback, each with a fake connector driven by the
//! `command` controller, 1 s intervals. Assertions wait on generous
//! deadlines, never on wall-clock durations. The scenarios run one at a time
//! (`support::serial`): each is a dozen processes on fast clocks.

mod support;

use support::{eventually, http, ready, serial, Pair, POLL_MS, TAKEOVER_AFTER};

#[test]
fn standby_takes_over_when_the_primary_loses_egress_then_stands_down_after_fail_back() {
    let _serial = serial();
    let mut pair = Pair::start("egress", false, TAKEOVER_AFTER);
    pair.cut_primary_egress();
    pair.expect(
        20,
        "the standby serves and the primary's connector is stopped",
        |p| ready(p.standby.connector_port) && !p.primary.connector_running(&p.dir),
    );
    assert!(
        pair.standby.health().contains(r#""takeovers":1"#),
        "{}",
        pair.standby.health()
    );
    // Isolated: the primary must not fail back while egress is down.
    std::thread::sleep(std::time::Duration::from_millis(POLL_MS * 4));
    assert!(
        !pair.primary.connector_running(&pair.dir),
        "fail-back without egress\n{}",
        pair.logs()
    );

    pair.restore_primary_egress();
    pair.expect(
        20,
        "the primary fails back and the standby stands down",
        |p| ready(p.primary.connector_port) && !p.standby.connector_running(&p.dir),
    );
    let logs = pair.logs();
    for line in [
        "decision take-over",
        "decision fail-back",
        "peer agent stopped its connector",
    ] {
        assert!(logs.contains(line), "missing {line:?} in\n{logs}");
    }
    // Make before break: the primary, once its connector was ready, asked
    // the standby to stop (the standby may have noticed first and stood
    // down on its own poll; either way both served for a moment only).
    // The standby may be seen stopped before the primary's request has
    // been answered and logged: wait for the line.
    let asked = eventually(10, || {
        let primary_log = pair.log("primary");
        let failback = primary_log.rfind("decision fail-back").unwrap_or(0);
        primary_log[failback..].contains("peer agent stopped its connector")
    });
    assert!(asked, "{}", pair.logs());
}

#[test]
fn maintenance_flag_holds_the_primary_down_until_released() {
    let _serial = serial();
    let pair = Pair::start("maintenance", false, TAKEOVER_AFTER);
    let on = pair.primary.run_cli(&pair.dir, &["maintenance", "on"]);
    assert!(on.status.success(), "{on:?}");
    pair.expect(20, "the primary drains and the standby takes over", |p| {
        ready(p.standby.connector_port) && !p.primary.connector_running(&p.dir)
    });
    std::thread::sleep(std::time::Duration::from_millis(POLL_MS * 4));
    assert!(
        !pair.primary.connector_running(&pair.dir),
        "started under the flag\n{}",
        pair.logs()
    );
    assert!(pair.primary.health().contains(r#""maintenance":true"#));

    let off = pair.primary.run_cli(&pair.dir, &["maintenance", "off"]);
    assert!(off.status.success(), "{off:?}");
    pair.expect(
        20,
        "the primary serves again and the standby stands down",
        |p| ready(p.primary.connector_port) && !p.standby.connector_running(&p.dir),
    );
    assert!(pair.logs().contains("decision drain"), "{}", pair.logs());
}

#[test]
fn a_bare_stop_of_the_primary_connector_is_undone_by_the_primary() {
    let _serial = serial();
    // The margin is structural: the primary restarts its connector at its
    // next local look (one poll), the standby would need eight misses.
    let pair = Pair::start("bare-stop", false, 8);
    let stop = std::process::Command::new("sh")
        .arg("-c")
        .arg(pair.primary.stop_command(&pair.dir))
        .status()
        .expect("stop");
    assert!(stop.success());
    pair.expect(20, "the primary restarts its own connector", |p| {
        ready(p.primary.connector_port)
    });
    std::thread::sleep(std::time::Duration::from_millis(POLL_MS * 2));
    assert!(
        !pair.standby.connector_running(&pair.dir),
        "the standby serves\n{}",
        pair.logs()
    );
    let health = pair.standby.health();
    assert!(
        health.contains(r#""takeovers":0"#),
        "{health}\n{}",
        pair.logs()
    );
    // One fail-back at start-up, one for the bare stop.
    let failbacks = pair.log("primary").matches("decision fail-back").count();
    assert_eq!(failbacks, 2, "{}", pair.logs());
}

#[test]
fn peer_agent_down_while_its_connector_serves_is_no_takeover() {
    let _serial = serial();
    let mut pair = Pair::start("agent-down", true, TAKEOVER_AFTER);
    if let Some(mut agent) = pair.primary_agent.take() {
        agent.kill();
    }
    assert!(
        ready(pair.primary.connector_port),
        "the primary's connector still serves"
    );
    std::thread::sleep(std::time::Duration::from_millis(POLL_MS * 8));
    assert!(
        !pair.standby.connector_running(&pair.dir),
        "took over from a serving connector\n{}",
        pair.logs()
    );
    assert!(pair.standby.health().contains(r#""takeovers":0"#));

    // The connector loses its edge too: now the standby must serve.
    let lost = http(
        "POST",
        pair.primary.connector_port,
        "/control/disconnect",
        None,
    );
    assert_eq!(lost.map(|r| r.0), Some(200));
    pair.expect(20, "the standby takes over", |p| {
        ready(p.standby.connector_port)
    });
}
