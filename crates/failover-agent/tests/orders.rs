//! Orders between peers are signed, and nothing a peer or a stranger sends
//! reaches the log unescaped or one line each: real agents on loopback,
//! fake peers that record or answer with hostile text.

// Test code: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use failover_agent::{sign_order, NONCE_LEN, ORDER_SCHEME};
use failover_core::node::Role;
use support::{free_port, http, post_with, FakePeer, NodeSpec, Scratch, TOKEN};

fn unix_ms() -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    u64::try_from(now.as_millis()).unwrap()
}

fn node(name: &'static str, role: &'static str, peer_agent_port: u16, poll_ms: u64) -> NodeSpec {
    NodeSpec {
        name,
        role,
        agent_port: free_port(),
        connector_port: free_port(),
        edge_port: free_port(),
        peer_agent_port,
        peer_connector_port: None,
        poll_ms,
        takeover_after: 3,
    }
}

fn stop_signed(port: u16, to: Role, ts: u64, nonce: u8) -> Option<u16> {
    let header = sign_order(TOKEN, "POST", "/failover/stop", to, ts, &[nonce; NONCE_LEN]);
    post_with(port, "/failover/stop", &header)
}

/// A standby takes over from a peer that is not ready and orders it to
/// stop: the order is signed, the token is not on the wire, and the
/// captured order is worth one delivery at most, and nothing after the
/// window. An operator's bearer token keeps working throughout.
#[test]
fn a_captured_order_carries_no_token_and_cannot_be_replayed() {
    let _serial = support::serial();
    let dir = Scratch::new("orders");
    // The "primary" the standby looks at: never ready, records the stop.
    let fake = FakePeer::start(free_port(), 503, r#"{"readyConnections":0}"#.into());
    let standby = node("standby", "standby", fake.port, support::POLL_MS);
    let _edge = support::egress_server(standby.edge_port, &dir.path("edge.log"));
    let _standby = standby.start_agent(&dir);
    let _cleanup = support::StopConnectorOnDrop(&standby, &dir);
    assert!(
        support::eventually(30, || fake.authorization_of("/failover/stop").is_some()),
        "no stop order reached the fake primary:\n{}",
        std::fs::read_to_string(dir.path("standby.log")).unwrap_or_default()
    );
    let captured = fake.authorization_of("/failover/stop").unwrap();
    assert!(captured.starts_with(ORDER_SCHEME), "{captured}");
    assert!(!captured.contains(TOKEN), "the token travelled: {captured}");

    // A real primary with the same token. Slow clocks: it decides nothing
    // while it is ordered about.
    let primary = node("primary", "primary", free_port(), 60_000);
    let _primary = primary.start_agent(&dir);
    let _cleanup_primary = support::StopConnectorOnDrop(&primary, &dir);
    let port = primary.agent_port;

    // The captured order, delivered late (it never reached a real primary):
    // once, then never again.
    assert_eq!(post_with(port, "/failover/stop", &captured), Some(200));
    assert_eq!(post_with(port, "/failover/stop", &captured), Some(401));
    // Its path cannot be changed under the signature.
    assert_eq!(post_with(port, "/failover/start", &captured), Some(401));

    let now = unix_ms();
    // Kept past the window, or made on a clock 61 s off either way.
    assert_eq!(stop_signed(port, Role::Primary, now - 61_000, 1), Some(401));
    assert_eq!(stop_signed(port, Role::Primary, now + 61_000, 2), Some(401));
    // Addressed to the standby, sent to the primary.
    assert_eq!(stop_signed(port, Role::Standby, now, 3), Some(401));
    // A fresh one for the primary.
    assert_eq!(stop_signed(port, Role::Primary, now, 4), Some(200));

    // The operator's curl.
    let started = http("POST", port, "/failover/start", Some(TOKEN));
    assert_eq!(started.map(|a| a.0), Some(200));
    assert!(support::eventually(10, || primary.connector_running(&dir)));
    let stopped = http("POST", port, "/failover/stop", Some(TOKEN));
    assert_eq!(stopped.map(|a| a.0), Some(200));

    // 50 strangers' tries after the 4 refusals above: one line in all.
    for i in 0..50 {
        let bearer = format!("guess-{i}");
        assert_eq!(
            http("POST", port, "/failover/stop", Some(&bearer)).map(|a| a.0),
            Some(401)
        );
    }
    let log = std::fs::read_to_string(dir.path("primary.log")).unwrap_or_default();
    let refusal_lines = log.lines().filter(|l| l.contains(" refused: ")).count();
    assert_eq!(refusal_lines, 1, "{log}");
    assert!(
        log.contains("signed order replayed; 1 order(s) refused"),
        "{log}"
    );
    assert!(log.contains("the peer agent (signed)"), "{log}");
    assert!(log.contains("an operator (bearer token)"), "{log}");
}

/// A peer that refuses a handover with a newline, a forged journald
/// priority and 10 KB of text gets one escaped, bounded line.
#[test]
fn a_peers_hostile_answer_is_one_escaped_bounded_line() {
    let _serial = support::serial();
    let dir = Scratch::new("hostile-peer");
    let body = format!("no\n<3>forged: root login\r\n{}", "x".repeat(10_000));
    let fake = FakePeer::start(free_port(), 409, body);
    let primary = node("primary", "primary", fake.port, support::POLL_MS);
    let _edge = support::egress_server(primary.edge_port, &dir.path("edge.log"));
    let config = primary.write_config(&dir);
    let log_file = std::fs::File::create(dir.path("primary.log")).unwrap();
    // As under systemd: every line carries its `<N>` priority.
    let _agent = support::Proc(
        std::process::Command::new(support::AGENT)
            .args(["--config", &config.to_string_lossy(), "run"])
            .env("JOURNAL_STREAM", "8:1234")
            .stdout(std::process::Stdio::null())
            .stderr(log_file)
            .spawn()
            .unwrap(),
    );
    let _cleanup = support::StopConnectorOnDrop(&primary, &dir);
    let log = || std::fs::read_to_string(dir.path("primary.log")).unwrap_or_default();
    assert!(
        support::eventually(30, || primary.connector_running(&dir)),
        "the primary never served:\n{}",
        log()
    );
    assert!(primary
        .run_cli(&dir, &["maintenance", "on"])
        .status
        .success());
    assert!(
        support::eventually(30, || log().contains("refused the handover")),
        "{}",
        log()
    );
    std::thread::sleep(Duration::from_millis(200));
    let text = log();
    for line in text.lines() {
        let priority = line.get(..3).unwrap_or_default();
        assert!(
            ["<3>", "<4>", "<5>", "<6>"].contains(&priority),
            "a line without its own priority (forged?): {line:?}\n{text}"
        );
        assert!(!line.starts_with("<3>forged"), "{text}");
    }
    let refused = text
        .lines()
        .find(|l| l.contains("refused the handover"))
        .unwrap();
    assert!(
        refused.contains(r#""no\n<3>forged: root login\r\nxxx"#),
        "{refused}"
    );
    assert!(refused.contains("more bytes not shown"), "{refused}");
    assert!(refused.len() < 1024, "{} bytes: {refused}", refused.len());
}

/// This host's address on a network, not loopback: where a connection to
/// it comes from too. `None` on a host with no route off loopback.
fn lan_address() -> Option<std::net::Ipv4Addr> {
    // A UDP "connect" sends nothing: it only picks the route's source.
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("8.8.8.8:53").ok()?;
    match socket.local_addr().ok()?.ip() {
        std::net::IpAddr::V4(v4) if !v4.is_loopback() && !v4.is_unspecified() => Some(v4),
        _ => None,
    }
}

/// One POST to `ip:port` with a raw `Authorization`; status and body.
fn post_to(
    ip: std::net::Ipv4Addr,
    port: u16,
    path: &str,
    authorization: &str,
) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect((ip, port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nhost: agent\r\nauthorization: {authorization}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, text.split_once("\r\n\r\n")?.1.to_string()))
}

/// The token is the HMAC key of the peers' orders and crosses the wire in
/// clear text in a bearer header: an agent listening on the LAN takes a
/// bearer order from loopback only, and says so; the peer's signed orders
/// come from anywhere.
#[test]
fn a_bearer_order_from_off_loopback_is_refused_whatever_the_token() {
    let Some(lan) = lan_address() else {
        eprintln!("skipped: this host has no address off loopback");
        return;
    };
    let _serial = support::serial();
    let dir = Scratch::new("bearer-lan");
    // Slow clocks: it decides nothing while it is ordered about.
    let primary = node("primary", "primary", free_port(), 60_000);
    let config = primary.write_config(&dir);
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text.replace("listen = \"127.0.0.1:", "listen = \"0.0.0.0:");
    std::fs::write(&config, text).unwrap();
    let log_file = std::fs::File::create(dir.path("primary.log")).unwrap();
    let _agent = support::Proc(
        std::process::Command::new(support::AGENT)
            .args(["--config", &config.to_string_lossy(), "run"])
            .stdout(std::process::Stdio::null())
            .stderr(log_file)
            .spawn()
            .unwrap(),
    );
    let _cleanup = support::StopConnectorOnDrop(&primary, &dir);
    let port = primary.agent_port;
    let log = || std::fs::read_to_string(dir.path("primary.log")).unwrap_or_default();
    assert!(
        support::eventually(10, || post_to(lan, port, "/health", "x").is_some()),
        "the agent never answered on {lan}:\n{}",
        log()
    );

    // On loopback, the operator's bearer token works.
    let started = http("POST", port, "/failover/start", Some(TOKEN));
    assert_eq!(started.map(|a| a.0), Some(200), "{}", log());
    assert!(support::eventually(10, || primary.connector_running(&dir)));

    // From the LAN, the right token is refused like a wrong one, and told why.
    for bearer in [TOKEN, "not-the-token"] {
        let answer = post_to(lan, port, "/failover/stop", &format!("Bearer {bearer}"));
        let (status, body) = answer.unwrap_or_else(|| panic!("no answer:\n{}", log()));
        assert_eq!(status, 401, "{body}");
        assert!(body.contains("loopback only"), "{body}");
        assert!(body.contains("peers sign"), "{body}");
    }
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        primary.connector_running(&dir),
        "stopped by a LAN bearer order"
    );

    // The peer signs, from the LAN.
    let signed = sign_order(
        TOKEN,
        "POST",
        "/failover/stop",
        Role::Primary,
        unix_ms(),
        &[9; NONCE_LEN],
    );
    assert_eq!(
        post_to(lan, port, "/failover/stop", &signed).map(|a| a.0),
        Some(200)
    );
    assert!(support::eventually(10, || !primary.connector_running(&dir)));
}
