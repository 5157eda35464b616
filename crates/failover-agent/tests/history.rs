//! The agent's last decisions in `/health` and `status`, with their times
//! (RFC 3339) and reasons, kept across a restart in `state_dir`. The agent
//! in this process on paused time (`support::in_process`).

// Test code: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use failover_agent::render_status;
use support::in_process::PerNode;

fn history(health: &str) -> Vec<serde_json::Value> {
    let value: serde_json::Value = serde_json::from_str(health).unwrap();
    value["history"].as_array().cloned().unwrap_or_default()
}

fn types(rows: &[serde_json::Value]) -> Vec<&str> {
    rows.iter().map(|r| r["type"].as_str().unwrap()).collect()
}

#[tokio::test(start_paused = true)]
async fn the_last_decisions_are_shown_newest_first_and_outlive_a_restart() {
    // No [notify]: the history is kept all the same.
    let node = PerNode::start("history-node", "").await;
    node.expect(20, "serving after start-up", |n| n.connector.is_ready())
        .await;
    node.app_down();
    node.expect(20, "withdrawn", |n| !n.connector.is_running())
        .await;
    node.app_up();
    node.expect(20, "serving again", |n| n.connector.is_ready())
        .await;

    let rows = history(&node.agent.health().await);
    assert_eq!(
        types(&rows),
        ["node.fail-back", "node.withdraw", "node.fail-back"]
    );
    let withdraw = &rows[1];
    assert!(
        withdraw["reason"]
            .as_str()
            .unwrap()
            .starts_with("app down: 2 failed check(s)"),
        "{withdraw}"
    );
    for row in &rows {
        let at = row["at"].as_str().unwrap();
        assert!(
            at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T',
            "{at}"
        );
    }
    let text = render_status(
        &serde_json::from_str(&node.agent.health().await).unwrap(),
        "here",
    );
    assert!(text.contains("recent       20"), "{text}");
    assert!(text.contains("node.withdraw"), "{text}");

    // A restarted agent (its connector left serving) shows the same.
    let node = node.restart("").await;
    assert!(
        support::in_process::eventually(10, || async { !node.agent.health().await.is_empty() })
            .await
    );
    let again = history(&node.agent.health().await);
    assert_eq!(again, rows, "the history changed across a restart");
    assert!(node.dir.path("history.json").is_file());
}
