//! Agents in this test process, on paused tokio time: the monitor's polls,
//! the probe deadlines and the tests' waits run on a clock that jumps to the
//! next timer whenever every task is idle, so minutes of polls take
//! milliseconds and no assertion races a loaded machine. What the agent
//! talks to lives here too, in the same runtime: connectors that start and
//! stop without a process, their `/ready`, egress servers, bad peers. The
//! agent itself is the real one, bound on `127.0.0.1:0` (`serve_with`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use failover_agent::{bind, serve_with, Config, ConnectorControl, Pending, Token};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::TOKEN;

/// How a stand-in answers HTTP.
#[derive(Clone)]
pub enum Answer {
    /// This status and body.
    Fixed(u16, String),
    /// Accept, read, and never answer.
    Hang,
}

/// An HTTP stand-in whose answer can change while it runs; `None` closes
/// each connection unanswered (a stopped server, as the agent sees it).
pub struct Server {
    pub addr: SocketAddr,
    answer: Arc<Mutex<Option<Answer>>>,
}

impl Server {
    pub async fn start(answer: Answer) -> Server {
        Server::start_with(Arc::new(Mutex::new(Some(answer)))).await
    }

    async fn start_with(answer: Arc<Mutex<Option<Answer>>>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::clone(&answer);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let now = shared.lock().unwrap().clone();
                tokio::spawn(respond(stream, now));
            }
        });
        Server { addr, answer }
    }

    pub fn set(&self, answer: Option<Answer>) {
        *self.answer.lock().unwrap() = answer;
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

async fn respond(mut stream: TcpStream, answer: Option<Answer>) {
    let Some(answer) = answer else {
        return;
    };
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    match answer {
        Answer::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        Answer::Fixed(status, body) => {
            let text = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(text.as_bytes()).await;
        }
    }
}

/// An egress server: 200 to anything while up.
pub struct Egress {
    server: Server,
    up: AtomicBool,
}

impl Egress {
    pub async fn start() -> Arc<Egress> {
        Arc::new(Egress {
            server: Server::start(ok()).await,
            up: AtomicBool::new(true),
        })
    }

    pub fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.server.set(None);
    }

    pub fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
        self.server.set(Some(ok()));
    }

    pub fn port(&self) -> u16 {
        self.server.port()
    }

    fn is_up(&self) -> bool {
        self.up.load(Ordering::SeqCst)
    }
}

fn ok() -> Answer {
    Answer::Fixed(200, "fl=1\nh=egress\n".into())
}

/// A connector without a process: running or not, ready while running, its
/// edge (an egress server) up and not disconnected. Its `/ready` answers as
/// cloudflared's does; a stopped one does not answer.
pub struct Connector {
    ready_server: Server,
    edge: Arc<Egress>,
    running: AtomicBool,
    disconnected: AtomicBool,
    starts: AtomicU32,
    /// When it was stopped, each time.
    pub stops: Mutex<Vec<Instant>>,
}

