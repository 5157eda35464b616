//! One agent node whose connector is a container, for the tests of
//! `connector.control = "docker"`: against a real dockerd (`docker.rs`)
//! and against a stand-in Engine with injected faults
//! (`docker_engine_faults.rs`). Tunnel per node, fast clocks; the app and
//! the edge are fake connectors on loopback.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::{eventually, free_port, http, write_token, Proc, Scratch, AGENT, FAKE, TOKEN};

/// A command's stdout and stderr, for an assertion's message.
pub fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub struct Node {
    pub dir: Scratch,
    pub container: String,
    pub agent_port: u16,
    pub connector_port: u16,
    pub app_port: u16,
    pub edge_port: u16,
    /// The uid the agent runs as (through `setpriv`, so the test must be
    /// root); `None`: the test's own.
    pub run_as: Option<u32>,
    app: Option<Proc>,
    _edge: Proc,
}

impl Node {
    pub fn new(name: &str) -> Node {
        let dir = Scratch::new(name);
        let (agent_port, connector_port, app_port, edge_port) =
            (free_port(), free_port(), free_port(), free_port());
        let edge = super::egress_server(edge_port, &dir.path("edge.log"));
        let mut node = Node {
            container: format!("failover-test-{name}-{}", std::process::id()),
            dir,
            agent_port,
            connector_port,
            app_port,
            edge_port,
            run_as: None,
            app: None,
            _edge: edge,
        };
        node.app_up();
        node
    }

    /// The app: an HTTP server answering 200 (the fake connector again).
    pub fn app_up(&mut self) {
        let child = Command::new(FAKE)
            .args(["--listen", &format!("127.0.0.1:{}", self.app_port)])
            .args(["--id", "app"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("app");
        self.app = Some(Proc(child));
        assert!(eventually(10, || http(
            "GET",
            self.app_port,
            "/health",
            None
        )
        .is_some()));
    }

    pub fn app_down(&mut self) {
        self.app = None;
    }

    pub fn flag(&self) -> PathBuf {
        self.dir.path("maintenance")
    }

    pub fn write_config(&self, docker_host: &str, container: &str) -> PathBuf {
        let token = self.dir.path("token");
        write_token(&token, TOKEN);
        let state = self.dir.path("state");
        std::fs::create_dir_all(&state).expect("state dir");
        // What the agent's user must own: its token (owner-only) and its
        // state directory.
        if let Some(uid) = self.run_as {
            for path in [&token, &state] {
                std::os::unix::fs::chown(path, Some(uid), Some(uid)).expect("chown");
            }
        }
        let text = format!(
            r#"topology = "tunnel-per-node"
listen = "127.0.0.1:{agent}"
token_file = "{token}"
maintenance_flag = "{flag}"
state_dir = "{state}"
poll_interval = "1s"
failback_interval = "1s"
probe_timeout = "750ms"

[connector]
ready_url = "http://127.0.0.1:{conn}/ready"
control = "docker"
container = "{container}"
docker_host = "{docker_host}"
command_timeout = "5s"

[app]
health_url = "http://127.0.0.1:{app}/health"
fall = 1
rise = 1

[egress]
url = "http://127.0.0.1:{edge}/cdn-cgi/trace"
"#,
            agent = self.agent_port,
            token = token.display(),
            flag = self.flag().display(),
            state = state.display(),
            conn = self.connector_port,
            app = self.app_port,
            edge = self.edge_port,
        );
        let path = self.dir.path("config.toml");
        std::fs::write(&path, text).expect("config");
        path
    }

    /// The agent's command, as [`Node::run_as`] says.
    fn agent(&self) -> Command {
        match self.run_as {
            None => Command::new(AGENT),
            Some(uid) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={uid}"))
                    .args(["--clear-groups", AGENT]);
                c
            }
        }
    }

    pub fn start_agent(&self, config: &Path) -> Proc {
        let log = File::create(self.dir.path("agent.log")).expect("log file");
        let child = self
            .agent()
            .args(["--config", &config.to_string_lossy(), "run"])
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("agent");
        assert!(
            eventually(10, || http("GET", self.agent_port, "/health", None)
                .is_some()),
            "the agent answers /health\n{}",
            self.log()
        );
        Proc(child)
    }

    pub fn check_config(&self, config: &Path) -> Output {
        self.agent()
            .args([
                "--config",
                &config.to_string_lossy(),
                "check-config",
                "--no-probe",
            ])
            .output()
            .expect("check-config runs")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path("agent.log")).unwrap_or_default()
    }

    pub fn expect(&self, secs: u64, what: &str, condition: impl FnMut() -> bool) {
        if !eventually(secs, condition) {
            panic!(
                "not within {secs} s: {what}\n----- agent -----\n{}",
                self.log()
            );
        }
    }
}
