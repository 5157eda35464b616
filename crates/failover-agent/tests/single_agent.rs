//! One agent: the HTTP API, the token check, the CLI and config errors as a
//! real process; the scenarios that take polls (a bad peer, an operator's
//! start under the flag) in process, on paused time.

// Test code: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use support::{free_port, http, in_process, NodeSpec, Scratch, AGENT, TOKEN};

fn lone_standby() -> NodeSpec {
    NodeSpec {
        name: "lone",
        role: "standby",
        agent_port: free_port(),
        connector_port: free_port(),
        edge_port: free_port(),
        peer_agent_port: free_port(),
        peer_connector_port: None,
        // Slow: nothing should be decided while the API is exercised.
        poll_ms: 60_000,
        takeover_after: 3,
    }
}

#[test]
fn api_endpoints_and_the_bearer_token() {
    let dir = Scratch::new("api");
    let node = lone_standby();
    let _edge = support::egress_server(node.edge_port, &dir.path("edge.log"));
    let _agent = node.start_agent(&dir);
    let _cleanup = support::StopConnectorOnDrop(&node, &dir);
    let port = node.agent_port;

    for bearer in [
        None,
        Some("wrong"),
        Some("s3cret"),
        Some("s3cret-token-for-test"),
        Some("s3cret-token-for-tests-and-more"),
    ] {
        for path in ["/failover/stop", "/failover/start"] {
            let answer = http("POST", port, path, bearer);
            assert_eq!(
                answer.as_ref().map(|a| a.0),
                Some(401),
                "{path} with {bearer:?}: {answer:?}"
            );
        }
    }
    assert!(
        !node.connector_running(&dir),
        "a refused request must not start anything"
    );
    assert_eq!(
        http("GET", port, "/failover/stop", Some(TOKEN)).map(|a| a.0),
        Some(405)
    );
    assert_eq!(http("GET", port, "/nope", None).map(|a| a.0), Some(404));

    // No connector yet: the relay answers 503 without leaking the address.
    let (status, body) = http("GET", port, "/connector/ready", None).expect("relay answers");
    assert_eq!(status, 503);
    assert!(!body.contains("127.0.0.1"), "{body}");

    let started = http("POST", port, "/failover/start", Some(TOKEN));
    assert_eq!(started.map(|a| a.0), Some(200));
    assert!(support::eventually(10, || matches!(
        http("GET", port, "/connector/ready", None),
        Some((200, ref body)) if body.contains(r#""readyConnections":4"#)
    )));
    assert!(node.connector_running(&dir));

    // A second start while it runs does not run start_command again: the
    // second process would fail to bind, its pid would replace the first's
    // in the pidfile, and the first would run on where no stop reaches it.
    let pid = std::fs::read_to_string(node.pidfile(&dir)).expect("pidfile");
    let again = http("POST", port, "/failover/start", Some(TOKEN));
    assert_eq!(again.map(|a| a.0), Some(200));
    assert_eq!(
        std::fs::read_to_string(node.pidfile(&dir)).expect("pidfile"),
        pid,
        "a second start ran start_command again"
    );

    let stopped = http("POST", port, "/failover/stop", Some(TOKEN));
    assert_eq!(stopped.map(|a| a.0), Some(200));
    assert!(!node.connector_running(&dir));

    let health = node.health();
    assert!(health.contains(r#""role":"standby""#), "{health}");
    let (status, metrics) = http("GET", port, "/metrics", None).expect("metrics");
    assert_eq!(status, 200);
    let lines: Vec<&str> = metrics.lines().collect();
    for sample in [
        "failover_agent_connector_running{role=\"standby\",topology=\"shared-tunnel\"} 0",
        "failover_agent_maintenance{role=\"standby\",topology=\"shared-tunnel\"} 0",
        "failover_agent_peer_misses_total{role=\"standby\",topology=\"shared-tunnel\"} 0",
        "failover_agent_takeovers_total{role=\"standby\",topology=\"shared-tunnel\"} 0",
        "failover_agent_failbacks_total{role=\"standby\",topology=\"shared-tunnel\"} 0",
    ] {
        assert!(lines.contains(&sample), "{sample} missing in\n{metrics}");
    }
    // Values that vary: present as samples, with a number.
    for name in [
        "failover_agent_relay_probe_seconds",
        "failover_agent_uptime_seconds",
    ] {
        let prefix = format!("{name}{{role=\"standby\",topology=\"shared-tunnel\"}} ");
        let value = lines
            .iter()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {name} sample in\n{metrics}"));
        assert!(value.parse::<f64>().is_ok(), "{name} = {value:?}");
    }

    let status = node.run_cli(&dir, &["status", "--json"]);
    assert!(status.status.success(), "{status:?}");
    assert!(String::from_utf8_lossy(&status.stdout).contains(r#""role":"standby""#));
    // For a person, and without the token: an operator may not read it.
    std::fs::remove_file(dir.path("token")).ok();
    let status = node.run_cli(&dir, &["status"]);
    assert!(status.status.success(), "{status:?}");
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("shared-tunnel, role standby"), "{text}");
    assert!(text.contains("maintenance  off"), "{text}");
}

/// `maintenance on|off` changes the flag, then asks the running agent
/// whether it sees the change: with no agent, `on` fails (nothing stops
/// the connector now) and `off` warns; an agent that looks for the flag
/// elsewhere (another config) fails both, where they used to say done.
#[test]
fn maintenance_command_toggles_the_flag_and_asks_the_running_agent() {
    let dir = Scratch::new("flag");
    let node = lone_standby();
    let good = std::fs::read_to_string(node.write_config(&dir)).expect("config");
    let said = |out: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };

    let on = node.run_cli(&dir, &["maintenance", "on"]);
    assert_eq!(on.status.code(), Some(1), "{}", said(&on));
    assert!(node.flag(&dir).exists(), "written all the same");
    assert!(said(&on).contains("flag written"), "{}", said(&on));
    assert!(said(&on).contains("no agent answers"), "{}", said(&on));
    let off = node.run_cli(&dir, &["maintenance", "off"]);
    assert_eq!(off.status.code(), Some(0), "{}", said(&off));
    assert!(said(&off).contains("warning"), "{}", said(&off));
    assert!(!node.flag(&dir).exists());
    assert!(!node
        .run_cli(&dir, &["maintenance", "maybe"])
        .status
        .success());

    let _agent = node.start_agent(&dir);
    let _cleanup = support::StopConnectorOnDrop(&node, &dir);
    let on = node.run_cli(&dir, &["maintenance", "on"]);
    assert_eq!(on.status.code(), Some(0), "{}", said(&on));
    assert!(
        said(&on).contains("the running agent sees the flag"),
        "{}",
        said(&on)
    );
    let off = node.run_cli(&dir, &["maintenance", "off"]);
    assert_eq!(off.status.code(), Some(0), "{}", said(&off));
    assert!(
        said(&off).contains("the running agent sees no flag"),
        "{}",
        said(&off)
    );
    let again = node.run_cli(&dir, &["maintenance", "off"]);
    assert_eq!(again.status.code(), Some(0), "off twice: {}", said(&again));

    // The operator's config names another flag than the agent's.
    let flag = node.flag(&dir).display().to_string();
    let other_flag = dir.path("other.maintenance");
    let other = dir.path("other.toml");
    std::fs::write(
        &other,
        good.replacen(&flag, &other_flag.display().to_string(), 1),
    )
    .expect("config");
    let with_other = |state: &str| {
        Command::new(AGENT)
            .arg("--config")
            .arg(&other)
            .args(["maintenance", state])
            .output()
            .expect("runs")
    };
    let on = with_other("on");
    assert_eq!(on.status.code(), Some(1), "{}", said(&on));
    assert!(other_flag.exists());
    assert!(
        said(&on).contains(&format!(
            "does not see the flag at {}",
            other_flag.display()
        )),
        "{}",
        said(&on)
    );
    assert!(said(&on).contains("another config"), "{}", said(&on));
    std::fs::write(node.flag(&dir), b"on\n").expect("the agent's own flag");
    let off = with_other("off");
    assert_eq!(off.status.code(), Some(1), "{}", said(&off));
    assert!(
        said(&off).contains("still sees a maintenance flag"),
        "{}",
        said(&off)
    );
    std::fs::remove_file(node.flag(&dir)).expect("flag");
}

#[test]
fn config_errors_name_the_key_and_exit_before_binding() {
    let dir = Scratch::new("config");
    let node = lone_standby();
    let good = std::fs::read_to_string(node.write_config(&dir)).expect("config");
    let ok = node.run_cli(&dir, &["check-config"]);
    assert!(ok.status.success(), "{ok:?}");

    let cases: &[(&str, &str, &str)] = &[
        ("role = \"standby\"", "role = \"leader\"", "`role`"),
        ("role = \"standby\"", "", "`role`"),
        (
            "poll_interval = \"60000ms\"",
            "poll_interval = \"soon\"",
            "`poll_interval`",
        ),
        (
            "failback_interval = \"60000ms\"",
            "failback_interval = \"60000ms\"\nfailback_after = 0",
            "`failback_after`",
        ),
        (
            "probe_timeout = \"45000ms\"",
            "probe_timeout = \"90s\"",
            "`probe_timeout`",
        ),
        ("listen = \"127.0.0.1:", "listen = \"nowhere:", "`listen`"),
        (
            "agent_url = \"http://",
            "agent_url = \"ftp://",
            "`peer.agent_url`",
        ),
        (
            "control = \"command\"",
            "control = \"podman\"",
            "`connector.control`",
        ),
        (
            "status_command = ",
            "status_commando = ",
            "`connector.status_commando`",
        ),
        (
            "token_file = \"",
            "token_file = \"/nonexistent/",
            "`token_file`",
        ),
        (
            "role = \"standby\"",
            "role = \"standby\"\ntakeover_afer = 3",
            "`takeover_afer`",
        ),
    ];
    for (from, to, key) in cases {
        assert!(good.contains(from), "test case does not apply: {from}");
        std::fs::write(node.config_path(&dir), good.replacen(from, to, 1)).expect("config");
        let out = node.run_cli(&dir, &["check-config"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{to}: {stderr}");
        assert!(stderr.contains(key), "{to}: expected {key} in {stderr}");
    }

    // A duration may be a bare number of seconds, quoted or not.
    for bare in ["poll_interval = \"60\"", "poll_interval = 60"] {
        std::fs::write(
            node.config_path(&dir),
            good.replacen("poll_interval = \"60000ms\"", bare, 1),
        )
        .expect("config");
        let out = node.run_cli(&dir, &["check-config"]);
        assert!(out.status.success(), "{bare}: {out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("poll_interval ") && l.ends_with(" = \"1m\"")),
            "{stdout}"
        );
    }

    // Under systemd's watchdog every step must fit in half of WatchdogSec
    // (here 10 s: half is 5 s < command_timeout 5 s + probe_timeout).
    std::fs::write(node.config_path(&dir), &good).expect("config");
    let out = Command::new(AGENT)
        .arg("--config")
        .arg(node.config_path(&dir))
        .arg("check-config")
        .env("WATCHDOG_USEC", "10000000")
        .env_remove("WATCHDOG_PID")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("WatchdogSec"));

    // `run` with a bad config exits with the config error before binding:
    // with the port taken, a bind attempt would be a different error.
    std::fs::write(
        node.config_path(&dir),
        good.replacen("role = \"standby\"", "role = \"leader\"", 1),
    )
    .expect("config");
    let _taken = std::net::TcpListener::bind(("127.0.0.1", node.agent_port)).expect("bind");
    let out = node.run_cli(&dir, &["run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let path = node.config_path(&dir);
    assert!(
        stderr.contains(&format!("config error: {}: `role`: ", path.display())),
        "{stderr}"
    );
    assert!(
        !stderr.contains("listen") && !stderr.contains("Address already in use"),
        "{stderr}"
    );

    let missing = Command::new(AGENT)
        .args(["--config", "/nonexistent.toml", "check-config"])
        .output()
        .expect("runs");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--config"));
}

/// check-config (and `run`) refuse a token file others may read, a short
/// token, and a maintenance flag where the unit's sandbox hides it.
#[test]
fn check_config_refuses_an_open_or_short_token_and_a_hidden_flag() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new("refusals");
    let node = lone_standby();
    let good = std::fs::read_to_string(node.write_config(&dir)).expect("config");
    let token = dir.path("token");
    let check = || {
        let out = node.run_cli(&dir, &["check-config", "--no-probe"]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(check().0, Some(0), "{}", check().1);

    for mode in [0o644, 0o640, 0o604, 0o660] {
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let (code, stderr) = check();
        assert_eq!(code, Some(2), "mode {mode:o}: {stderr}");
        assert!(stderr.contains("`token_file`"), "{stderr}");
        assert!(stderr.contains("readable by group or others"), "{stderr}");
    }
    // `run` refuses the same, before binding anything.
    let out = node.run_cli(&dir, &["run"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");

    for short in ["abc", "fifteen-chars-x", "   padded    "] {
        support::write_token(&token, short);
        let (code, stderr) = check();
        assert_eq!(code, Some(2), "{short:?}: {stderr}");
        assert!(stderr.contains("`token_file`"), "{stderr}");
        assert!(stderr.contains("at least 16"), "{stderr}");
    }
    // The secret itself never reaches the log.
    support::write_token(&token, "fifteen-chars-x");
    assert!(!check().1.contains("fifteen-chars-x"), "{}", check().1);
    support::write_token(&token, "sixteen-chars-xy");
    assert_eq!(check().0, Some(0), "{}", check().1);

    let flag = node.flag(&dir).display().to_string();
    for hidden in [
        "/tmp/maintenance",
        "/var/tmp/maintenance",
        "/home/ops/maintenance",
    ] {
        std::fs::write(node.config_path(&dir), good.replacen(&flag, hidden, 1)).expect("config");
        let (code, stderr) = check();
        assert_eq!(code, Some(2), "{hidden}: {stderr}");
        assert!(stderr.contains("`maintenance_flag`"), "{stderr}");
        assert!(stderr.contains("PrivateTmp"), "{stderr}");
    }
    // Through a symlink: a directory linked to /tmp, and a flag file
    // linked to where no file is yet. Judged as written, both looked fine.
    std::os::unix::fs::symlink("/tmp", dir.path("into-tmp")).expect("symlink");
    std::os::unix::fs::symlink("/tmp/failover-agent-flag", dir.path("flag-link")).expect("symlink");
    for linked in [dir.path("into-tmp/maintenance"), dir.path("flag-link")] {
        let linked = linked.display().to_string();
        std::fs::write(node.config_path(&dir), good.replacen(&flag, &linked, 1)).expect("config");
        let (code, stderr) = check();
        assert_eq!(code, Some(2), "{linked}: {stderr}");
        assert!(stderr.contains("`maintenance_flag`"), "{stderr}");
        assert!(
            stderr.contains("under /tmp (as written, or through a symlink)"),
            "{stderr}"
        );
    }
    // Relative: the daemon and `maintenance on` would not agree on where.
    std::fs::write(
        node.config_path(&dir),
        good.replacen(&flag, "maintenance", 1),
    )
    .expect("config");
    let (code, stderr) = check();
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("`maintenance_flag`"), "{stderr}");
    assert!(stderr.contains("relative path"), "{stderr}");
    assert!(stderr.contains("working directory"), "{stderr}");
}

// The timing scenarios: the agent in process, on paused time.

/// A lone standby whose peer agent answers with `peer`, polling every
/// second; nothing answers at the peer's address when `peer` is `None`.
async fn lone_standby_in_process(
    dir: &in_process::Dir,
    peer: Option<in_process::Answer>,
) -> (
    in_process::Agent,
    Arc<in_process::Connector>,
    Option<in_process::Server>,
) {
    let egress = in_process::Egress::start().await;
    let connector = in_process::Connector::new(Arc::clone(&egress)).await;
    let peer = match peer {
        Some(answer) => Some(in_process::Server::start(answer).await),
        None => None,
    };
    // Nothing listens on a port taken and let go.
    let nobody = in_process::Agent::listener()
        .await
        .local_addr()
        .unwrap()
        .port();
    let spec = in_process::Spec {
        role: "standby",
        poll_ms: support::POLL_MS,
        takeover_after: 3,
        connector_ready_url: connector.ready_url(),
        peer_agent_port: peer.as_ref().map_or(nobody, in_process::Server::port),
        peer_connector_ready_url: None,
        egress_port: egress.port(),
        flag: dir.path("maintenance"),
    };
    let agent = in_process::Agent::start(&spec, in_process::Agent::listener().await, &connector);
    (agent, connector, peer)
}

#[tokio::test(start_paused = true)]
async fn an_operator_start_under_the_maintenance_flag_is_not_drained() {
    let dir = in_process::Dir::new("operator-start");
    std::fs::write(dir.path("maintenance"), b"on\n").unwrap();
    let (agent, connector, _peer) = lone_standby_in_process(&dir, None).await;
    assert!(
        in_process::eventually(10, || async {
            agent.health().await.contains(r#""maintenance":true"#)
        })
        .await,
        "{}",
        agent.health().await
    );
    let started = in_process::request("POST", agent.port, "/failover/start", Some(TOKEN)).await;
    assert_eq!(started.map(|a| a.0), Some(200));
    tokio::time::sleep(Duration::from_millis(support::POLL_MS * 3)).await;
    let health = agent.health().await;
    assert!(connector.is_running(), "drained: {health}");
    assert!(health.contains(r#""drains":0"#), "{health}");
    // The flag changes (off, on): the override ends and the node drains.
    agent.maintenance(false);
    tokio::time::sleep(Duration::from_millis(support::POLL_MS * 2)).await;
    agent.maintenance(true);
    assert!(
        in_process::eventually(10, || async { !connector.is_running() }).await,
        "not drained after the flag changed: {}",
        agent.health().await
    );
    assert!(agent.health().await.contains(r#""drains":1"#));
}

/// A standby whose peer agent answers `peer` takes over within 20 s.
async fn standby_takes_over_from(name: &str, peer: in_process::Answer) {
    let dir = in_process::Dir::new(name);
    let (agent, connector, _peer) = lone_standby_in_process(&dir, Some(peer)).await;
    let took_over = in_process::eventually(20, || async { connector.is_running() }).await;
    let health = agent.health().await;
    assert!(took_over, "no take-over from a bad peer: {health}");
    assert!(health.contains(r#""takeovers":1"#), "{health}");
}

#[tokio::test(start_paused = true)]
async fn a_hung_peer_is_a_miss_not_a_stall() {
    // Accepts connections and never answers.
    standby_takes_over_from("hung", in_process::Answer::Hang).await;
}

#[tokio::test(start_paused = true)]
async fn a_malformed_peer_answer_is_a_miss_not_a_crash() {
    // Answers 200 with a body that is not cloudflared's JSON.
    standby_takes_over_from("malformed", in_process::Answer::Fixed(200, "fl=1\n".into())).await;
}

/// A flag the agent cannot look at counts as set: the node stops serving
/// and says it is in maintenance (it used to read as "no flag", and served).
#[tokio::test(start_paused = true)]
async fn a_maintenance_flag_that_cannot_be_looked_at_counts_as_set() {
    let node = in_process::PerNode::start("flag-unreadable", "").await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    node.agent.flag_unreadable();
    node.expect(20, "the connector stopped under the unreadable flag", |n| {
        !n.connector.is_running()
    })
    .await;
    let health = node.agent.health().await;
    assert!(health.contains(r#""maintenance":true"#), "{health}");
    // And it stays so: no fail-back while the flag cannot be looked at.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        !node.connector.is_running(),
        "{}",
        node.agent.health().await
    );

    let _ = std::fs::remove_file(&node.agent.flag);
    node.expect(30, "serving once the flag is gone", |n| {
        n.connector.is_ready()
    })
    .await;
}

/// A peer agent whose connector starts on a handover but whose answer
/// comes too late (after the caller's deadline): its `/connector/ready`
/// shows ready `ready_after` the handover arrived; the handover itself is
/// never answered. Other orders get 200.
struct LatePeer {
    port: u16,
    /// When the peer's connector is ready, once a handover arrived.
    ready_at: Arc<std::sync::Mutex<Option<tokio::time::Instant>>>,
}

impl LatePeer {
    async fn start(ready_after: Duration) -> LatePeer {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = in_process::Agent::listener().await;
        let port = listener.local_addr().unwrap().port();
        let ready_at = Arc::new(std::sync::Mutex::new(None::<tokio::time::Instant>));
        let shared = Arc::clone(&ready_at);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let ready_at = Arc::clone(&shared);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let now = tokio::time::Instant::now();
                    let (status, body) = if head.starts_with("POST /failover/handover ") {
                        ready_at.lock().unwrap().get_or_insert(now + ready_after);
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        return;
                    } else if head.starts_with("GET /connector/ready ") {
                        match *ready_at.lock().unwrap() {
                            Some(at) if now >= at => {
                                (200, r#"{"status":200,"readyConnections":4}"#)
                            }
                            _ => (503, r#"{"status":503,"readyConnections":0}"#),
                        }
                    } else {
                        (200, r#"{"connector":"stopped"}"#)
                    };
                    let text = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(text.as_bytes()).await;
                });
            }
        });
        LatePeer { port, ready_at }
    }
}

/// Make before break when the handover's answer is lost: the primary looks
/// at the peer's connector before stopping its own, as after a "yes" (it
/// used to stop at once, and the tunnel had no serving connector until
/// the peer's registered).
#[tokio::test(start_paused = true)]
async fn a_handover_answered_too_late_still_waits_for_the_peers_readiness() {
    let dir = in_process::Dir::new("late-handover");
    let egress = in_process::Egress::start().await;
    let connector = in_process::Connector::new(Arc::clone(&egress)).await;
    // Past the handover's deadline (command_timeout 5 s + probe_timeout
    // 750 ms), within the wait for readiness after it (5 s more).
    let peer = LatePeer::start(Duration::from_secs(7)).await;
    let spec = in_process::Spec {
        role: "primary",
        poll_ms: support::POLL_MS,
        takeover_after: 3,
        connector_ready_url: connector.ready_url(),
        peer_agent_port: peer.port,
        peer_connector_ready_url: None,
        egress_port: egress.port(),
        flag: dir.path("maintenance"),
    };
    let agent = in_process::Agent::start(&spec, in_process::Agent::listener().await, &connector);
    assert!(
        in_process::eventually(20, || async { connector.is_ready() }).await,
        "the primary never served: {}",
        agent.health().await
    );
    agent.maintenance(true);
    assert!(
        in_process::eventually(30, || async { !connector.is_running() }).await,
        "the primary never stopped: {}",
        agent.health().await
    );
    let ready_at = peer.ready_at.lock().unwrap().expect("a handover arrived");
    let stopped_at = *connector.stops.lock().unwrap().last().unwrap();
    assert!(
        stopped_at >= ready_at,
        "stopped {:?} before the peer's connector was ready",
        ready_at - stopped_at
    );
}
