//! `[notify]`: one message per decision carried out, none for a poll that
//! decides nothing, in the core's shapes, signed where configured, and
//! delivered in the background whatever the receiver does. The agent in
//! this process on paused time (`support::in_process`), the receivers real
//! HTTP servers on loopback.

// Test code: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use support::in_process::{eventually, request, Answer, PerNode, Receiver, Server};

const SECRET: &str = "a-signing-secret-for-tests";

/// A secret file as the agent accepts it: owner-only.
fn secret_file(node_dir: &std::path::Path) -> std::path::PathBuf {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = node_dir.join("notify-secret");
    let _ = std::fs::remove_file(&path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .unwrap();
    writeln!(file, "{SECRET}").unwrap();
    path
}

async fn seconds(n: u64) {
    tokio::time::sleep(Duration::from_secs(n)).await;
}

/// What the receiver holds, once it holds `n` distinct messages.
async fn wait_for(receiver: &Receiver, n: usize) -> Vec<String> {
    assert!(
        eventually(30, || std::future::ready(receiver.types().len() >= n)).await,
        "fewer than {n} messages: {:?}",
        receiver.types()
    );
    receiver.types()
}

#[tokio::test(start_paused = true)]
async fn each_decision_is_told_once_signed_and_a_steady_poll_never() {
    let receiver = Receiver::start().await;
    let dir = support::in_process::Dir::new("notify-once");
    let secret = secret_file(&dir.0);
    let notify = format!(
        "[notify]\nurl = \"{}\"\nformat = \"json\"\nsecret_file = \"{}\"\n",
        receiver.url("/hooks/agent"),
        secret.display()
    );
    let node = PerNode::start("notify-once-node", &notify).await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    assert_eq!(wait_for(&receiver, 1).await, ["node.fail-back"]);
    // Steady: a minute of polls, app checks and egress checks, all good.
    seconds(60).await;
    assert_eq!(receiver.types(), ["node.fail-back"], "a steady poll told");

    node.app_down();
    node.expect(20, "withdrawn", |n| !n.connector.is_running())
        .await;
    node.app_up();
    node.expect(20, "serving again", |n| n.connector.is_ready())
        .await;
    node.agent.maintenance(true);
    node.expect(20, "drained", |n| !n.connector.is_running())
        .await;
    seconds(20).await;
    node.agent.maintenance(false);
    node.expect(20, "serving after maintenance", |n| n.connector.is_ready())
        .await;
    seconds(20).await;
    let types = wait_for(&receiver, 6).await;
    assert_eq!(
        types,
        [
            "node.fail-back",
            "node.withdraw",
            "node.fail-back",
            "node.maintenance-on",
            "node.maintenance-off",
            "node.fail-back",
        ]
    );
    // Exactly one delivery each: the receiver took every one at once.
    assert_eq!(receiver.requests().len(), 6);
    let health = node.agent.health().await;
    for counter in [r#""failbacks":3"#, r#""withdrawals":1"#, r#""drains":1"#] {
        assert!(health.contains(counter), "{counter}: {health}");
    }

    for got in receiver.requests() {
        assert_eq!(
            (got.method.as_str(), got.path.as_str()),
            ("POST", "/hooks/agent")
        );
        assert_eq!(got.header("content-type"), Some("application/json"));
        let body = got.json();
        assert_eq!(body["source"], "agent", "{body}");
        assert_eq!(body["node"], "home", "{body}");
        assert_eq!(body["site"], "home", "{body}");
        assert!(!body["reason"].as_str().unwrap().is_empty(), "{body}");
        let at = body["at"].as_str().unwrap();
        assert!(
            at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T',
            "{at}"
        );
        // The signature is an HMAC-SHA256 of exactly the body.
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, SECRET.as_bytes());
        let tag = ring::hmac::sign(&key, got.body.as_bytes());
        let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            got.header("x-tunnel-failover-signature"),
            Some(format!("sha256={hex}").as_str())
        );
        let ts: u64 = got
            .header("x-tunnel-failover-timestamp")
            .unwrap()
            .parse()
            .unwrap();
        assert!(ts > 1_600_000_000, "{ts}");
    }
    let withdraw = receiver.requests()[1].json();
    assert_eq!(
        (withdraw["from"].as_str(), withdraw["to"].as_str()),
        (Some("serving"), Some("stopped"))
    );
    assert!(
        withdraw["reason"].as_str().unwrap().contains("app down"),
        "{withdraw}"
    );
}

