//! Two real agents on loopback, each with a fake connector driven by the
//! `command` controller, fast intervals. Assertions wait on generous
//! deadlines, never on wall-clock durations.

mod support;

use support::{http, ready, Pair, POLL_MS};

#[test]
fn standby_takes_over_when_the_primary_loses_egress_then_stands_down_after_fail_back() {
    let mut pair = Pair::start("egress", false);
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
    std::thread::sleep(std::time::Duration::from_millis(POLL_MS * 6));
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
        "decision stand-down",
        "decision fail-back",
        "peer agent stopped its connector",
    ] {
        assert!(logs.contains(line), "missing {line:?} in\n{logs}");
    }
}

#[test]
fn maintenance_flag_holds_the_primary_down_until_released() {
    let pair = Pair::start("maintenance", false);
    let on = pair.primary.run_cli(&pair.dir, &["maintenance", "on"]);
    assert!(on.status.success(), "{on:?}");
    pair.expect(20, "the primary drains and the standby takes over", |p| {
        ready(p.standby.connector_port) && !p.primary.connector_running(&p.dir)
    });
    std::thread::sleep(std::time::Duration::from_millis(POLL_MS * 6));
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
    let pair = Pair::start("bare-stop", false);
    let stop = std::process::Command::new("sh")
        .arg("-c")
        .arg(pair.primary.stop_command(&pair.dir))
        .status()
        .expect("stop");
    assert!(stop.success());
    pair.expect(20, "the primary restarts its own connector", |p| {
        ready(p.primary.connector_port)
    });
    pair.expect(20, "the standby is not serving", |p| {
        !p.standby.connector_running(&p.dir)
    });
    // Which clock fired first is printed, not asserted: on a loaded machine
    // the 400 ms polls can slip.
    let health = pair.standby.health();
    println!("bare stop: standby health after the primary restarted: {health}");
}

#[test]
fn peer_agent_down_while_its_connector_serves_is_no_takeover() {
    let mut pair = Pair::start("agent-down", true);
    if let Some(mut agent) = pair.primary_agent.take() {
        agent.kill();
    }
    assert!(
        ready(pair.primary.connector_port),
        "the primary's connector still serves"
    );
    std::thread::sleep(std::time::Duration::from_millis(POLL_MS * 10));
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
