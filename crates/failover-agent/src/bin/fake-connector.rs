//! A stand-in for cloudflared in tests and the gate: serves `/ready` like
//! cloudflared's metrics endpoint — 200 `{"status":200,"readyConnections":N,
//! "connectorId":"..."}` while connected, 503 otherwise — and answers any
//! other GET with 200, so it doubles as an egress target.
//!
//! "Connected" means: not told to disconnect (`POST /control/disconnect`,
//! undone by `POST /control/connect`) and, with `--edge HOST:PORT`, that
//! address accepts a TCP connection (stop the edge = lose the uplink). The
//! edge is checked by a background thread every 100 ms and `/ready` answers
//! from that cache, so a look at `/ready` never waits on the edge.
//!
//! usage: fake-connector --listen 127.0.0.1:PORT [--edge HOST:PORT]
//!        [--connections N] [--id ID]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

struct Settings {
    edge: Option<String>,
    connections: u32,
    id: String,
}

fn main() {
    let mut listen = None;
    let mut settings = Settings {
        edge: None,
        connections: 4,
        id: "fake-connector".into(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next();
        match (arg.as_str(), value) {
            ("--listen", Some(v)) => listen = Some(v),
            ("--edge", Some(v)) => settings.edge = Some(v),
            ("--connections", Some(v)) => settings.connections = v.parse().unwrap_or(4),
            ("--id", Some(v)) => settings.id = v,
            (other, _) => {
                eprintln!("fake-connector: bad argument {other:?}");
                std::process::exit(2);
            }
        }
    }
    let Some(listen) = listen else {
        eprintln!("fake-connector: --listen HOST:PORT is required");
        std::process::exit(2);
    };
    let listener = match TcpListener::bind(&listen) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("fake-connector: cannot listen on {listen}: {e}");
            std::process::exit(1);
        }
    };
    let edge_up = Arc::new(AtomicBool::new(
        settings.edge.as_deref().is_none_or(edge_reachable),
    ));
    if let Some(edge) = settings.edge.clone() {
        let edge_up = Arc::clone(&edge_up);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(100));
            edge_up.store(edge_reachable(&edge), Ordering::SeqCst);
        });
    }
    let settings = Arc::new(settings);
    let connected = Arc::new(AtomicBool::new(true));
    for stream in listener.incoming().flatten() {
        let (settings, connected, edge_up) = (
            Arc::clone(&settings),
            Arc::clone(&connected),
            Arc::clone(&edge_up),
        );
        std::thread::spawn(move || {
            let up = connected.load(Ordering::SeqCst) && edge_up.load(Ordering::SeqCst);
            let _ = answer(stream, &settings, up, &connected);
        });
    }
}

fn edge_reachable(edge: &str) -> bool {
    let Ok(mut addrs) = edge.to_socket_addrs() else {
        return false;
    };
    addrs
        .next()
        .is_some_and(|addr| TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok())
}

fn answer(
    stream: TcpStream,
    settings: &Settings,
    up: bool,
    connected: &AtomicBool,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, body) = match (method, path) {
        ("GET", "/ready") => {
            if up {
                (
                    200,
                    format!(
                        r#"{{"status":200,"readyConnections":{},"connectorId":"{}"}}"#,
                        settings.connections, settings.id
                    ),
                )
            } else {
                (
                    503,
                    format!(
                        r#"{{"status":503,"readyConnections":0,"connectorId":"{}"}}"#,
                        settings.id
                    ),
                )
            }
        }
        ("POST", "/control/disconnect") => {
            connected.store(false, Ordering::SeqCst);
            (200, r#"{"connected":false}"#.to_string())
        }
        ("POST", "/control/connect") => {
            connected.store(true, Ordering::SeqCst);
            (200, r#"{"connected":true}"#.to_string())
        }
        ("GET", _) => (200, "fl=fake\nh=fake-connector\nwarp=off\n".to_string()),
        _ => (405, "method not allowed\n".to_string()),
    };
    let reason = match status {
        200 => "OK",
        503 => "Service Unavailable",
        _ => "Method Not Allowed",
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}
