//! Real processes on loopback: agents, fake connectors, egress servers;
//! and, in `in_process`, the same on paused time inside the test.
#![allow(dead_code)]
// Shared by several test crates, each using a part: `pub` is its interface.
#![allow(unreachable_pub)]
// Test support: a failed expect here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod docker_node;
pub mod in_process;

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const AGENT: &str = env!("CARGO_BIN_EXE_failover-agent");
pub const FAKE: &str = env!("CARGO_BIN_EXE_fake-connector");

/// Fast clocks for tests: 1 s polls and fail-back checks. Slow enough that
/// a loaded 2-core machine does not miss looks (two hops of a probe each
/// well under the 750 ms probe timeout), fast enough for the whole file.
pub const POLL_MS: u64 = 1_000;

/// Misses before a take-over where a test asserts that none happens: five
/// looks in a row must fail, not three.
pub const TAKEOVER_AFTER: u32 = 5;

/// Ports handed out once per test process, below Linux's ephemeral range
/// (32768+), so that neither another test nor an outgoing connection's
/// source port takes one between `free_port()` and the bind.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = 20_000 + (std::process::id() % 1_000) * 12;
    loop {
        let offset = NEXT.fetch_add(1, Ordering::SeqCst);
        let port = u16::try_from(base + offset % 12_000).expect("a port below 32768");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// The two-node scenarios run one at a time: a dozen processes on fast
/// clocks are enough load for a small machine.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The shared token of the test agents: long enough for check-config.
pub const TOKEN: &str = "s3cret-token-for-tests";

/// Where scratch directories go: not under /tmp, /var/tmp or /home, where
/// check-config refuses a maintenance flag (the packaged unit hides them
/// from the agent). /dev/shm is on every Linux host and is no such place.
pub fn scratch_root() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
    }
}

/// Writes a token file as an operator must: readable by its owner only.
pub fn write_token(path: &Path, token: &str) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .expect("token file");
    writeln!(file, "{token}").expect("token written");
}

/// A scratch directory removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = scratch_root().join(format!("failover-agent-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process killed on drop.
pub struct Proc(pub Child);

