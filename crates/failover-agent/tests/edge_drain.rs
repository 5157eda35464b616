//! Tunnel per node with `[worker]`: a planned stop (maintenance on) drains
//! the node's origin at the Worker first, and stops the connector only
//! once the Worker reports the drain in effect and cloudflared has had no
//! request in flight for `quiet_for` (bounded by `drain_timeout`); a
//! fail-back gives the origin back (`auto`). Against a local stand-in of
//! the Worker's admin API (the contract: `POST {STATUS_PATH}/origins/{name}`
//! with a bearer token and `{"mode", "ttl_s", "drain_s"}`, `GET
//! {STATUS_PATH}/origins`) and a fake cloudflared `/metrics`, the agent in
//! this process on paused time.

// Test code: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use support::in_process::{Dir, Handler, PerNode, Received, Receiver};

const ADMIN_TOKEN: &str = "an-admin-token-for-tests";
const STATUS: &str = "/__failover/status";

/// The Worker's admin API as the contract says, with its overrides in
/// memory: a drain is in effect from the first GET after it was set.
struct Worker {
    api: Receiver,
    overrides: Arc<Mutex<BTreeMap<String, Value>>>,
    /// The status answered instead, when set (404: an older Worker).
    broken: Arc<Mutex<Option<u16>>>,
}

impl Worker {
    async fn start() -> Worker {
        let overrides = Arc::new(Mutex::new(BTreeMap::<String, Value>::new()));
        let broken = Arc::new(Mutex::new(None::<u16>));
        let (o, b) = (Arc::clone(&overrides), Arc::clone(&broken));
        let handler: Handler = Arc::new(move |r: &Received| {
            if let Some(status) = *b.lock().unwrap() {
                return (status, json!({"error": "broken on purpose"}).to_string());
            }
            if r.header("authorization") != Some(&format!("Bearer {ADMIN_TOKEN}")) {
                return (401, json!({"error": "unauthorized"}).to_string());
            }
            let mut all = o.lock().unwrap();
            let origins = format!("{STATUS}/origins");
            // SITES: node home serves two sites' origins.
            if let Some(node) = r.path.strip_prefix(&format!("{STATUS}/nodes/")) {
                if r.method != "POST" || node != "home" {
                    return (
                        400,
                        json!({"error": "node: no origin is on that node"}).to_string(),
                    );
                }
                let body = r.json();
                let mut set = serde_json::Map::new();
                for name in ["www-home", "git-home"] {
                    let entry = json!({"mode": body["mode"], "in_effect": false, "node": "home"});
                    all.insert(name.to_string(), entry.clone());
                    set.insert(name.to_string(), entry);
                }
                return (
                    200,
                    json!({"node": node, "in_effect": false, "origins": set}).to_string(),
                );
            }
            match (r.method.as_str(), r.path.strip_prefix(&origins)) {
                ("GET", Some("")) => {
                    for v in all.values_mut() {
                        v["in_effect"] = json!(true);
                    }
                    (200, json!({"overrides": *all}).to_string())
                }
                ("POST", Some(name)) if name.starts_with('/') => {
                    let body = r.json();
                    let entry = json!({
                        "mode": body["mode"],
                        "set_at": "2026-12-01T19:00:00Z",
                        "expires_at": body["ttl_s"].as_u64().map(|_| "2026-12-01T20:00:00Z"),
                        "in_effect": false,
                    });
                    all.insert(name[1..].to_string(), entry.clone());
                    (200, entry.to_string())
                }
                _ => (404, json!({"error": "not found"}).to_string()),
            }
        });
        let api = Receiver::start_with(handler).await;
        // The contract: every answer of the admin API carries the mark,
        // its refusals included.
        api.answer_header("x-tunnel-failover", "admin");
        Worker {
            api,
            overrides,
            broken,
        }
    }

    /// The modes POSTed for `name`, in order.
    fn modes(&self) -> Vec<String> {
        self.api
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .map(|r| r.json()["mode"].as_str().unwrap_or("?").to_string())
            .collect()
    }

    fn mode_of(&self, name: &str) -> Option<String> {
        let all = self.overrides.lock().unwrap();
        all.get(name)
            .and_then(|v| v["mode"].as_str())
            .map(str::to_string)
    }
}

fn worker_section(worker: &Worker, secrets: &Dir, extra: &str) -> String {
    section_for(worker.api.addr, secrets, extra)
}

