//! `connector.control = "docker"` against a real Docker daemon: the agent
//! as a process, cloudflared played by the fake connector in a `FROM
//! scratch` container on the host's network. `make test-docker`
//! (tests/docker/run.sh) starts a private dockerd, builds the image and
//! sets the variables below; without them these tests say so and pass, so
//! that `cargo test` needs no daemon.
//!
//! - `FAILOVER_TEST_DOCKER_HOST`: the private daemon, `unix:///...`.
//! - `FAILOVER_TEST_CONNECTOR_IMAGE`: the fake connector's image.
//! - `FAILOVER_TEST_DOCKERD_RESTART`: a command that restarts that daemon.

// Test helpers: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::process::{Command, Output, Stdio};

use support::docker_node::{said, Node};
use support::{free_port, ready};

struct Daemon {
    host: String,
    image: String,
    restart: String,
}

fn daemon() -> Option<Daemon> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (
        var("FAILOVER_TEST_DOCKER_HOST"),
        var("FAILOVER_TEST_CONNECTOR_IMAGE"),
        var("FAILOVER_TEST_DOCKERD_RESTART"),
    ) {
        (Some(host), Some(image), Some(restart)) => Some(Daemon {
            host,
            image,
            restart,
        }),
        _ => {
            eprintln!("skipped: no Docker daemon given (make test-docker runs these)");
            None
        }
    }
}

impl Daemon {
    fn docker(&self, args: &[&str]) -> Output {
        Command::new("docker")
            .env("DOCKER_HOST", &self.host)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("the docker CLI runs")
    }

    /// `docker create` of the fake connector as `name`, serving `/ready` on
    /// `port` while `edge` answers. `init`: under docker-init, which passes
    /// SIGTERM on; without it the fake connector is PID 1 and ignores
    /// SIGTERM, so a stop lasts its whole grace (a slow cloudflared drain).
    fn create(&self, name: &str, port: u16, edge: u16, restart: &str, init: bool) {
        let _ = self.docker(&["rm", "-f", name]);
        let (listen, edge) = (format!("127.0.0.1:{port}"), format!("127.0.0.1:{edge}"));
        let mut args = vec!["create", "--name", name, "--network", "host"];
        args.extend(["--restart", restart, "--stop-timeout", "1"]);
        if init {
            args.push("--init");
        }
        args.extend([self.image.as_str(), "--listen", &listen, "--edge", &edge]);
        let out = self.docker(&args);
        assert!(out.status.success(), "docker create: {}", said(&out));
    }

