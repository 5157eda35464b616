//! The agent in process, on port 0 and paused time: an app health endpoint that hangs,
//! answers garbage or streams 10 MB never stalls the agent's loop or its
//! API. One thread runs both the agent and the bad app, so a check that
//! blocked would stop `/health` from answering too.

// Test helpers: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use failover_agent::{bind, serve_with, Config, Token};
use support::in_process;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Copy, Debug)]
enum BadApp {
    /// Accepts and never answers.
    Hangs,
    /// Answers bytes that are not HTTP.
    Garbage,
    /// 200 with a 10 MB body, sent slowly.
    TenMegabytes,
}

async fn start_app(mode: BadApp) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut request = [0u8; 1024];
                let _ = stream.read(&mut request).await;
                match mode {
                    BadApp::Hangs => tokio::time::sleep(Duration::from_secs(3600)).await,
                    BadApp::Garbage => {
                        let _ = stream.write_all(b"\x00\xffnot http at all\r\n\r\n").await;
                    }
                    BadApp::TenMegabytes => {
                        let head = "HTTP/1.1 200 OK\r\ncontent-length: 10485760\r\n\r\n";
                        if stream.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                        let chunk = vec![b'x'; 64 * 1024];
                        for _ in 0..160 {
                            if stream.write_all(&chunk).await.is_err() {
                                return;
                            }
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                }
            });
        }
    });
    addr
}

fn config(app: SocketAddr, dir: &std::path::Path) -> Config {
    // Nothing else answers: the connector's /ready and egress are refused.
    let text = format!(
        r#"
topology = "tunnel-per-node"
listen = "127.0.0.1:0"
token_file = "{dir}/token"
maintenance_flag = "{dir}/maintenance"
state_dir = "{dir}"
poll_interval = "300ms"
failback_interval = "300ms"
probe_timeout = "200ms"

[connector]
ready_url = "http://127.0.0.1:1/ready"
control = "command"
start_command = "true"
stop_command = "true"
status_command = "false"
command_timeout = "2s"

[app]
health_url = "http://{app}/health"
interval = "300ms"
fall = 2
rise = 2

[egress]
url = "http://127.0.0.1:1/trace"
"#,
        dir = dir.display()
    );
    Config::parse(&text).unwrap()
}

/// One GET on a fresh connection; the whole answer as text.
async fn get(port: u16, path: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nhost: agent\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
}

// Paused time: the clock jumps whenever the agent, the bad app and this
// test all wait, so the three seconds of checks take none; a check that
// blocked the thread would still stop `/health` (and the clock) with it.
#[tokio::test(start_paused = true)]
async fn a_bad_app_endpoint_never_stalls_the_loop_or_the_api() {
    let dir = support::scratch_root().join(format!("failover-agent-app-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (mode, expected) in [
        (BadApp::Hangs, r#""app":"down""#),
        (BadApp::Garbage, r#""app":"down""#),
        // Status 200 in time is healthy: the body is never read.
        (BadApp::TenMegabytes, r#""app":"up""#),
    ] {
        let app = start_app(mode).await;
        let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        // A connector that runs no process: on paused time a process's
        // wait would jump the clock to its deadline.
        let connector = in_process::Connector::new(in_process::Egress::start().await).await;
        let agent = tokio::spawn(serve_with(
            config(app, &dir),
            Token::new("in-process-token"),
            in_process::control(&connector),
            listener,
            async {
                let _ = stopped.await;
            },
        ));
        let mut last = String::new();
        // Ten looks over three seconds: ten app checks at 300 ms.
        for _ in 0..10 {
            // A hang detector, not a speed claim: a check without its
            // deadline would hold this one thread for an hour.
            last = tokio::time::timeout(Duration::from_secs(5), get(port, "/health"))
                .await
                .unwrap_or_else(|_| panic!("{mode:?}: /health did not answer in 5 s"));
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        assert!(last.contains(expected), "{mode:?}: {last}");
        // The loop kept turning: each check ended at its deadline or sooner,
        // and /health never waited behind one.
        assert!(
            last.contains(r#""app_last_check""#),
            "{mode:?}: no app check recorded: {last}"
        );
        let _ = stop.send(());
        agent.await.unwrap().unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
