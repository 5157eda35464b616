//! `failover-agent status`: the agent's `/health` answer as lines a person
//! reads at a glance. Fields missing from the answer (an older agent) are
//! left out, never a crash.

use serde_json::Value;

pub fn render(health: &Value, target: &str) -> String {
    let text = |key: &str| health.get(key).and_then(Value::as_str);
    let count = |key: &str| health.get(key).and_then(Value::as_u64).unwrap_or(0);
    let mut lines = Vec::new();
    lines.push(format!(
        "failover-agent {} ({}) at {target}: {}, role {}",
        text("version").unwrap_or("?"),
        text("revision").unwrap_or("?"),
        text("topology").unwrap_or("shared-tunnel"),
        text("role").unwrap_or("?"),
    ));
    let ready = match health.get("connector_ready").and_then(Value::as_bool) {
        Some(true) => " (ready: holds edge connections)",
        Some(false) => " (NOT ready: no edge connection)",
        None => "",
    };
    lines.push(format!(
        "connector    {}{ready}",
        text("connector").unwrap_or("unknown")
    ));
    if let Some(app) = text("app") {
        let last = text("app_last_check").unwrap_or("no check yet");
        lines.push(format!("app          {app} (last check: {last})"));
    }
    let maintenance = health.get("maintenance").and_then(Value::as_bool) == Some(true);
    lines.push(format!(
        "maintenance  {}",
        if maintenance {
            "ON: this node never starts its connector"
        } else {
            "off"
        }
    ));
    lines.push(format!(
        "last         {}: {}",
        text("decision").unwrap_or("?"),
        text("why").unwrap_or("")
    ));
    lines.push(format!(
        "decisions    take-overs {}, stand-downs {}, fail-backs {}, drains {}, withdrawals {}",
        count("takeovers"),
        count("standdowns"),
        count("failbacks"),
        count("drains"),
        count("withdrawals"),
    ));
    match text("role") {
        Some("standby") => lines.push(format!(
            "peer         {} miss(es) in a row, {} in all",
            count("peer_misses_in_a_row"),
            count("peer_misses_total")
        )),
        _ => lines.push(format!(
            "egress       {}/{} good check(s) in a row to fail back",
            count("egress_good_in_a_row"),
            count("failback_required")
        )),
    }
    let uptime = health.get("uptime_seconds").and_then(Value::as_f64);
    lines.push(format!(
        "uptime       {}",
        duration(uptime.unwrap_or(0.0).max(0.0) as u64)
    ));
    lines.extend(history(health));
    lines.join("\n")
}

/// The last decisions, newest first: time (RFC 3339, UTC), what, why. One
/// line each, however long the reason: `status` is read at a glance.
fn history(health: &Value) -> Vec<String> {
    let rows = health
        .get("history")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if rows.is_empty() {
        return vec!["recent       no decision yet".to_string()];
    }
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            let text = |key: &str| row.get(key).and_then(Value::as_str).unwrap_or("?");
            let reason: String = text("reason")
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            format!(
                "{}{}  {:<20}  {reason}",
                if i == 0 {
                    "recent       "
                } else {
                    "             "
                },
                text("at"),
                text("type"),
            )
        })
        .collect()
}

fn duration(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds / 3_600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_per_node_agent_with_an_app() {
        let health = serde_json::json!({
            "version": "0.1.0", "revision": "abc", "topology": "tunnel-per-node",
            "role": "node", "connector": "running", "connector_ready": true,
            "app": "down", "app_last_check": "http://127.0.0.1/health answered HTTP 500",
            "maintenance": false, "decision": "withdraw", "why": "app down",
            "withdrawals": 1, "egress_good_in_a_row": 2, "failback_required": 2,
            "uptime_seconds": 3_725.0,
            "history": [
                {"at": "2026-12-01T19:31:04Z", "type": "node.withdraw", "reason": "app down: 2 failed\ncheck(s)"},
                {"at": "2026-12-01T19:00:00Z", "type": "node.fail-back", "reason": "egress good"}
            ]
        });
        let text = render(&health, "127.0.0.1:8790");
        for line in [
            "failover-agent 0.1.0 (abc) at 127.0.0.1:8790: tunnel-per-node, role node",
            "connector    running (ready: holds edge connections)",
            "app          down (last check: http://127.0.0.1/health answered HTTP 500)",
            "last         withdraw: app down",
            "withdrawals 1",
            "egress       2/2",
            "uptime       1h 2m",
            "recent       2026-12-01T19:31:04Z  node.withdraw         app down: 2 failed check(s)",
            "             2026-12-01T19:00:00Z  node.fail-back        egress good",
        ] {
            assert!(text.contains(line), "{line:?} missing in\n{text}");
        }
    }

    #[test]
    fn an_answer_without_the_fields_still_renders() {
        let text = render(&serde_json::json!({"role": "standby"}), "x");
        assert!(text.contains("peer         0 miss(es)"), "{text}");
        assert!(text.contains("recent       no decision yet"), "{text}");
        assert!(!text.contains("app "), "{text}");
    }
}