impl Proc {
    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One HTTP/1.1 exchange with generous timeouts; `None` if nothing answered.
pub fn http(method: &str, port: u16, path: &str, bearer: Option<&str>) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let auth = bearer
        .map(|t| format!("authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{auth}content-length: 0\r\nconnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body))
}

pub fn ready(port: u16) -> bool {
    matches!(http("GET", port, "/ready", None), Some((200, _)))
}

/// Polls `condition` every 50 ms until it holds or `secs` pass.
pub fn eventually(secs: u64, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    condition()
}

/// An HTTP server that answers 200 to anything: the egress target, or the
/// edge a fake connector needs to be ready. Kill it to cut the uplink.
pub fn egress_server(port: u16, log: &Path) -> Proc {
    let child = Command::new(FAKE)
        .args(["--listen", &format!("127.0.0.1:{port}"), "--id", "egress"])
        .stdout(Stdio::null())
        .stderr(File::create(log).map(Stdio::from).unwrap_or(Stdio::null()))
        .spawn()
        .expect("egress server");
    assert!(
        eventually(10, || http("GET", port, "/cdn-cgi/trace", None).is_some()),
        "egress server up"
    );
    Proc(child)
}

pub struct NodeSpec {
    pub name: &'static str,
    pub role: &'static str,
    pub agent_port: u16,
    pub connector_port: u16,
    pub edge_port: u16,
    pub peer_agent_port: u16,
    /// The peer connector's `/ready`, given directly.
    pub peer_connector_port: Option<u16>,
    pub poll_ms: u64,
    pub takeover_after: u32,
}

impl NodeSpec {
    pub fn pidfile(&self, dir: &Scratch) -> PathBuf {
        dir.path(&format!("{}.connector.pid", self.name))
    }

    pub fn flag(&self, dir: &Scratch) -> PathBuf {
        dir.path(&format!("{}.maintenance", self.name))
    }

    pub fn config_path(&self, dir: &Scratch) -> PathBuf {
        dir.path(&format!("{}.toml", self.name))
    }

    pub fn start_command(&self, dir: &Scratch) -> String {
        format!(
            "'{FAKE}' --listen 127.0.0.1:{} --edge 127.0.0.1:{} --id {} >/dev/null 2>&1 & echo $! > '{}'",
            self.connector_port,
            self.edge_port,
            self.name,
            self.pidfile(dir).display()
        )
    }

    /// What `systemctl stop` would do: the process goes, the agent is not told.
    pub fn stop_command(&self, dir: &Scratch) -> String {
        let pid = self.pidfile(dir);
        format!(
            "if [ -f '{0}' ]; then kill $(cat '{0}') 2>/dev/null; rm -f '{0}'; fi",
            pid.display()
        )
    }

    pub fn connector_running(&self, dir: &Scratch) -> bool {
        self.pidfile(dir).exists()
    }

    /// Writes the config (and the shared token file) and returns its path.
    pub fn write_config(&self, dir: &Scratch) -> PathBuf {
        let token = dir.path("token");
        write_token(&token, TOKEN);
        let state = dir.path(&format!("{}.state", self.name));
        std::fs::create_dir_all(&state).expect("state dir");
        let pid = self.pidfile(dir);
        let direct = self
            .peer_connector_port
            .map(|p| format!("connector_ready_url = \"http://127.0.0.1:{p}/ready\"\n"))
            .unwrap_or_default();
        let text = format!(
            r#"role = "{role}"
listen = "127.0.0.1:{agent}"
token_file = "{token}"
maintenance_flag = "{flag}"
state_dir = "{state}"
poll_interval = "{poll}ms"
takeover_after = {takeover_after}
failback_interval = "{poll}ms"
probe_timeout = "{timeout}ms"

[connector]
ready_url = "http://127.0.0.1:{conn}/ready"
control = "command"
start_command = "{start}"
stop_command = "{stop}"
status_command = "[ -f '{pid}' ] && kill -0 $(cat '{pid}') 2>/dev/null"
command_timeout = "5s"

[peer]
agent_url = "http://127.0.0.1:{peer}"
{direct}
[egress]
url = "http://127.0.0.1:{edge}/cdn-cgi/trace"
"#,
            role = self.role,
            agent = self.agent_port,
            token = token.display(),
            flag = self.flag(dir).display(),
            state = state.display(),
            poll = self.poll_ms,
            takeover_after = self.takeover_after,
            timeout = self.poll_ms * 3 / 4,
            conn = self.connector_port,
            start = self
                .start_command(dir)
                .replace('\\', "\\\\")
                .replace('"', "\\\""),
            stop = self.stop_command(dir).replace('"', "\\\""),
            pid = pid.display(),
            peer = self.peer_agent_port,
            edge = self.edge_port,
        );
        let path = self.config_path(dir);
        std::fs::write(&path, text).expect("config");
        path
    }

    pub fn start_agent(&self, dir: &Scratch) -> Proc {
        let config = self.write_config(dir);
        let log = File::create(dir.path(&format!("{}.log", self.name))).expect("log file");
        let child = Command::new(AGENT)
            .args(["--config", &config.to_string_lossy(), "run"])
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("agent");
        assert!(
            eventually(10, || http("GET", self.agent_port, "/health", None)
                .is_some()),
            "{} agent answers /health",
            self.name
        );
        Proc(child)
    }

    pub fn health(&self) -> String {
        http("GET", self.agent_port, "/health", None)
            .map(|(_, b)| b)
            .unwrap_or_default()
    }

    pub fn run_cli(&self, dir: &Scratch, words: &[&str]) -> std::process::Output {
        Command::new(AGENT)
            .arg("--config")
            .arg(self.config_path(dir))
            .args(words)
            .output()
            .expect("failover-agent runs")
    }
}

/// Stops a node's fake connector on drop, whatever the test did.
pub struct StopConnectorOnDrop<'a>(pub &'a NodeSpec, pub &'a Scratch);

impl Drop for StopConnectorOnDrop<'_> {
    fn drop(&mut self) {
        let _ = Command::new("sh")
            .arg("-c")
            .arg(self.0.stop_command(self.1))
            .status();
    }
}

/// Two agents, two fake connectors, one egress server per node.
pub struct Pair {
    pub dir: Scratch,
    pub primary: NodeSpec,
    pub standby: NodeSpec,
    pub primary_agent: Option<Proc>,
    pub standby_agent: Option<Proc>,
    pub primary_egress: Option<Proc>,
    pub standby_egress: Option<Proc>,
}

impl Pair {
    pub fn start(name: &str, direct_peer_url: bool, takeover_after: u32) -> Pair {
        let dir = Scratch::new(name);
        let (pa, sa, pc, sc, pe, se) = (
            free_port(),
            free_port(),
            free_port(),
            free_port(),
            free_port(),
            free_port(),
        );
        let primary = NodeSpec {
            name: "primary",
            role: "primary",
            agent_port: pa,
            connector_port: pc,
            edge_port: pe,
            peer_agent_port: sa,
            peer_connector_port: None,
            poll_ms: POLL_MS,
            takeover_after,
        };
        let standby = NodeSpec {
            name: "standby",
            role: "standby",
            agent_port: sa,
            connector_port: sc,
            edge_port: se,
            peer_agent_port: pa,
            peer_connector_port: direct_peer_url.then_some(pc),
            poll_ms: POLL_MS,
            takeover_after,
        };
        let primary_egress = Some(egress_server(pe, &dir.path("primary-egress.log")));
        let standby_egress = Some(egress_server(se, &dir.path("standby-egress.log")));
        let primary_agent = Some(primary.start_agent(&dir));
        let standby_agent = Some(standby.start_agent(&dir));
        let pair = Pair {
            dir,
            primary,
            standby,
            primary_agent,
            standby_agent,
            primary_egress,
            standby_egress,
        };
        pair.expect(30, "the primary serves after start-up", |p| {
            ready(p.primary.connector_port) && !p.standby.connector_running(&p.dir)
        });
        pair
    }