impl Connector {
    pub async fn new(edge: Arc<Egress>) -> Arc<Connector> {
        let connector = Arc::new(Connector {
            ready_server: Server::start_with(Arc::new(Mutex::new(None))).await,
            edge,
            running: AtomicBool::new(false),
            disconnected: AtomicBool::new(false),
            starts: AtomicU32::new(0),
            stops: Mutex::new(Vec::new()),
        });
        // The answer follows the state: refreshed by a task that looks
        // often (paused time: it costs nothing).
        let watched = Arc::clone(&connector);
        tokio::spawn(async move {
            loop {
                watched.ready_server.set(watched.answer());
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        connector
    }

    fn answer(&self) -> Option<Answer> {
        if !self.is_running() {
            return None;
        }
        Some(if self.is_ready() {
            Answer::Fixed(200, r#"{"status":200,"readyConnections":4}"#.into())
        } else {
            Answer::Fixed(503, r#"{"status":503,"readyConnections":0}"#.into())
        })
    }

    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }

    pub fn is_ready(&self) -> bool {
        self.is_running() && self.edge.is_up() && !self.disconnected.load(Ordering::SeqCst)
    }

    /// The process goes, the agent is not told (a bare `systemctl stop`).
    pub fn stop_behind_the_agents_back(&self) {
        self.set_running(false);
    }

    /// The connector loses its edge connections and keeps running.
    pub fn disconnect(&self) {
        self.disconnected.store(true, Ordering::SeqCst);
    }

    pub fn starts(&self) -> u32 {
        self.starts.load(Ordering::SeqCst)
    }

    fn set_running(&self, running: bool) {
        let was = self.running.swap(running, Ordering::SeqCst);
        if was && !running {
            self.stops.lock().unwrap().push(Instant::now());
        }
        if running {
            self.starts.fetch_add(1, Ordering::SeqCst);
        }
        self.ready_server.set(self.answer());
    }

    pub fn ready_url(&self) -> String {
        format!("http://{}/ready", self.ready_server.addr)
    }
}

/// The controller an agent is given: it runs no process. (A process on
/// paused time is a trap: while the runtime waits for it, the clock jumps
/// to the command's deadline, and the command "times out".)
pub fn control(connector: &Arc<Connector>) -> Box<dyn ConnectorControl> {
    Box::new(Control(Arc::clone(connector)))
}

struct Control(Arc<Connector>);

impl ConnectorControl for Control {
    fn start(&self) -> Pending<'_, ()> {
        Box::pin(async move {
            self.0.set_running(true);
            Ok(())
        })
    }

    fn stop(&self) -> Pending<'_, ()> {
        Box::pin(async move {
            self.0.set_running(false);
            Ok(())
        })
    }

    fn is_running(&self) -> Pending<'_, bool> {
        Box::pin(async move { Ok(self.0.is_running()) })
    }

    fn describe(&self) -> String {
        "in-process test connector".into()
    }
}

/// What an in-process agent is configured with.
pub struct Spec {
    pub role: &'static str,
    pub poll_ms: u64,
    pub takeover_after: u32,
    pub connector_ready_url: String,
    pub peer_agent_port: u16,
    pub peer_connector_ready_url: Option<String>,
    pub egress_port: u16,
    pub flag: PathBuf,
}

/// One agent running in this process until dropped or stopped.
pub struct Agent {
    pub port: u16,
    pub flag: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Agent {
    /// Binds a port first, so that a pair can be given each other's.
    pub async fn listener() -> tokio::net::TcpListener {
        bind("127.0.0.1:0".parse().unwrap()).unwrap()
    }

    pub fn start(
        spec: &Spec,
        listener: tokio::net::TcpListener,
        connector: &Arc<Connector>,
    ) -> Agent {
        let port = listener.local_addr().unwrap().port();
        // Beside the flag, one directory per agent: a pair shares a Dir.
        let state = spec.flag.with_extension("state");
        std::fs::create_dir_all(&state).unwrap();
        let direct = spec
            .peer_connector_ready_url
            .as_ref()
            .map(|u| format!("connector_ready_url = \"{u}\"\n"))
            .unwrap_or_default();
        let text = format!(
            r#"role = "{role}"
listen = "127.0.0.1:{port}"
token_file = "/nonexistent/token"
maintenance_flag = "{flag}"
state_dir = "{state}"
poll_interval = "{poll}ms"
takeover_after = {takeover_after}
failback_interval = "{poll}ms"
probe_timeout = "{timeout}ms"

[connector]
ready_url = "{ready}"
control = "command"
start_command = "false"
stop_command = "false"
status_command = "false"
command_timeout = "5s"

[peer]
agent_url = "http://127.0.0.1:{peer}"
{direct}
[egress]
url = "http://127.0.0.1:{egress}/cdn-cgi/trace"
"#,
            role = spec.role,
            flag = spec.flag.display(),
            state = state.display(),
            poll = spec.poll_ms,
            takeover_after = spec.takeover_after,
            timeout = spec.poll_ms * 3 / 4,
            ready = spec.connector_ready_url,
            peer = spec.peer_agent_port,
            egress = spec.egress_port,
        );
        let config = Config::parse(&text).unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let control = Box::new(Control(Arc::clone(connector)));
        tokio::spawn(serve_with(
            config,
            Token::new(TOKEN),
            control,
            listener,
            async {
                let _ = stopped.await;
            },
        ));
        Agent {
            port,
            flag: spec.flag.clone(),
            stop: Some(stop),
        }
    }

    /// The agent goes away (its connector stays as it is).
    pub fn kill(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    pub async fn health(&self) -> String {
        request("GET", self.port, "/health", None)
            .await
            .map(|(_, body)| body)
            .unwrap_or_default()
    }

    /// The flag's path made a symlink to itself: every look at it fails
    /// (ELOOP), for root too, as a directory the agent may not search
    /// would for its own user.
    pub fn flag_unreadable(&self) {
        let _ = std::fs::remove_file(&self.flag);
        std::os::unix::fs::symlink(self.flag.file_name().unwrap(), &self.flag).unwrap();
        assert!(
            self.flag.try_exists().is_err(),
            "the flag is still readable"
        );
    }

    pub fn maintenance(&self, on: bool) {
        if on {
            std::fs::write(&self.flag, b"maintenance\n").unwrap();
        } else {
            let _ = std::fs::remove_file(&self.flag);
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One HTTP/1.1 exchange; `None` if nothing answered.
pub async fn request(
    method: &str,
    port: u16,
    path: &str,
    bearer: Option<&str>,
) -> Option<(u16, String)> {
    let exchange = async {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        let auth = bearer
            .map(|t| format!("authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let text = format!(
            "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{auth}content-length: 0\r\nconnection: close\r\n\r\n"
        );
        stream.write_all(text.as_bytes()).await.ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.ok()?;
        let status = answer.split_whitespace().nth(1)?.parse().ok()?;
        let body = answer
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        Some((status, body))
    };
    tokio::time::timeout(Duration::from_secs(30), exchange)
        .await
        .ok()
        .flatten()
}

/// Waits (on the paused clock) until `condition` holds, looking every
/// 50 ms, for at most `secs`; whether it came to hold.
pub async fn eventually<F, Fut>(secs: u64, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if condition().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    condition().await
}

/// A scratch directory for flag files, removed on drop.
pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(name: &str) -> Dir {
        let dir = super::scratch_root().join(format!(
            "failover-agent-inproc-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(Path::new(&self.0));
    }
}

/// A primary and a standby with their connectors and egress servers.
pub struct Pair {
    pub _dir: Dir,
    pub primary: Agent,
    pub standby: Agent,
    pub primary_connector: Arc<Connector>,
    pub standby_connector: Arc<Connector>,
    pub primary_egress: Arc<Egress>,
}

impl Pair {
    pub async fn start(name: &str, direct_peer_url: bool, takeover_after: u32) -> Pair {
        let dir = Dir::new(name);
        let (primary_egress, standby_egress) = (Egress::start().await, Egress::start().await);
        let primary_connector = Connector::new(Arc::clone(&primary_egress)).await;
        let standby_connector = Connector::new(Arc::clone(&standby_egress)).await;
        let (pl, sl) = (Agent::listener().await, Agent::listener().await);
        let (pp, sp) = (
            pl.local_addr().unwrap().port(),
            sl.local_addr().unwrap().port(),
        );
        let spec = |role, connector: &Connector, peer, egress: &Egress| Spec {
            role,
            poll_ms: super::POLL_MS,
            takeover_after,
            connector_ready_url: connector.ready_url(),
            peer_agent_port: peer,
            peer_connector_ready_url: None,
            egress_port: egress.port(),
            flag: dir.path(&format!("{role}.maintenance")),
        };
        let primary = Agent::start(
            &spec("primary", &primary_connector, sp, &primary_egress),
            pl,
            &primary_connector,
        );
        let mut standby_spec = spec("standby", &standby_connector, pp, &standby_egress);
        if direct_peer_url {
            standby_spec.peer_connector_ready_url = Some(primary_connector.ready_url());
        }
        let standby = Agent::start(&standby_spec, sl, &standby_connector);
        let pair = Pair {
            _dir: dir,
            primary,
            standby,
            primary_connector,
            standby_connector,
            primary_egress,
        };
        pair.expect(30, "the primary serves after start-up", |p| {
            p.primary_connector.is_ready() && !p.standby_connector.is_running()
        })
        .await;
        pair
    }

    /// Waits for `condition`, or fails naming `what` with both healths.
    pub async fn expect(&self, secs: u64, what: &str, condition: impl Fn(&Pair) -> bool) {
        if !eventually(secs, || std::future::ready(condition(self))).await {
            panic!(
                "not within {secs} s: {what}\nprimary: {}\nstandby: {}",
                self.primary.health().await,
                self.standby.health().await
            );
        }
    }
}

/// One request a [`Receiver`] took: its head's lines (names in lowercase,
/// as hyper writes them) and its body.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// How a [`Receiver`] answers one request: status and body.
pub type Handler = Arc<dyn Fn(&Received) -> (u16, String) + Send + Sync>;

/// A webhook receiver (or any HTTP stand-in that must see bodies): keeps
/// every request, answers each with the status of the moment (and `body`),
/// or as its handler says.
pub struct Receiver {
    pub addr: SocketAddr,
    pub got: Arc<Mutex<Vec<Received>>>,
    status: Arc<Mutex<u16>>,
    body: Arc<Mutex<String>>,
    /// Header lines added to every answer (`name: value\r\n` each).
    head: Arc<Mutex<String>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let status = Arc::new(Mutex::new(200));
        let body = Arc::new(Mutex::new(String::from("ok")));
        let (s, b) = (Arc::clone(&status), Arc::clone(&body));
        let handler: Handler = Arc::new(move |_| (*s.lock().unwrap(), b.lock().unwrap().clone()));
        Receiver::start_with_parts(handler, status, body).await
    }

    /// A stand-in whose every answer `handler` decides.
    pub async fn start_with(handler: Handler) -> Receiver {
        let unused = (
            Arc::new(Mutex::new(200)),
            Arc::new(Mutex::new(String::new())),
        );
        Receiver::start_with_parts(handler, unused.0, unused.1).await
    }

    async fn start_with_parts(
        handler: Handler,
        status: Arc<Mutex<u16>>,
        body: Arc<Mutex<String>>,
    ) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let head = Arc::new(Mutex::new(String::new()));
        let (g, hd) = (Arc::clone(&got), Arc::clone(&head));
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (g, h, hd) = (Arc::clone(&g), Arc::clone(&handler), Arc::clone(&hd));
                tokio::spawn(async move {
                    let _ = take(stream, &g, &h, &hd).await;
                });
            }
        });
        Receiver {
            addr,
            got,
            status,
            body,
            head,
        }
    }

    pub fn answer(&self, status: u16) {
        *self.status.lock().unwrap() = status;
    }

    pub fn answer_body(&self, body: &str) {
        *self.body.lock().unwrap() = body.to_string();
    }

    /// Adds `name: value` to every answer from now on.
    pub fn answer_header(&self, name: &str, value: &str) {
        self.head
            .lock()
            .unwrap()
            .push_str(&format!("{name}: {value}\r\n"));
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn requests(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// The `type` of every JSON body received, in order, duplicates (the
    /// same `id` again) dropped: what a receiver that dedupes sees.
    pub fn types(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        self.requests()
            .iter()
            .map(Received::json)
            .filter(|v| seen.insert(v["id"].as_str().unwrap_or("").to_string()))
            .map(|v| v["type"].as_str().unwrap_or("?").to_string())
            .collect()
    }
}

async fn take(
    mut stream: TcpStream,
    got: &Mutex<Vec<Received>>,
    handler: &Handler,
    extra_head: &Mutex<String>,
) -> Option<()> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next()?.split_whitespace();
    let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut rest = data[head_end + 4..].to_vec();
    while rest.len() < length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            break;
        }
        rest.extend_from_slice(&buf[..n]);
    }
    let received = Received {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&rest).into_owned(),
    };
    let (status, body) = handler(&received);
    got.lock().unwrap().push(received);
    let extra = extra_head.lock().unwrap().clone();
    let text = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(text.as_bytes()).await.ok()
}

/// A node with its own tunnel: its app (200 or 500 on demand), its
/// connector, its egress, and its agent in this process, polling every
/// second. `extra` is more config (`[notify]`, `[worker]`, ...), appended.
pub struct PerNode {
    pub dir: Dir,
    pub agent: Agent,
    pub app: Server,
    pub connector: Arc<Connector>,
    pub egress: Arc<Egress>,
    /// The connector's `/metrics`: requests in flight, 0 until told.
    pub metrics: Server,
}

impl PerNode {
    pub async fn start(name: &str, extra: &str) -> PerNode {
        let dir = Dir::new(name);
        let listener = Agent::listener().await;
        PerNode::start_in(dir, listener, extra).await
    }

