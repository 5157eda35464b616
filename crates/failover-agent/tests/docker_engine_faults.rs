//! `connector.control = "docker"` against a stand-in for the Docker Engine
//! on a Unix socket in this test process: the faults a real daemon cannot
//! be made to show on cue. No dockerd, so these run in plain `cargo test`;
//! `docker.rs` covers the real daemon. The agent is the real binary.
//!
//! - A stop whose answer is lost (the connection closed unanswered, as
//!   when dockerd restarts mid-stop): the agent looks at the container
//!   before it decides anything, and never takes the lost answer for a
//!   stop or for a failure.
//! - A socket the agent's user may not use: named by its key, nothing
//!   reaches the Engine.

// Test helpers: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::VecDeque;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use support::docker_node::{said, Node};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// What the stand-in does with a stop.
#[derive(Clone, Copy, Debug)]
enum Stop {
    /// Stops the container and answers 204 (304 if it was not running).
    Answer,
    /// Closes the connection unanswered, and so the next `looks_lost`
    /// inspects: the daemon going down for a while. `stopped`: after it
    /// stopped its containers (`systemctl restart docker`), or before it
    /// got to the stop.
    Lose { stopped: bool, looks_lost: u32 },
}

/// One call the agent made, as the Engine saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Call {
    /// `"POST stop"`, `"GET inspect"`...
    what: &'static str,
    answered: bool,
}

#[derive(Default)]
struct Container {
    running: bool,
    /// What the next stops do, in order; once empty, [`Stop::Answer`].
    stops: VecDeque<Stop>,
    /// How many inspects to close unanswered (the daemon still down).
    lost_inspects: u32,
    calls: Vec<Call>,
}

/// The Engine's three calls (and `/version`) for one container, and the
/// container's `/ready` on the connector port while it runs, as
/// cloudflared's would answer.
struct StandIn {
    socket: PathBuf,
    state: Arc<Mutex<Container>>,
}

impl StandIn {
    fn start(node: &Node) -> StandIn {
        let socket = node.dir.path("engine.sock");
        let engine = std::os::unix::net::UnixListener::bind(&socket).expect("engine socket");
        let ready =
            std::net::TcpListener::bind(("127.0.0.1", node.connector_port)).expect("ready port");
        for nonblocking in [engine.set_nonblocking(true), ready.set_nonblocking(true)] {
            nonblocking.expect("nonblocking");
        }
        let state = Arc::new(Mutex::new(Container::default()));
        let (name, shared) = (node.container.clone(), Arc::clone(&state));
        // Its own runtime on its own thread: the test waits with blocking
        // calls. The thread ends with the test process.
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(serve(engine, ready, name, shared));
        });
        StandIn { socket, state }
    }

    fn host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    fn with<T>(&self, f: impl FnOnce(&mut Container) -> T) -> T {
        f(&mut self.state.lock().unwrap())
    }

    fn running(&self) -> bool {
        self.with(|c| c.running)
    }

    /// Every call from the `from`th on.
    fn calls_from(&self, from: usize) -> Vec<Call> {
        self.with(|c| c.calls.get(from..).unwrap_or_default().to_vec())
    }

    fn mark(&self) -> usize {
        self.with(|c| c.calls.len())
    }
}

async fn serve(
    engine: std::os::unix::net::UnixListener,
    ready: std::net::TcpListener,
    name: String,
    state: Arc<Mutex<Container>>,
) {
    let engine = tokio::net::UnixListener::from_std(engine).expect("engine listener");
    let ready = tokio::net::TcpListener::from_std(ready).expect("ready listener");
    let name = Arc::new(name);
    loop {
        tokio::select! {
            Ok((stream, _)) = engine.accept() => {
                tokio::spawn(answer_engine(stream, Arc::clone(&name), Arc::clone(&state)));
            }
            Ok((stream, _)) = ready.accept() => {
                let running = state.lock().unwrap().running;
                tokio::spawn(answer_ready(stream, running));
            }
        }
    }
}

