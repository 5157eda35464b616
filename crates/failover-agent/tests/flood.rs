//! A connection flood against the API: the real agent binary with its file
//! descriptor limit lowered to 256 (as a unit without `LimitNOFILE` would
//! meet a flood a little later), and 300 connections opened and held idle.
//! The decisions must not notice: no withdrawal of a healthy node, and
//! `/health` answers soon after. And a flood kept up from several other
//! addresses (loopback aliases, 127.0.0.2-9) while the peer (127.0.0.1,
//! the host of `[peer] agent_url`) looks: every look is answered.

// Test code: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{free_port, http, NodeSpec, Proc, Scratch, AGENT, FAKE, POLL_MS, TOKEN};

/// The fd limit of the agent under test.
const NOFILE: u64 = 256;
/// Connections opened and held: more than the limit.
const FLOOD: usize = 300;

#[test]
fn a_connection_flood_neither_withdraws_a_healthy_node_nor_silences_health() {
    let _serial = support::serial();
    let dir = Scratch::new("flood");
    let (agent_port, conn_port, edge_port) = (free_port(), free_port(), free_port());
    let _edge = support::egress_server(edge_port, &dir.path("edge.log"));
    support::write_token(&dir.path("token"), TOKEN);
    let pid = dir.path("connector.pid");
    let start = format!(
        "'{FAKE}' --listen 127.0.0.1:{conn_port} --edge 127.0.0.1:{edge_port} --id node \
         >/dev/null 2>&1 & echo $! > '{}'",
        pid.display()
    );
    let stop = format!(
        "if [ -f '{0}' ]; then kill $(cat '{0}') 2>/dev/null; rm -f '{0}'; fi",
        pid.display()
    );
    let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    // Tunnel per node, watching its app (the egress server answers 200 to
    // anything): every poll opens sockets, and a withdrawal follows two
    // failed app checks or three polls without a ready connector.
    let config = format!(
        r#"topology = "tunnel-per-node"
listen = "127.0.0.1:{agent_port}"
token_file = "{token}"
maintenance_flag = "{flag}"
state_dir = "{state}"
poll_interval = "1s"
failback_interval = "1s"
probe_timeout = "750ms"

[connector]
ready_url = "http://127.0.0.1:{conn_port}/ready"
control = "command"
start_command = "{start}"
stop_command = "{stop}"
status_command = "[ -f '{pid}' ] && kill -0 $(cat '{pid}') 2>/dev/null"
command_timeout = "5s"

[app]
health_url = "http://127.0.0.1:{edge_port}/health"
interval = "1s"
fall = 2
rise = 1

[egress]
url = "http://127.0.0.1:{edge_port}/cdn-cgi/trace"
"#,
        token = dir.path("token").display(),
        flag = dir.path("maintenance").display(),
        state = dir.0.display(),
        start = esc(&start),
        stop = esc(&stop),
        pid = pid.display(),
    );
    let config_path = dir.path("node.toml");
    std::fs::write(&config_path, config).unwrap();
    let log = std::fs::File::create(dir.path("node.log")).unwrap();
    let mut command = Command::new(AGENT);
    command
        .args(["--config", &config_path.to_string_lossy(), "run"])
        .stdout(Stdio::null())
        .stderr(log);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: NOFILE,
                rlim_max: NOFILE,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let _agent = Proc(command.spawn().unwrap());
    let _cleanup = StopOnDrop(stop.clone());
    let log = || std::fs::read_to_string(dir.path("node.log")).unwrap_or_default();
    let health = || {
        http("GET", agent_port, "/health", None)
            .map(|a| a.1)
            .unwrap_or_default()
    };
    assert!(
        support::eventually(30, || {
            let h = health();
            h.contains(r#""connector_ready":true"#) && h.contains(r#""app":"up""#)
        }),
        "the node never served:\n{}\n{}",
        health(),
        log()
    );

    // The flood: opened as fast as the agent lets them in, then held idle
    // over several polls (each poll opens an app check, a /ready look and
    // the status command's pipes).
    let mut held = Vec::with_capacity(FLOOD);
    for _ in 0..FLOOD {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], agent_port));
        if let Ok(stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            held.push(stream);
        }
    }
    std::thread::sleep(Duration::from_secs(5));

    // /health answers within 2 s, the 300 still held open.
    let asked = Instant::now();
    let mut answer = None;
    while answer.is_none() && asked.elapsed() < Duration::from_secs(2) {
        answer = http_within(
            agent_port,
            "/health",
            Duration::from_secs(2) - asked.elapsed(),
        );
    }
    let body = answer.unwrap_or_else(|| {
        panic!(
            "/health did not answer within 2 s of the flood ({} connections held):\n{}",
            held.len(),
            log()
        )
    });
    // Withdrawing nothing: a healthy node keeps its connector through the
    // flood and a little after.
    std::thread::sleep(Duration::from_secs(3));
    let after = health();
    for (what, text) in [("during", &body), ("after", &after)] {
        assert!(
            text.contains(r#""withdrawals":0"#) && text.contains(r#""connector":"running""#),
            "{what} the flood: {text}\n{}",
            log()
        );
    }
    assert!(pid.exists(), "the connector was stopped:\n{}", log());
    drop(held);
}