    /// The same node again, after `kill`, in the same directory (its state
    /// files), with its connector as it was.
    pub async fn restart(self, extra: &str) -> PerNode {
        let PerNode {
            dir,
            mut agent,
            app,
            connector,
            egress,
            metrics,
        } = self;
        agent.kill();
        let listener = Agent::listener().await;
        PerNode::with(dir, listener, extra, app, connector, egress, metrics)
    }

    async fn start_in(dir: Dir, listener: tokio::net::TcpListener, extra: &str) -> PerNode {
        let egress = Egress::start().await;
        let connector = Connector::new(Arc::clone(&egress)).await;
        let app = Server::start(Answer::Fixed(200, "ok".into())).await;
        let metrics = Server::start(in_flight(0)).await;
        PerNode::with(dir, listener, extra, app, connector, egress, metrics)
    }

    fn with(
        dir: Dir,
        listener: tokio::net::TcpListener,
        extra: &str,
        app: Server,
        connector: Arc<Connector>,
        egress: Arc<Egress>,
        metrics: Server,
    ) -> PerNode {
        let port = listener.local_addr().unwrap().port();
        let flag = dir.path("maintenance");
        let text = format!(
            r#"topology = "tunnel-per-node"
name = "home"
listen = "127.0.0.1:{port}"
token_file = "/nonexistent/token"
maintenance_flag = "{flag}"
state_dir = "{state}"
poll_interval = "1s"
failback_interval = "1s"
probe_timeout = "750ms"

[connector]
ready_url = "{ready}"
metrics_url = "http://{metrics}/metrics"
control = "command"
start_command = "false"
stop_command = "false"
status_command = "false"
command_timeout = "5s"

[app]
health_url = "http://{app}/health"
interval = "1s"
fall = 2
rise = 2

[egress]
url = "http://127.0.0.1:{egress}/cdn-cgi/trace"

{extra}
"#,
            flag = flag.display(),
            state = dir.0.display(),
            ready = connector.ready_url(),
            app = app.addr,
            egress = egress.port(),
            metrics = metrics.addr,
        );
        let config = Config::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve_with(
            config,
            Token::new(TOKEN),
            Box::new(Control(Arc::clone(&connector))),
            listener,
            async {
                let _ = stopped.await;
            },
        ));
        PerNode {
            agent: Agent {
                port,
                flag,
                stop: Some(stop),
            },
            dir,
            app,
            connector,
            egress,
            metrics,
        }
    }

