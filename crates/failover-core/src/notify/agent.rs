//! The node agent's decisions as events: which carried-out decision a
//! person hears about, under which `type`, and the [`Event`] that says so.
//! One message per decision carried out; a hold is news only when the
//! maintenance flag changed with it (an operator's act on a node that had
//! nothing to stop, or the flag going away), never a poll that decided
//! nothing.

use crate::node::{Decision, Topology};

use super::event::{Event, Kind, Source};

/// The connector's state before and after a decision, as the event's
/// `from` and `to`.
const STARTED: (&str, &str) = ("stopped", "serving");
const STOPPED: (&str, &str) = ("serving", "stopped");

/// One thing to tell about a carried-out decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notice {
    /// The event's `type`.
    pub kind: Kind,
    /// What the decision did to the connector (`from`, `to`); `None` for a
    /// flag change that moved nothing.
    pub connector: Option<(&'static str, &'static str)>,
}

/// What one outcome is worth telling. `flag_changed_to` is the maintenance
/// flag's new value when this observation changed it (the agent reads the
/// flag before and after), `None` otherwise.
///
/// - A decision is one notice of its own kind. A drain is the maintenance
///   taking effect: `node.maintenance-on` with a tunnel per node, and in a
///   shared tunnel the planned `node.handover` to the peer (make before
///   break) that it is there.
/// - A hold is a notice only when the flag changed: set on a node with
///   nothing to stop (`node.maintenance-on`), or cleared
///   (`node.maintenance-off`, before whatever the same look decided).
pub fn notices(
    decision: Decision,
    topology: Topology,
    flag_changed_to: Option<bool>,
) -> Vec<Notice> {
    let mut out = Vec::new();
    if flag_changed_to == Some(false) {
        out.push(Notice {
            kind: Kind::MaintenanceOff,
            connector: None,
        });
    }
    let of_decision = match decision {
        Decision::Hold if flag_changed_to == Some(true) => Some((Kind::MaintenanceOn, None)),
        Decision::Hold => None,
        Decision::TakeOver => Some((Kind::TakeOver, Some(STARTED))),
        Decision::FailBack => Some((Kind::FailBack, Some(STARTED))),
        Decision::StandDown => Some((Kind::StandDown, Some(STOPPED))),
        Decision::Withdraw => Some((Kind::Withdraw, Some(STOPPED))),
        Decision::Drain if topology == Topology::SharedTunnel => {
            Some((Kind::Handover, Some(STOPPED)))
        }
        Decision::Drain => Some((Kind::MaintenanceOn, Some(STOPPED))),
    };
    if let Some((kind, connector)) = of_decision {
        out.push(Notice { kind, connector });
    }
    out
}

/// Who the agent is, for every event it emits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Teller {
    /// The node's name (`name` in the agent's config; its host name by
    /// default).
    pub node: String,
    /// This node's origin at the Worker (`[worker] origin`), when known.
    pub origin: Option<String>,
    /// The public hostname when the agent knows the Worker's URL, else the
    /// node's name.
    pub site: String,
}

impl Teller {
    /// The event for `notice`: `id` unique per event (the agent makes it),
    /// `at_ms` the wall clock, `reason` the evidence in words.
    pub fn event(&self, notice: &Notice, id: String, at_ms: u64, reason: String) -> Event {
        Event {
            id,
            kind: notice.kind,
            origin: self.origin.clone(),
            at_ms,
            reason,
            site: self.site.clone(),
            source: Source::Agent,
            node: Some(self.node.clone()),
            from: notice.connector.map(|(from, _)| from.to_owned()),
            to: notice.connector.map(|(_, to)| to.to_owned()),
            more: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(decision: Decision, topology: Topology, flag: Option<bool>) -> Vec<&'static str> {
        notices(decision, topology, flag)
            .iter()
            .map(|n| n.kind.as_str())
            .collect()
    }

    #[test]
    fn each_decision_is_one_notice_and_a_plain_hold_none() {
        use Decision::*;
        use Topology::*;
        let rows: &[(Decision, Topology, Option<bool>, &[&str])] = &[
            (Hold, TunnelPerNode, None, &[]),
            (Hold, SharedTunnel, None, &[]),
            (TakeOver, SharedTunnel, None, &["node.take-over"]),
            (StandDown, SharedTunnel, None, &["node.stand-down"]),
            (FailBack, TunnelPerNode, None, &["node.fail-back"]),
            (FailBack, SharedTunnel, None, &["node.fail-back"]),
            (Withdraw, TunnelPerNode, None, &["node.withdraw"]),
            (Withdraw, SharedTunnel, None, &["node.withdraw"]),
            // The flag set on a serving node: the drain is the news, once.
            (Drain, TunnelPerNode, Some(true), &["node.maintenance-on"]),
            (Drain, SharedTunnel, Some(true), &["node.handover"]),
            // Found running again under the flag later: drained again.
            (Drain, TunnelPerNode, None, &["node.maintenance-on"]),
            // The flag set on a node with nothing to stop.
            (Hold, TunnelPerNode, Some(true), &["node.maintenance-on"]),
            (Hold, SharedTunnel, Some(true), &["node.maintenance-on"]),
            (Hold, TunnelPerNode, Some(false), &["node.maintenance-off"]),
            // Cleared, and the same look decided something: both, in order.
            (
                Withdraw,
                TunnelPerNode,
                Some(false),
                &["node.maintenance-off", "node.withdraw"],
            ),
        ];
        for (decision, topology, flag, want) in rows {
            assert_eq!(
                kinds(*decision, *topology, *flag),
                *want,
                "{decision:?} {topology:?} {flag:?}"
            );
        }
    }

    #[test]
    fn the_event_is_the_agents_and_says_what_moved() {
        let teller = Teller {
            node: "home".into(),
            origin: Some("primary".into()),
            site: "www.example.com".into(),
        };
        let notice = notices(Decision::Withdraw, Topology::TunnelPerNode, None)[0];
        let e = teller.event(&notice, "a-1".into(), 1_000, "app down".into());
        let json = e.to_json();
        assert_eq!(json["type"], "node.withdraw");
        assert_eq!(json["source"], "agent");
        assert_eq!(json["node"], "home");
        assert_eq!(json["origin"], "primary");
        assert_eq!(
            (json["from"].as_str(), json["to"].as_str()),
            (Some("serving"), Some("stopped"))
        );
        assert_eq!(
            e.sentence(),
            "www.example.com: node home withdrew: this node stopped serving (app down)"
        );
        let off = notices(Decision::Hold, Topology::TunnelPerNode, Some(false))[0];
        let e = teller.event(&off, "a-2".into(), 2_000, "flag removed".into());
        assert!(e.from.is_none() && e.to.is_none());
        assert_eq!(Event::from_json(&e.to_json()), Some(e));
    }
}