/// One receiver fails with 500 for a minute, another never answers: the
/// agent decides on time all along, and the failing one gets every message,
/// in order, once it recovers.
#[tokio::test(start_paused = true)]
async fn a_receiver_failing_for_a_minute_gets_every_message_and_a_hung_one_blocks_nothing() {
    let failing = Receiver::start().await;
    failing.answer(500);
    let hung = Server::start(Answer::Hang).await;
    let notify = format!(
        "[[notify]]\nurl = \"http://{}/hang\"\n\n[[notify]]\nurl = \"{}\"\nformat = \"json\"\n",
        hung.addr,
        failing.url("/hook")
    );
    let node = PerNode::start("notify-retry-node", &notify).await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    node.app_down();
    node.expect(20, "withdrawn while both receivers fail", |n| {
        !n.connector.is_running()
    })
    .await;
    node.app_up();
    node.expect(20, "serving again while both receivers fail", |n| {
        n.connector.is_ready()
    })
    .await;
    seconds(60).await;
    assert!(
        failing.requests().len() > 3,
        "retried: {:?}",
        failing.requests().len()
    );
    assert!(failing.types().len() <= 3);
    failing.answer(200);
    // Retries are at most a minute apart.
    seconds(70).await;
    assert_eq!(
        wait_for(&failing, 3).await,
        ["node.fail-back", "node.withdraw", "node.fail-back"]
    );
    let (_, metrics) = request("GET", node.agent.port, "/metrics", None)
        .await
        .unwrap();
    assert!(
        metrics.contains(r#"failover_agent_notifications_total{role="node",topology="tunnel-per-node",outcome="delivered"} 3"#),
        "{metrics}"
    );
}

/// A receiver that refuses for good (404: a wrong URL) is not retried.
#[tokio::test(start_paused = true)]
async fn a_refusing_receiver_is_not_asked_again() {
    let receiver = Receiver::start().await;
    receiver.answer(404);
    let notify = format!(
        "[notify]\nurl = \"{}\"\nformat = \"slack\"\n",
        receiver.url("/x")
    );
    let node = PerNode::start("notify-refused-node", &notify).await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    seconds(120).await;
    let got = receiver.requests();
    assert_eq!(got.len(), 1, "{got:?}");
    // Slack's shape: {"text": ...}.
    assert!(
        got[0].json()["text"]
            .as_str()
            .unwrap()
            .contains("node home failed back"),
        "{:?}",
        got[0]
    );
    let (_, metrics) = request("GET", node.agent.port, "/metrics", None)
        .await
        .unwrap();
    assert!(metrics.contains(r#"outcome="failed"} 1"#), "{metrics}");
}

/// A receiver that answers with a redirect gets one try per message: the
/// redirect is never followed (it could carry the message, signature and
/// all, anywhere), so it can never become a delivery, and the message is
/// dropped at once instead of retried for a day.
#[tokio::test(start_paused = true)]
async fn a_redirecting_receiver_gets_one_try_and_is_never_followed() {
    let elsewhere = Receiver::start().await;
    let receiver = Receiver::start().await;
    receiver.answer(302);
    receiver.answer_header("location", &elsewhere.url("/stolen"));
    let notify = format!(
        "[notify]\nurl = \"{}\"\nformat = \"json\"\n",
        receiver.url("/hook")
    );
    let node = PerNode::start("notify-redirect-node", &notify).await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    assert!(eventually(30, || std::future::ready(!receiver.requests().is_empty())).await);
    // Retried, the second try would come a second later; give it minutes.
    seconds(180).await;
    assert_eq!(receiver.requests().len(), 1, "one try");
    assert!(elsewhere.requests().is_empty(), "the redirect was followed");
    let (_, metrics) = request("GET", node.agent.port, "/metrics", None)
        .await
        .unwrap();
    assert!(metrics.contains(r#"outcome="failed"} 1"#), "{metrics}");
}

/// A receiver that throttles (429 with `Retry-After: 300`) is left alone
/// for as long as it asks, not asked again after the usual second, and
/// gets the message once it takes it.
#[tokio::test(start_paused = true)]
async fn a_throttled_receiver_is_asked_again_when_it_says() {
    let receiver = Receiver::start().await;
    receiver.answer(429);
    receiver.answer_header("retry-after", "300");
    let notify = format!(
        "[notify]\nurl = \"{}\"\nformat = \"json\"\n",
        receiver.url("/hook")
    );
    let node = PerNode::start("notify-throttled-node", &notify).await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    assert!(eventually(30, || std::future::ready(!receiver.requests().is_empty())).await);
    seconds(240).await;
    assert_eq!(receiver.requests().len(), 1, "asked again before its time");
    receiver.answer(200);
    seconds(120).await;
    assert_eq!(receiver.requests().len(), 2, "not asked again when it said");
    assert_eq!(receiver.types(), ["node.fail-back"]);
}

/// The real binary, as an operator runs it:
/// the webhook URLs (one written
/// in the config, one in a url_file) and the signing secret appear in no
/// log line, no `/health`, `/metrics`, `status` or `check-config` output,
/// and no config error, whatever the receivers answer.
#[test]
fn urls_and_secrets_never_show() {
    use std::os::unix::fs::PermissionsExt;
    use support::{eventually, free_port, http, FakePeer};
    let _serial = support::serial();
    let refusing = FakePeer::start(free_port(), 404, "no".into());
    let failing = FakePeer::start(free_port(), 500, "oops".into());
    let closed = free_port();
    let dir = support::Scratch::new("notify-secrets");
    support::write_token(
        &dir.path("url"),
        &format!(
            "http://127.0.0.1:{}/SECRETFILEPATH?k=SECRETQ2",
            failing.port
        ),
    );
    support::write_token(&dir.path("key"), "SECRETKEY-0123456789");
    let notify = format!(
        r#"
[[notify]]
url = "http://127.0.0.1:{refusing}/SECRETPATH/T0?token=SECRETQ1"
format = "slack"

[[notify]]
url_file = "{url}"
secret_file = "{key}"

[[notify]]
url = "http://127.0.0.1:{closed}/SECRETCLOSED"
format = "ntfy"
"#,
        refusing = refusing.port,
        url = dir.path("url").display(),
        key = dir.path("key").display(),
    );
    let node = RealNode::new(dir, &notify);
    let path = &node.config_path;
    let secrets = [
        "SECRETPATH",
        "SECRETQ1",
        "SECRETFILEPATH",
        "SECRETQ2",
        "SECRETKEY",
        "SECRETCLOSED",
    ];
    let assert_hidden = |what: &str, text: &str| {
        for s in secrets {
            assert!(!text.contains(s), "{s} in {what}:\n{text}");
        }
    };

    // Everyone may read the config: a URL in it is refused, unnamed.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refused = node.cli(&["check-config", "--no-probe"]);
    assert!(
        refused.contains("`notify[0].url`") && refused.contains("chmod 640"),
        "{refused}"
    );
    assert_hidden("the refusal of a readable config", &refused);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let checked = node.cli(&["check-config", "--no-probe"]);
    assert!(checked.contains("notify"), "{checked}");
    assert!(checked.contains("not shown"), "{checked}");
    assert_hidden("check-config", &checked);

    let _agent = node.run();
    // Served after its start-up fail-back; each receiver asked (the
    // closed one too: its refusal is in the log).
    assert!(
        eventually(30, || {
            !refusing.heads.lock().unwrap().is_empty()
                && failing.heads.lock().unwrap().len() >= 2
                && node.log().contains("[notify] #3")
        }),
        "not every receiver was tried:\n{}",
        node.log()
    );
    let health = http("GET", node.agent_port, "/health", None).unwrap().1;
    let metrics = http("GET", node.agent_port, "/metrics", None).unwrap().1;
    let status = node.cli(&["status"]);
    let json = node.cli(&["status", "--json"]);
    let text = node.log();
    assert!(text.contains("refused (HTTP 404)"), "{text}");
    assert!(text.contains("not delivered (HTTP 500)"), "{text}");
    for (what, shown) in [
        ("the log", &text),
        ("/health", &health),
        ("/metrics", &metrics),
        ("status", &status),
        ("status --json", &json),
    ] {
        assert_hidden(what, shown);
    }

    // A bad URL (in the file or in a url_file) is named by key, not shown.
    for (from, to, key) in [
        (
            "http://127.0.0.1:{refusing}/SECRETPATH/T0?token=SECRETQ1"
                .replace("{refusing}", &refusing.port.to_string()),
            "ftp://h/SECRETPATH?token=SECRETQ1".to_string(),
            "`notify[0].url`",
        ),
        (
            format!("http://127.0.0.1:{closed}/SECRETCLOSED"),
            "http://h :1/SECRETCLOSED".to_string(),
            "`notify[2].url`",
        ),
    ] {
        std::fs::write(path, node.config.replace(&from, &to)).unwrap();
        let out = node.cli(&["check-config", "--no-probe"]);
        assert!(out.contains(key), "{key}: {out}");
        assert_hidden("a config error", &out);
    }
    std::fs::write(path, &node.config).unwrap();
    support::write_token(&node.dir.path("url"), "https://h/SECRETFILEPATH x");
    let out = node.cli(&["check-config", "--no-probe"]);
    assert!(out.contains("`notify[1].url_file`"), "{out}");
    assert_hidden("a url_file error", &out);
}

/// SIGTERM, as `systemctl stop` sends it, while messages are queued: the
/// agent gives them a short grace before it exits, and its log says how
/// many it left undelivered. Two receivers: a slow one, which answers
/// nothing until after the signal (its second message waits behind the
/// first), and a dead one that never answers.
#[test]
fn a_stop_gives_queued_messages_a_grace_and_says_what_it_left() {
    use support::eventually;
    let _serial = support::serial();
    let slow = HeldReceiver::start();
    let dead = HeldReceiver::start();
    let notify = format!(
        "\n[[notify]]\nurl = \"http://127.0.0.1:{}/slow\"\n\n[[notify]]\nurl = \"http://127.0.0.1:{}/dead\"\n",
        slow.port, dead.port
    );
    let node = RealNode::new(support::Scratch::new("notify-stop"), &notify);
    let mut agent = node.run();
    // The start-up fail-back reaches both, and both hold it; a maintenance
    // drain queues a second message behind it.
    assert!(
        eventually(30, || !slow.bodies().is_empty()
            && !dead.bodies().is_empty()),
        "the fail-back was not sent:\n{}",
        node.log()
    );
    support::write_token(&node.flag, "maintenance");
    // Told once carried out: both messages queued for both receivers.
    let queued = |n: u32| {
        let metrics = support::http("GET", node.agent_port, "/metrics", None).unwrap_or_default();
        metrics.1.lines().any(|l| {
            l.starts_with("failover_agent_notifications_queued") && l.ends_with(&format!(" {n}"))
        })
    };
    assert!(
        eventually(30, || queued(4)),
        "the drain was not queued:\n{}",
        node.log()
    );
    let pid = agent.0.id().to_string();
    let term = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(
        eventually(10, || node.log().contains("waiting up to 5 s")),
        "the stop did not wait for the queue ({:?}):\n{}",
        agent.0.try_wait(),
        node.log()
    );
    // The slow receiver answers now, inside the grace: its second message
    // follows. The dead one never does. (A try that timed out before is
    // tried again: the same id, which a receiver drops.)
    slow.release();
    assert!(
        eventually(30, || matches!(agent.0.try_wait(), Ok(Some(_)))),
        "the agent did not exit after its grace:\n{}",
        node.log()
    );
    let status = agent.0.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let mut ids = std::collections::HashSet::new();
    let types: Vec<String> = slow
        .bodies()
        .iter()
        .map(|b| serde_json::from_str::<serde_json::Value>(b).unwrap())
        .filter(|v| ids.insert(v["id"].to_string()))
        .map(|v| v["type"].to_string())
        .collect();
    assert_eq!(
        types,
        [r#""node.fail-back""#, r#""node.maintenance-on""#],
        "{}",
        node.log()
    );
    assert!(
        dead.bodies().iter().all(|b| b.contains("node.fail-back")),
        "the dead receiver's second message was tried before its first was taken"
    );
    let log = node.log();
    assert!(
        log.contains("2 notification(s) left undelivered on stopping ([notify] #2 (json): 2)"),
        "{log}"
    );
    dead.release();
}

/// A tunnel-per-node node as an operator runs it: the real binary, a fake
/// connector started and stopped by command, an egress server, and `extra`
/// (the `[notify]` tables) at the end of its config.
struct RealNode {
    config_path: std::path::PathBuf,
    /// The config as written.
    config: String,
    agent_port: u16,
    flag: std::path::PathBuf,
    _edge: support::Proc,
    /// Before `dir`, which holds its pid file (fields drop in order).
    _connector: KillOnDrop,
    dir: support::Scratch,
}

impl RealNode {
    fn new(dir: support::Scratch, extra: &str) -> RealNode {
        use std::os::unix::fs::PermissionsExt;
        use support::{free_port, FAKE};
        let (agent_port, connector_port, edge_port) = (free_port(), free_port(), free_port());
        let edge = support::egress_server(edge_port, &dir.path("edge.log"));
        support::write_token(&dir.path("token"), support::TOKEN);
        let pid = dir.path("connector.pid");
        let start = format!(
            "'{FAKE}' --listen 127.0.0.1:{connector_port} --edge 127.0.0.1:{edge_port} --id n >/dev/null 2>&1 & echo $! > '{}'",
            pid.display()
        );
        let flag = dir.path("maintenance");
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
ready_url = "http://127.0.0.1:{connector_port}/ready"
control = "command"
start_command = "{start}"
stop_command = "kill $(cat '{pid}'); rm -f '{pid}'"
status_command = "[ -f '{pid}' ] && kill -0 $(cat '{pid}')"

[egress]
url = "http://127.0.0.1:{edge_port}/cdn-cgi/trace"
{extra}"#,
            token = dir.path("token").display(),
            flag = flag.display(),
            state = dir.0.display(),
            start = start.replace('"', "\\\""),
            pid = pid.display(),
        );
        let config_path = dir.path("config.toml");
        std::fs::write(&config_path, &config).unwrap();
        // It may hold a webhook URL: readable by its owner and group only.
        std::fs::set_permissions(&config_path, std::fs::Permissions::from_mode(0o640)).unwrap();
        RealNode {
            config_path,
            config,
            agent_port,
            flag,
            _edge: edge,
            _connector: KillOnDrop(pid),
            dir,
        }
    }

    /// `failover-agent run`, its stderr in the node's log.
    fn run(&self) -> support::Proc {
        let log = std::fs::File::create(self.dir.path("agent.log")).unwrap();
        let child = std::process::Command::new(support::AGENT)
            .arg("--config")
            .arg(&self.config_path)
            .arg("run")
            .stderr(log)
            .spawn()
            .unwrap();
        support::Proc(child)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path("agent.log")).unwrap_or_default()
    }

    /// A command against the node's config: its stdout and stderr.
    fn cli(&self, words: &[&str]) -> String {
        let out = std::process::Command::new(support::AGENT)
            .arg("--config")
            .arg(&self.config_path)
            .args(words)
            .output()
            .unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

/// A receiver on a thread of its own: keeps every request's body and
/// answers none (200) until [`HeldReceiver::release`], every one at once
/// after.
struct HeldReceiver {
    port: u16,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    released: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl HeldReceiver {
    fn start() -> HeldReceiver {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        use std::sync::{Arc, Mutex};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let released = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (b, r) = (Arc::clone(&bodies), Arc::clone(&released));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (b, r) = (Arc::clone(&b), Arc::clone(&r));
                std::thread::spawn(move || {
                    let mut data = Vec::new();
                    let mut buf = [0u8; 4096];
                    let body = loop {
                        let text = String::from_utf8_lossy(&data).into_owned();
                        if let Some((head, body)) = text.split_once("\r\n\r\n") {
                            let length: usize = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length: "))
                                .and_then(|v| v.trim().parse().ok())
                                .unwrap_or(0);
                            if body.len() >= length {
                                break body.to_string();
                            }
                        }
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => data.extend_from_slice(&buf[..n]),
                        }
                    };
                    b.lock().unwrap().push(body);
                    while !r.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                });
            }
        });
        HeldReceiver {
            port,
            bodies,
            released,
        }
    }

    fn bodies(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }

    fn release(&self) {
        self.released
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Kills the process a pid file names, on drop.
struct KillOnDrop(std::path::PathBuf);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.0) {
            let _ = std::process::Command::new("kill").arg(pid.trim()).status();
        }
    }
}
