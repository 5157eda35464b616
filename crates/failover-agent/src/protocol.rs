//! What the agents say to each other over HTTP, and what an operator's curl
//! says to them: the paths, the orders they carry and the one answer a
//! caller acts on besides the status (busy). A leaf: `api` serves it,
//! `peer` speaks it, and neither imports the other.

use failover_core::node::Order;

pub(crate) const HEALTH: &str = "/health";
pub(crate) const METRICS: &str = "/metrics";
/// The local connector's own `/ready`, relayed: where the peer looks.
pub(crate) const CONNECTOR_READY: &str = "/connector/ready";

/// Where an order is sent.
pub(crate) fn order_path(order: Order) -> &'static str {
    match order {
        Order::Start => "/failover/start",
        Order::Stop => "/failover/stop",
        Order::Handover => "/failover/handover",
    }
}

/// The order a path carries, if it is an order's.
pub(crate) fn order_at(path: &str) -> Option<Order> {
    Order::ALL.into_iter().find(|o| order_path(*o) == path)
}

/// Whether the API serves `path` at all (for 405 against 404).
pub(crate) fn is_known_path(path: &str) -> bool {
    [HEALTH, METRICS, CONNECTOR_READY].contains(&path) || order_at(path).is_some()
}

/// The `code` of the answer to an order that arrives while the agent
/// carries out a decision of its own: ask again, or decide again at the
/// next poll. Callers branch on this field, never on the text.
const BUSY_CODE: &str = "busy";

/// The text beside it, for a person. Unchanged from the versions that
/// matched on it, so an agent of that kind still recognises a newer peer's
/// busy answer during the upgrade of a pair.
const BUSY_TEXT: &str = "busy: carrying out a decision; ask again";

/// The body of a busy answer (HTTP 409).
pub(crate) fn busy_body() -> serde_json::Value {
    serde_json::json!({"error": BUSY_TEXT, "code": BUSY_CODE})
}

/// Whether an answer to an order is the busy answer.
pub(crate) fn is_busy(status: u16, body: &[u8]) -> bool {
    status == 409
        && serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("code")?.as_str().map(|c| c == BUSY_CODE))
            .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_order_has_its_own_path_and_is_found_by_it() {
        for order in Order::ALL {
            assert_eq!(order_at(order_path(order)), Some(order));
            assert!(is_known_path(order_path(order)));
        }
        assert_eq!(order_at("/failover/"), None);
        assert!(!is_known_path("/failover"));
    }

    #[test]
    fn busy_is_a_field_not_a_phrase() {
        let busy = busy_body().to_string();
        assert!(is_busy(409, busy.as_bytes()));
        assert!(!is_busy(500, busy.as_bytes()));
        // A refusal that quotes the phrase is not busy.
        let quoted = serde_json::json!({"error": BUSY_TEXT}).to_string();
        assert!(!is_busy(409, quoted.as_bytes()));
        assert!(!is_busy(409, b"busy"));
        assert!(!is_busy(409, br#"{"code":4}"#));
    }
}