    /// cloudflared's gauge of requests in flight, from now on.
    pub fn in_flight(&self, n: u64) {
        self.metrics.set(Some(in_flight(n)));
    }

    pub fn app_down(&self) {
        self.app.set(Some(Answer::Fixed(500, "down".into())));
    }

    pub fn app_up(&self) {
        self.app.set(Some(Answer::Fixed(200, "ok".into())));
    }

    pub async fn expect(&self, secs: u64, what: &str, condition: impl Fn(&PerNode) -> bool) {
        if !eventually(secs, || std::future::ready(condition(self))).await {
            panic!(
                "not within {secs} s: {what}\nhealth: {}",
                self.agent.health().await
            );
        }
    }
}

/// cloudflared's `/metrics` with `n` requests in flight (a few lines of
/// what it also shows around the gauge).
pub fn in_flight(n: u64) -> Answer {
    Answer::Fixed(
        200,
        format!(
            "# HELP cloudflared_tunnel_total_requests Amount of requests proxied through all the tunnels\n\
             # TYPE cloudflared_tunnel_total_requests counter\n\
             cloudflared_tunnel_total_requests 1234\n\
             # HELP cloudflared_tunnel_concurrent_requests_per_tunnel Concurrent requests proxied through each tunnel\n\
             # TYPE cloudflared_tunnel_concurrent_requests_per_tunnel gauge\n\
             cloudflared_tunnel_concurrent_requests_per_tunnel {n}\n"
        ),
    )
}