/// `[worker]` for whatever listens at `addr`, with the admin token's file.
fn section_for(addr: std::net::SocketAddr, secrets: &Dir, extra: &str) -> String {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let token = secrets.path("admin-token");
    let _ = std::fs::remove_file(&token);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&token)
        .unwrap();
    writeln!(file, "{ADMIN_TOKEN}").unwrap();
    format!(
        "[worker]\nurl = \"http://{addr}\"\nadmin_token_file = \"{}\"\norigin = \"home\"\ndrain = \"30s\"\nquiet_for = \"5s\"\ndrain_timeout = \"40s\"\n{extra}",
        token.display()
    )
}

/// Not the Worker: what a mistyped `status_path` (or a Worker without the
/// admin API) reaches, an app that answers every request with a plausible
/// 200, the drain reported in effect; `headers` go on every answer.
async fn not_the_worker(headers: &[(&str, &str)]) -> Receiver {
    let handler: Handler = Arc::new(|r: &Received| {
        let drain = json!({"mode": "drain", "set_at": "2026-12-01T19:00:00Z", "in_effect": true});
        match r.method.as_str() {
            "GET" => (200, json!({"overrides": {"home": drain}}).to_string()),
            _ => (200, drain.to_string()),
        }
    });
    let app = Receiver::start_with(handler).await;
    for (name, value) in headers {
        app.answer_header(name, value);
    }
    app
}

/// A config for `failover-agent origin` with `extra` appended (`[worker]`).
fn cli_config(secrets: &Dir, extra: &str) -> std::path::PathBuf {
    let path = secrets.path("config.toml");
    std::fs::write(
        &path,
        format!(
            "topology = \"tunnel-per-node\"\ntoken_file = \"/nonexistent\"\n\
             maintenance_flag = \"{}\"\n[connector]\nready_url = \"http://127.0.0.1:1/ready\"\n{extra}",
            secrets.path("flag").display()
        ),
    )
    .unwrap();
    path
}