/// The request line of one HTTP/1.1 request (the agent sends no body).
async fn request_line(stream: &mut (impl AsyncRead + Unpin)) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    text.lines().next().map(str::to_string)
}

async fn reply(stream: &mut (impl AsyncWrite + Unpin), status: u16, body: &str) {
    let text = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(text.as_bytes()).await;
}

async fn answer_ready(mut stream: tokio::net::TcpStream, running: bool) {
    // A stopped cloudflared does not answer at all.
    if running && request_line(&mut stream).await.is_some() {
        reply(&mut stream, 200, r#"{"status":200,"readyConnections":4}"#).await;
    }
}

async fn answer_engine(
    mut stream: tokio::net::UnixStream,
    name: Arc<String>,
    state: Arc<Mutex<Container>>,
) {
    let Some(line) = request_line(&mut stream).await else {
        return;
    };
    let target = line.split(' ').nth(1).unwrap_or_default();
    if target == "/version" {
        let body = r#"{"Version":"20.10.24","ApiVersion":"1.41","MinAPIVersion":"1.12"}"#;
        return reply(&mut stream, 200, body).await;
    }
    let container = format!("/v1.41/containers/{name}/");
    let Some(call) = target.strip_prefix(container.as_str()) else {
        let body = r#"{"message":"page not found"}"#;
        return reply(&mut stream, 404, body).await;
    };
    // Decided under the lock, answered after it.
    let answer = {
        let mut c = state.lock().unwrap();
        let (what, answer) = if line.starts_with("GET ") && call == "json" {
            let answer = if c.lost_inspects > 0 {
                c.lost_inspects -= 1;
                None
            } else {
                Some((200, inspected(&name, c.running)))
            };
            ("GET inspect", answer)
        } else if line.starts_with("POST ") && call == "start" {
            let was = std::mem::replace(&mut c.running, true);
            (
                "POST start",
                Some((if was { 304 } else { 204 }, String::new())),
            )
        } else if line.starts_with("POST ") && call.starts_with("stop?t=") {
            let answer = match c.stops.pop_front().unwrap_or(Stop::Answer) {
                Stop::Answer => {
                    let was = std::mem::replace(&mut c.running, false);
                    Some((if was { 204 } else { 304 }, String::new()))
                }
                Stop::Lose {
                    stopped,
                    looks_lost,
                } => {
                    c.running &= !stopped;
                    c.lost_inspects = looks_lost;
                    None
                }
            };
            ("POST stop", answer)
        } else {
            (
                "other",
                Some((404, r#"{"message":"page not found"}"#.into())),
            )
        };
        c.calls.push(Call {
            what,
            answered: answer.is_some(),
        });
        answer
    };
    if let Some((status, body)) = answer {
        reply(&mut stream, status, &body).await;
    }
    // Otherwise dropped here: closed without a word.
}

fn inspected(name: &str, running: bool) -> String {
    let status = if running { "running" } else { "exited" };
    format!(
        r#"{{"Id":"{id}","Name":"/{name}","State":{{"Status":"{status}","Running":{running},"Restarting":false}},"HostConfig":{{"RestartPolicy":{{"Name":"no","MaximumRetryCount":0}}}}}}"#,
        id = "4f0e".repeat(16),
    )
}

fn call(what: &'static str, answered: bool) -> Call {
    Call { what, answered }
}

/// The calls from the first stop up to `settled_by`: the stop's own,
/// without the monitor's looks before and after it.
fn the_stop(calls: Vec<Call>, settled_by: &Call) -> Vec<Call> {
    let start = calls
        .iter()
        .position(|c| c.what == "POST stop")
        .unwrap_or(calls.len());
    let calls = &calls[start..];
    let end = calls
        .iter()
        .position(|c| c == settled_by)
        .map_or(calls.len(), |i| i + 1);
    calls[..end].to_vec()
}

fn count(log: &str, phrase: &str) -> usize {
    log.matches(phrase).count()
}

/// A stop whose answer is lost, three ways: the container had stopped
/// (a look says so: stopped, no second stop); it had not (a look says it
/// runs: stopped again); and no look answers before the stop's deadline
/// (an error, nothing decided, and the next poll starts over).
#[test]
fn a_stop_whose_answer_is_lost_is_settled_by_a_look() {
    let _serial = support::serial();
    let node = Node::new("engine-lost");
    let engine = StandIn::start(&node);
    let config = node.write_config(&engine.host(), &node.container);
    let agent = node.start_agent(&config);
    let name = &node.container;
    node.expect(15, "the agent starts the container", || engine.running());
    node.expect(10, "and says so", || {
        node.log()
            .contains("local connector started (docker container")
    });

    // 1. Stopped, then the daemon went down (one look unanswered too).
    engine.with(|c| {
        c.stops.push_back(Stop::Lose {
            stopped: true,
            looks_lost: 1,
        })
    });
    let from = engine.mark();
    std::fs::write(node.flag(), b"test\n").expect("flag");
    let settled = format!("container {name:?} is exited (looked again after the lost answer)");
    node.expect(15, "the lost stop is settled by a look", || {
        node.log().contains(&settled) && node.log().contains("local connector stopped")
    });
    assert_eq!(
        the_stop(engine.calls_from(from), &call("GET inspect", true)),
        [
            call("POST stop", false),
            call("GET inspect", false),
            call("GET inspect", true)
        ],
        "{}",
        node.log()
    );
    let log = node.log();
    let lost = format!("the stop of container {name:?} lost its answer (connector.docker_host");
    assert!(log.contains(&lost), "{log}");
    let (warned, concluded) = (log.find(&lost).unwrap(), log.find(&settled).unwrap());
    let stopped = log.find("local connector stopped").unwrap();
    assert!(warned < concluded && concluded < stopped, "{log}");
    assert!(
        !log.contains("stopping the local connector failed"),
        "{log}"
    );
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(
        !engine.running()
            && !engine
                .calls_from(from)
                .iter()
                .any(|c| c.what == "POST start"),
        "{}",
        node.log()
    );

    // 2. The daemon went down before it stopped anything: the look finds
    // it running and the stop is made again, answered this time.
    std::fs::remove_file(node.flag()).expect("flag removed");
    node.expect(15, "started again", || engine.running());
    engine.with(|c| {
        c.stops.push_back(Stop::Lose {
            stopped: false,
            looks_lost: 0,
        })
    });
    let from = engine.mark();
    let lost_before = count(&node.log(), &lost);
    let stopped_before = count(&node.log(), "local connector stopped");
    std::fs::write(node.flag(), b"test\n").expect("flag");
    node.expect(15, "stopped by a second stop", || {
        !engine.running() && count(&node.log(), "local connector stopped") > stopped_before
    });
    assert_eq!(
        the_stop(engine.calls_from(from), &call("POST stop", true)),
        [
            call("POST stop", false),
            call("GET inspect", true),
            call("POST stop", true)
        ],
        "{}",
        node.log()
    );
    assert_eq!(count(&node.log(), &lost), lost_before + 1, "{}", node.log());
    let again = format!(
        "container {name:?} is running (looked again after the lost answer): stopping it again"
    );
    assert_eq!(count(&node.log(), &again), 1, "{}", node.log());
    assert_eq!(count(&node.log(), &settled), 1, "{}", node.log());

    // 3. Lost, and the daemon stays away past the stop's deadline
    // (command_timeout 5 s + probe_timeout 750 ms): an error that says
    // nothing was decided; once the daemon answers, the next poll finds
    // the container running and stops it.
    std::fs::remove_file(node.flag()).expect("flag removed");
    node.expect(15, "started again", || engine.running());
    engine.with(|c| {
        c.stops.push_back(Stop::Lose {
            stopped: false,
            looks_lost: u32::MAX,
        })
    });
    let from = engine.mark();
    std::fs::write(node.flag(), b"test\n").expect("flag");
    let unsettled = format!(
        "stopping the local connector failed: the stop of container {name:?} lost its answer \
         (the Docker daemon restarting?) and no look settled whether it stopped within 5750 ms; \
         deciding nothing on a guess; deciding again at the next poll"
    );
    node.expect(20, "the stop gives up without a guess", || {
        node.log().contains(&unsettled)
    });
    let calls = the_stop(engine.calls_from(from), &call("GET inspect", true));
    assert!(
        calls.len() > 2
            && calls[0] == call("POST stop", false)
            && calls[1..].iter().all(|c| *c == call("GET inspect", false)),
        "{calls:?}\n{}",
        node.log()
    );
    assert!(engine.running(), "nothing stopped it: {}", node.log());
    engine.with(|c| c.lost_inspects = 0);
    node.expect(20, "the daemon is back: the next poll stops it", || {
        !engine.running()
    });
    assert!(!node.log().contains("panicked"), "{}", node.log());
    drop(agent);
}

/// A socket the agent's user may not use (mode 0000; the agent runs as
/// nobody when the test is root, which no file mode stops): check-config
/// and the running agent name `connector.docker_host` and the cause, and
/// nothing reaches the Engine. A stand-in that drops an inspect
/// unanswered is named by its key in check-config too.
#[test]
fn a_socket_the_agent_may_not_use_is_named() {
    let _serial = support::serial();
    let mut node = Node::new("engine-denied");
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        node.run_as = Some(NOBODY);
        if !nobody_can_run_the_agent() {
            eprintln!(
                "skipped: root, and nobody (uid {NOBODY}) cannot run {} (a target directory \
                 under a private home?), so no user here is stopped by a socket's mode",
                support::AGENT
            );
            return;
        }
    }
    let engine = StandIn::start(&node);
    let host = engine.host();

    // First a socket anyone may use, on an Engine that drops the inspect.
    let mode = |bits| std::fs::set_permissions(&engine.socket, PermissionsExt::from_mode(bits));
    mode(0o666).expect("chmod");
    engine.with(|c| c.lost_inspects = 1);
    let out = node.check_config(&node.write_config(&host, &node.container));
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("# warning: connector.docker_host {host}: "))
            && text.contains("the agent cannot control the connector until it can")
            && !text.contains("permission denied"),
        "{text}"
    );
    assert_eq!(engine.calls_from(0), [call("GET inspect", false)]);

    mode(0o000).expect("chmod");
    let before = engine.mark();
    let config = node.write_config(&host, &node.container);
    let out = node.check_config(&config);
    let text = said(&out);
    let denied = format!(
        "connector.docker_host {host}: permission denied: the agent's user may not use the socket"
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains(&format!("# warning: {denied}")), "{text}");

    let agent = node.start_agent(&config);
    check_uid(agent.0.id(), node.run_as);
    node.expect(15, "the agent names the key and the cause", || {
        node.log().contains(&format!(
            "cannot tell whether the local connector runs: {denied}"
        ))
    });
    let log = node.log();
    assert!(!log.contains("local connector started"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
    assert_eq!(engine.calls_from(before), [], "{log}");
    assert!(!engine.running());
}

const NOBODY: u32 = 65534;

fn nobody_can_run_the_agent() -> bool {
    std::process::Command::new("setpriv")
        .args([&format!("--reuid={NOBODY}"), &format!("--regid={NOBODY}")])
        .args(["--clear-groups", support::AGENT, "--version"])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// The agent really runs as the user the test meant, so the socket's
/// mode, not root's privilege, decided.
fn check_uid(pid: u32, uid: Option<u32>) {
    let Some(uid) = uid else { return };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
    let line = status.lines().find(|l| l.starts_with("Uid:"));
    let ids: Vec<&str> = line
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .collect();
    assert!(
        ids.len() == 4 && ids.iter().all(|id| *id == uid.to_string()),
        "{line:?}"
    );
}