    fn status(&self, name: &str) -> String {
        let out = self.docker(&["inspect", "-f", "{{.State.Status}}", name]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn restart_daemon(&self) {
        let out = Command::new("bash")
            .args(["-c", &self.restart])
            .output()
            .expect("the restart command runs");
        assert!(out.status.success(), "dockerd restart: {}", said(&out));
    }
}

/// The whole life of a containerised connector under the agent, in one
/// run (each agent start costs seconds): started when the node can serve,
/// stopped when its app dies and started when it returns, stopped by the
/// maintenance flag, followed across a compose-style recreate, and a
/// dockerd restart in the middle of a stop settled by looking again.
#[test]
fn the_agent_gates_a_container_through_a_real_daemon() {
    let Some(d) = daemon() else { return };
    let _serial = support::serial();
    let mut node = Node::new("docker-life");
    let name = node.container.clone();
    d.create(&name, node.connector_port, node.edge_port, "no", true);
    let config = node.write_config(&d.host, &name);
    let check = node.check_config(&config);
    assert!(check.status.success(), "{}", said(&check));
    assert!(
        said(&check).contains(&format!("connector.container {name:?} at {}", d.host))
            && said(&check).contains("created, restart policy \"no\"")
            && !said(&check).contains("warning"),
        "{}",
        said(&check)
    );
    let _agent = node.start_agent(&config);

    node.expect(
        30,
        "the agent starts the container once the node can serve",
        || d.status(&name) == "running" && ready(node.connector_port),
    );
    assert!(node
        .log()
        .contains(&format!("docker container {name} at {}", d.host)));

    node.app_down();
    node.expect(20, "the app died: the container is stopped", || {
        d.status(&name) == "exited"
    });
    node.app_up();
    node.expect(
        30,
        "the app is back: the container is started again",
        || d.status(&name) == "running" && ready(node.connector_port),
    );

    std::fs::write(node.flag(), b"test\n").expect("flag");
    node.expect(20, "the maintenance flag stops the container", || {
        d.status(&name) == "exited"
    });
    std::fs::remove_file(node.flag()).expect("flag removed");
    node.expect(30, "the flag removed: started again", || {
        d.status(&name) == "running"
    });

    // compose up after an edit: the container is removed and created anew
    // under its name (not started: the agent decides), with no init, so
    // that the next stop lasts its whole grace.
    d.create(&name, node.connector_port, node.edge_port, "no", false);
    node.expect(
        30,
        "the recreated container is followed and started",
        || d.status(&name) == "running" && node.log().contains("was recreated"),
    );

    // The daemon restarts in the middle of a stop (`systemctl restart
    // docker`): it stops its containers and answers the stop first, then
    // is gone for seconds: the agent cannot tell, says so naming the key,
    // decides nothing, and carries on once it answers again.
    let drains = |log: String| log.matches("decision drain").count();
    let before = drains(node.log());
    std::fs::write(node.flag(), b"test\n").expect("flag");
    node.expect(10, "the stop is under way", || drains(node.log()) > before);
    // Inside the stop's 5 s grace (the container ignores SIGTERM).
    std::thread::sleep(std::time::Duration::from_millis(1000));
    assert_eq!(d.status(&name), "running", "{}", node.log());
    d.restart_daemon();
    node.expect(
        30,
        "the stop settled by a look after the daemon came back",
        || d.status(&name) == "exited",
    );
    let log = node.log();
    assert!(
        log.contains("cannot tell whether the local connector runs: connector.docker_host"),
        "{log}"
    );
    assert!(!log.contains("panicked"), "{log}");
    std::fs::remove_file(node.flag()).expect("flag removed");
    node.expect(30, "after the daemon's restart, started again", || {
        d.status(&name) == "running" && ready(node.connector_port)
    });
    let _ = d.docker(&["rm", "-f", &name]);
}

/// check-config and the running agent on a socket they may not use, a
/// container that is not there and a restart policy that fights the
/// agent: a warning naming the key each time, never a panic or a
/// decision.
#[test]
fn a_socket_or_container_the_agent_cannot_use_is_named() {
    let Some(d) = daemon() else { return };
    let _serial = support::serial();
    let node = Node::new("docker-refused");
    let not_a_socket = node.dir.path("not-a-socket");
    std::fs::write(&not_a_socket, b"").expect("file");
    let cases = [
        (
            format!("unix://{}", node.dir.path("missing.sock").display()),
            "cf".to_string(),
            "no such socket",
        ),
        (
            format!("unix://{}", not_a_socket.display()),
            "cf".to_string(),
            "is not a socket",
        ),
        (
            d.host.clone(),
            "no-such-container".to_string(),
            "no container named",
        ),
    ];
    for (host, container, phrase) in &cases {
        let config = node.write_config(host, container);
        let out = node.check_config(&config);
        let text = said(&out);
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains("# warning: connector.") && text.contains(phrase),
            "{host}: {text}"
        );
    }

    // The agent itself, on a path that is not a socket: it runs, says why
    // once a look, and starts nothing.
    let config = node.write_config(&format!("unix://{}", not_a_socket.display()), "cf");
    let _agent = node.start_agent(&config);
    node.expect(15, "the agent names the key and the cause", || {
        node.log()
            .contains("cannot tell whether the local connector runs: connector.docker_host")
            && node.log().contains("is not a socket")
    });
    assert!(node.log().contains("local connector failed") || !node.log().contains("started ("));
    assert!(!node.log().contains("panicked"), "{}", node.log());

    // A restart policy the daemon would use to start cloudflared behind
    // the agent's back.
    let name = format!("failover-test-policy-{}", std::process::id());
    d.create(&name, free_port(), node.edge_port, "unless-stopped", true);
    let out = node.check_config(&node.write_config(&d.host, &name));
    let text = said(&out);
    assert!(
        text.contains("# warning: connector.container")
            && text.contains("\"unless-stopped\"")
            && text.contains("restart: \"no\""),
        "{text}"
    );
    let _ = d.docker(&["rm", "-f", &name]);
}