/// Flooding addresses: eight, so that at eight connections each they could
/// hold all 64 slots if none were kept for the peer.
const FLOODERS: std::ops::RangeInclusive<u8> = 2..=9;

#[test]
fn a_flood_from_other_addresses_leaves_the_peer_its_looks() {
    let _serial = support::serial();
    let dir = Scratch::new("flood-peer");
    // A primary whose peer is 127.0.0.1 (nobody listens there: the primary
    // serves alone); the test's own requests from 127.0.0.1 are the peer's.
    let node = NodeSpec {
        name: "primary",
        role: "primary",
        agent_port: free_port(),
        connector_port: free_port(),
        edge_port: free_port(),
        peer_agent_port: free_port(),
        peer_connector_port: None,
        poll_ms: POLL_MS,
        takeover_after: support::TAKEOVER_AFTER,
    };
    let _edge = support::egress_server(node.edge_port, &dir.path("edge.log"));
    let _agent = node.start_agent(&dir);
    let _cleanup = support::StopConnectorOnDrop(&node, &dir);
    let log = || std::fs::read_to_string(dir.path("primary.log")).unwrap_or_default();
    assert!(
        support::eventually(30, || support::ready(node.connector_port)),
        "the primary never served:\n{}",
        log()
    );

    let flooding = Arc::new(AtomicBool::new(true));
    let flooder = {
        let flooding = Arc::clone(&flooding);
        let port = node.agent_port;
        std::thread::spawn(move || flood_from(&FLOODERS.collect::<Vec<_>>(), port, &flooding))
    };
    // Longer than HEADER_READ_TIMEOUT: the slots are the flood's by now.
    std::thread::sleep(Duration::from_secs(3));

    // The peer's looks, one request each, as its agent sends them.
    let mut missed = Vec::new();
    for look in 0..10 {
        for path in ["/connector/ready", "/health"] {
            if http_within(node.agent_port, path, Duration::from_secs(2)).is_none() {
                missed.push(format!("look {look}: {path}"));
            }
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    flooding.store(false, Ordering::SeqCst);
    let opened = flooder.join().unwrap();
    assert!(
        missed.is_empty(),
        "the peer's looks went unanswered during a flood of {opened} connections from \
         127.0.0.{}-{}: {missed:?}\n{}",
        FLOODERS.start(),
        FLOODERS.end(),
        log()
    );
    assert!(
        log().contains("closed unserved"),
        "the flood was never turned away (no flood?):\n{}",
        log()
    );
}

/// Every 250 ms, ten new connections from each of `sources`, each held
/// idle for 2.5 s: more than an address may hold, renewed faster than the
/// agent's header timeout frees a slot. How many were opened.
fn flood_from(sources: &[u8], port: u16, flooding: &AtomicBool) -> usize {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let target = SocketAddr::from(([127, 0, 0, 1], port));
        let mut held: std::collections::VecDeque<(Instant, tokio::net::TcpStream)> =
            std::collections::VecDeque::new();
        let mut opened = 0;
        while flooding.load(Ordering::SeqCst) {
            for last_octet in sources {
                for _ in 0..10 {
                    let socket = tokio::net::TcpSocket::new_v4().unwrap();
                    let source = SocketAddr::from((Ipv4Addr::new(127, 0, 0, *last_octet), 0));
                    socket.bind(source).unwrap();
                    if let Ok(Ok(stream)) =
                        tokio::time::timeout(Duration::from_millis(200), socket.connect(target))
                            .await
                    {
                        held.push_back((Instant::now(), stream));
                        opened += 1;
                    }
                }
            }
            while held
                .front()
                .is_some_and(|(at, _)| at.elapsed() > Duration::from_millis(2_500))
            {
                held.pop_front();
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        opened
    })
}

/// One GET with `budget` for the whole exchange; the body if it answered.
fn http_within(port: u16, path: &str, budget: Duration) -> Option<String> {
    use std::io::{Read, Write};
    let budget = budget.max(Duration::from_millis(10));
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, budget).ok()?;
    stream.set_read_timeout(Some(budget)).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: agent\r\nconnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

struct StopOnDrop(String);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("sh").arg("-c").arg(&self.0).status();
    }
}