/// `failover-agent --config path origin words...`, the real binary.
async fn origin_cli(path: std::path::PathBuf, words: &[&str]) -> std::process::Output {
    let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(support::AGENT)
            .arg("--config")
            .arg(&path)
            .arg("origin")
            .args(&words)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// Its stdout and stderr, as a person reads them.
fn said(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

async fn seconds(n: u64) {
    tokio::time::sleep(Duration::from_secs(n)).await;
}

#[tokio::test(start_paused = true)]
async fn maintenance_drains_at_the_worker_waits_for_quiet_then_stops_and_fail_back_resumes() {
    let worker = Worker::start().await;
    let secrets = Dir::new("drain-secrets");
    let node = PerNode::start("drain-node", &worker_section(&worker, &secrets, "")).await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    assert!(
        worker.api.requests().is_empty(),
        "asked the Worker for nothing yet"
    );

    // Two requests in flight (a download, a WebSocket) when the flag is set.
    node.in_flight(2);
    node.agent.maintenance(true);
    seconds(3).await;
    let drain = worker.api.requests()[0].clone();
    assert_eq!(drain.method, "POST");
    assert_eq!(drain.path, "/__failover/status/origins/home");
    assert_eq!(
        drain.header("authorization"),
        Some(format!("Bearer {ADMIN_TOKEN}").as_str())
    );
    assert_eq!(drain.header("content-type"), Some("application/json"));
    assert_eq!(
        drain.json(),
        json!({"mode": "drain", "ttl_s": 3600, "drain_s": 30})
    );
    assert!(node.dir.path("edge-drained").exists());
    // In effect at the Worker, but requests in flight: the connector stays.
    seconds(15).await;
    assert!(
        node.connector.is_running(),
        "stopped with requests in flight"
    );

    node.in_flight(0);
    seconds(3).await;
    assert!(node.connector.is_running(), "stopped before quiet_for");
    node.expect(10, "stopped once quiet for 5 s", |n| {
        !n.connector.is_running()
    })
    .await;
    assert_eq!(worker.modes(), ["drain"]);

    // Serving again: the origin is given back to health once ready.
    node.agent.maintenance(false);
    node.expect(20, "serving after maintenance", |n| n.connector.is_ready())
        .await;
    seconds(3).await;
    assert_eq!(worker.modes(), ["drain", "auto"]);
    assert_eq!(worker.mode_of("home").as_deref(), Some("auto"));
    assert!(!node.dir.path("edge-drained").exists());
    // Nothing more once it is back: a steady minute asks nothing.
    let asked = worker.api.requests().len();
    seconds(60).await;
    assert_eq!(worker.api.requests().len(), asked);
}

/// A flag that becomes unreadable during the drain's wait is still set:
/// the drain goes on to its stop (it used to read as "flag removed": the
/// drain was cancelled, the origin given back, and the node served).
#[tokio::test(start_paused = true)]
async fn a_flag_unreadable_during_the_drain_does_not_cancel_it() {
    let worker = Worker::start().await;
    let secrets = Dir::new("drain-unreadable-secrets");
    let node = PerNode::start(
        "drain-unreadable-node",
        &worker_section(&worker, &secrets, ""),
    )
    .await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    node.in_flight(1);
    node.agent.maintenance(true);
    seconds(3).await;
    assert_eq!(worker.modes(), ["drain"]);
    node.agent.flag_unreadable();
    seconds(3).await;
    node.in_flight(0);
    node.expect(15, "stopped once quiet", |n| !n.connector.is_running())
        .await;
    assert_eq!(worker.modes(), ["drain"], "the drain was given back");
}

/// A WebSocket that never ends: the stop waits `drain_timeout`, no more.
#[tokio::test(start_paused = true)]
async fn drain_timeout_bounds_the_wait() {
    let worker = Worker::start().await;
    let secrets = Dir::new("drain-timeout-secrets");
    let node = PerNode::start("drain-timeout-node", &worker_section(&worker, &secrets, "")).await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    node.in_flight(1);
    node.agent.maintenance(true);
    seconds(35).await;
    assert!(
        node.connector.is_running(),
        "stopped before drain_timeout (40 s)"
    );
    node.expect(10, "stopped at drain_timeout", |n| {
        !n.connector.is_running()
    })
    .await;
}

/// An older Worker (no admin API: 404) or one that cannot be reached: no
/// reason to keep a node in maintenance serving; it stops at once.
#[tokio::test(start_paused = true)]
async fn a_worker_without_the_admin_api_means_todays_stop() {
    for status in [404, 500] {
        let worker = Worker::start().await;
        *worker.broken.lock().unwrap() = Some(status);
        let secrets = Dir::new(&format!("drain-404-secrets-{status}"));
        let node = PerNode::start(
            &format!("drain-404-node-{status}"),
            &worker_section(&worker, &secrets, ""),
        )
        .await;
        node.expect(20, "serving after start-up", |n| n.connector.is_ready())
            .await;
        node.in_flight(3);
        node.agent.maintenance(true);
        node.expect(3, "stopped at once", |n| !n.connector.is_running())
            .await;
        assert!(!node.dir.path("edge-drained").exists());
        node.agent.maintenance(false);
        node.expect(20, "serving after maintenance", |n| n.connector.is_ready())
            .await;
        // Never drained by us: nothing to give back.
        assert_eq!(worker.modes(), ["drain"], "HTTP {status}");
    }
}

/// The flag removed while the edge drains: the connector keeps serving
/// and the origin is given back at once.
#[tokio::test(start_paused = true)]
async fn the_flag_removed_during_the_drain_cancels_it() {
    let receiver = Receiver::start().await;
    let worker = Worker::start().await;
    let secrets = Dir::new("drain-cancel-secrets");
    let notify = format!("[notify]\nurl = \"{}\"\n", receiver.url("/hook"));
    let node = PerNode::start(
        "drain-cancel-node",
        &format!("{notify}\n{}", worker_section(&worker, &secrets, "")),
    )
    .await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    node.in_flight(1);
    node.agent.maintenance(true);
    seconds(5).await;
    node.agent.maintenance(false);
    seconds(5).await;
    assert!(node.connector.is_running());
    assert_eq!(node.connector.stops.lock().unwrap().len(), 0);
    assert_eq!(worker.modes(), ["drain", "auto"]);
    seconds(20).await;
    assert!(node.connector.is_ready());
    // The drain was not carried out: nothing told but the flag's removal.
    assert_eq!(receiver.types(), ["node.fail-back", "node.maintenance-off"]);
}

/// The agent restarted during maintenance (an upgrade, say) still gives
/// the origin back once it serves again; and a Worker failing that `auto`
/// is asked again at the next polls.
#[tokio::test(start_paused = true)]
async fn a_restarted_agent_gives_the_origin_back_and_retries_until_taken() {
    let worker = Worker::start().await;
    let secrets = Dir::new("drain-restart-secrets");
    let section = worker_section(&worker, &secrets, "");
    let node = PerNode::start("drain-restart-node", &section).await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    node.agent.maintenance(true);
    node.expect(20, "drained and stopped", |n| !n.connector.is_running())
        .await;
    let node = node.restart(&section).await;
    seconds(5).await;
    *worker.broken.lock().unwrap() = Some(503);
    node.agent.maintenance(false);
    node.expect(20, "serving after maintenance", |n| n.connector.is_ready())
        .await;
    seconds(5).await;
    assert_eq!(worker.mode_of("home").as_deref(), Some("drain"));
    *worker.broken.lock().unwrap() = None;
    seconds(5).await;
    assert_eq!(worker.mode_of("home").as_deref(), Some("auto"));
    assert!(!node.dir.path("edge-drained").exists());
}

/// `failover-agent origin`, the real binary against the stand-in: the
/// contract's request for each mode, the answer for a person, the Worker's
/// refusals in words, the token never shown, and a config without
/// `[worker]` an error naming it.
#[tokio::test]
async fn the_origin_command_speaks_the_contract() {
    let worker = Worker::start().await;
    let secrets = Dir::new("origin-cli");
    let section = worker_section(&worker, &secrets, "");
    let config = |extra: &str| cli_config(&secrets, extra);
    let run = |path: std::path::PathBuf, words: &'static [&'static str]| origin_cli(path, words);
    let text = said;
    let path = config(&section);

    let out = run(
        path.clone(),
        &["drain", "home", "--for", "30m", "--drain", "5m"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        text(&out).trim(),
        "origin home: drain, set 2026-12-01T19:00:00Z, expires 2026-12-01T20:00:00Z (not in effect yet)"
    );
    let sent = worker.api.requests().last().cloned().unwrap();
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/__failover/status/origins/home")
    );
    assert_eq!(
        sent.json(),
        json!({"mode": "drain", "ttl_s": 1800, "drain_s": 300})
    );
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {ADMIN_TOKEN}").as_str())
    );
    for (words, body) in [
        (&["disable", "vps"][..], json!({"mode": "disable"})),
        (
            &["force-up", "vps", "--for", "1h"][..],
            json!({"mode": "force-up", "ttl_s": 3600}),
        ),
        (&["auto", "home"][..], json!({"mode": "auto"})),
    ] {
        let words: &'static [&'static str] = Box::leak(words.to_vec().into_boxed_slice());
        let out = run(path.clone(), words).await;
        assert_eq!(out.status.code(), Some(0), "{words:?}: {}", text(&out));
        assert_eq!(
            worker.api.requests().last().unwrap().json(),
            body,
            "{words:?}"
        );
    }
    let out = run(path.clone(), &["show"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("origin home: auto"), "{shown}");
    assert!(shown.contains("origin vps: force-up, set 2026-12-01T19:00:00Z, expires 2026-12-01T20:00:00Z (in effect)"), "{shown}");
    assert_eq!(
        worker.api.requests().last().unwrap().path,
        "/__failover/status/origins"
    );

    // The Worker's refusals, in words; never the token.
    for (status, phrase) in [
        (401, "refused the token"),
        (404, "no admin API"),
        (400, "broken on purpose"),
    ] {
        *worker.broken.lock().unwrap() = Some(status);
        let out = run(path.clone(), &["drain", "home"]).await;
        assert_eq!(out.status.code(), Some(1), "{status}: {}", text(&out));
        assert!(text(&out).contains(phrase), "{status}: {}", text(&out));
        assert!(!text(&out).contains(ADMIN_TOKEN), "{}", text(&out));
    }
    *worker.broken.lock().unwrap() = None;

    // Bad command lines and configs: exit 2, naming what is wrong.
    for (words, phrase) in [
        (&["drain"][..], "<NAME>"),
        (&["show", "home"][..], "takes no name"),
        (
            &["auto", "home", "--drain", "5m"][..],
            "--drain goes with origin drain only",
        ),
        (&["drain", "home", "--for", "forever"][..], "--for"),
        (&["drain", "bad name"][..], "not a name"),
    ] {
        let words: &'static [&'static str] = Box::leak(words.to_vec().into_boxed_slice());
        let out = run(path.clone(), words).await;
        assert_eq!(out.status.code(), Some(2), "{words:?}: {}", text(&out));
        assert!(text(&out).contains(phrase), "{words:?}: {}", text(&out));
    }
    // An admin token others may read is refused, by key.
    use std::os::unix::fs::PermissionsExt;
    let token = secrets.path("admin-token");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = run(path.clone(), &["drain", "home"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("`worker.admin_token_file`"),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains(ADMIN_TOKEN), "{}", text(&out));
    let bare = config("");
    let out = run(bare, &["drain", "home"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("`worker`"), "{}", text(&out));
}

/// `failover-agent origin` against what is not the Worker's admin API: an
/// app's plausible 200 (a mistyped `status_path`), its 401 (not the
/// Worker's verdict on the token), and an origin's answer the Worker
/// proxied with a forged mark. Each exits 1 naming the likely cause;
/// none reads as done.
#[tokio::test]
async fn the_origin_command_trusts_only_the_workers_own_answer() {
    let secrets = Dir::new("origin-not-the-worker");
    let app = not_the_worker(&[]).await;
    let path = cli_config(&secrets, &section_for(app.addr, &secrets, ""));
    for words in [&["show"][..], &["drain", "home"][..], &["auto", "home"][..]] {
        let out = origin_cli(path.clone(), words).await;
        assert_eq!(out.status.code(), Some(1), "{words:?}: {}", said(&out));
        for phrase in [
            "not the Worker's admin API",
            "worker.status_path is not the Worker's STATUS_PATH",
            "x-tunnel-failover",
        ] {
            assert!(said(&out).contains(phrase), "{words:?}: {}", said(&out));
        }
        assert!(!said(&out).contains("in effect"), "{}", said(&out));
        assert!(!said(&out).contains(ADMIN_TOKEN), "{}", said(&out));
    }

    // The app's own 401 is no word on the Worker's token.
    let refusing: Handler = Arc::new(|_: &Received| (401, "{}".to_string()));
    let app = Receiver::start_with(refusing).await;
    let path = cli_config(&secrets, &section_for(app.addr, &secrets, ""));
    let out = origin_cli(path, &["drain", "home"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        said(&out).contains("not the Worker's admin API"),
        "{}",
        said(&out)
    );
    assert!(!said(&out).contains("refused the token"), "{}", said(&out));

    // An origin behind the Worker that sends the mark itself: the
    // Worker's x-served-by gives it away.
    let forged = not_the_worker(&[("x-tunnel-failover", "admin"), ("x-served-by", "home")]).await;
    let path = cli_config(&secrets, &section_for(forged.addr, &secrets, ""));
    let out = origin_cli(path, &["show"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        said(&out).contains("from an origin behind the Worker"),
        "{}",
        said(&out)
    );
}

/// The drain before a planned stop, with `[worker]` reaching an app that
/// answers 200 and "drain in effect": no drain is recorded (nothing to
/// give back), and the node stops at once as with no admin API, instead
/// of waiting on an answer that proves nothing.
#[tokio::test(start_paused = true)]
async fn a_drain_answered_by_an_app_is_no_drain() {
    let app = not_the_worker(&[]).await;
    let secrets = Dir::new("drain-not-the-worker-secrets");
    let node = PerNode::start(
        "drain-not-the-worker-node",
        &section_for(app.addr, &secrets, ""),
    )
    .await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    node.in_flight(3);
    node.agent.maintenance(true);
    node.expect(3, "stopped at once", |n| !n.connector.is_running())
        .await;
    assert!(!node.dir.path("edge-drained").exists());
    let asked: Vec<String> = app.requests().iter().map(|r| r.method.clone()).collect();
    assert_eq!(
        asked,
        ["POST"],
        "asked on after an answer that was not the Worker's"
    );
}

/// SITES: `node = "home"` drains every origin on the node in one call, waits
/// until the Worker reports all of them drained, and gives them all back.
#[tokio::test(start_paused = true)]
async fn a_node_drains_all_its_origins_in_one_call_and_gives_them_back() {
    let worker = Worker::start().await;
    let secrets = Dir::new("node-drain-secrets");
    let section =
        worker_section(&worker, &secrets, "").replace("origin = \"home\"", "node = \"home\"");
    let node = PerNode::start("node-drain", &section).await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    node.agent.maintenance(true);
    seconds(3).await;
    let drain = worker.api.requests()[0].clone();
    assert_eq!(drain.method, "POST");
    assert_eq!(drain.path, "/__failover/status/nodes/home");
    assert_eq!(drain.json()["mode"], "drain");
    node.expect(30, "stopped once both origins are drained and quiet", |n| {
        !n.connector.is_running()
    })
    .await;
    assert_eq!(worker.mode_of("www-home").as_deref(), Some("drain"));
    assert_eq!(worker.mode_of("git-home").as_deref(), Some("drain"));
    node.agent.maintenance(false);
    node.expect(20, "serving after maintenance", |n| n.connector.is_ready())
        .await;
    seconds(3).await;
    assert_eq!(worker.modes(), ["drain", "auto"]);
    assert_eq!(worker.mode_of("git-home").as_deref(), Some("auto"));
    let last = worker
        .api
        .requests()
        .into_iter()
        .rfind(|r| r.method == "POST")
        .unwrap();
    assert_eq!(last.path, "/__failover/status/nodes/home");
}