    pub fn log(&self, node: &str) -> String {
        std::fs::read_to_string(self.dir.path(&format!("{node}.log"))).unwrap_or_default()
    }

    /// Both agents' logs, for failure messages.
    pub fn logs(&self) -> String {
        ["primary", "standby"]
            .iter()
            .map(|n| {
                let text =
                    std::fs::read_to_string(self.dir.path(&format!("{n}.log"))).unwrap_or_default();
                format!("----- {n} agent -----\n{text}")
            })
            .collect()
    }

    pub fn expect(&self, secs: u64, what: &str, mut condition: impl FnMut(&Pair) -> bool) {
        if !eventually(secs, || condition(self)) {
            panic!("not within {secs} s: {what}\n{}", self.logs());
        }
    }

    pub fn cut_primary_egress(&mut self) {
        if let Some(mut p) = self.primary_egress.take() {
            p.kill();
        }
    }

    pub fn restore_primary_egress(&mut self) {
        self.primary_egress = Some(egress_server(
            self.primary.edge_port,
            &self.dir.path("primary-egress-2.log"),
        ));
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        self.primary_agent.take();
        self.standby_agent.take();
        for node in [&self.primary, &self.standby] {
            let _ = Command::new("sh")
                .arg("-c")
                .arg(node.stop_command(&self.dir))
                .status();
        }
    }
}

/// A stand-in for the peer agent: answers every request with `status` and
/// `body`, and keeps each request's head as sent (hyper writes header names
/// in lowercase) for the test to read.
pub struct FakePeer {
    pub port: u16,
    pub heads: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl FakePeer {
    pub fn start(port: u16, status: u16, body: String) -> FakePeer {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("fake peer binds");
        let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&heads);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                kept.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&head).into_owned());
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        FakePeer { port, heads }
    }

    /// The `authorization` header of the first request for `path`.
    pub fn authorization_of(&self, path: &str) -> Option<String> {
        let heads = self.heads.lock().unwrap();
        let head = heads.iter().find(|h| h.contains(&format!(" {path} ")))?;
        head.lines()
            .find_map(|l| l.strip_prefix("authorization: "))
            .map(str::to_string)
    }
}

/// One POST with a raw `Authorization` value; the status, if any answer.
pub fn post_with(port: u16, path: &str, authorization: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: {authorization}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}
