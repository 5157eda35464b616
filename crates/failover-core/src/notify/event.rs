//! One thing that happened, as every receiver gets it. The field names and
//! the `type` values are the contract (README "Get told when it fails over").

use serde_json::{json, Map, Value};

use super::rfc3339;

/// What happened. `as_str` is the `type` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// An origin's global verdict went to down.
    OriginDown,
    /// An origin's global verdict went back to up.
    OriginUp,
    /// None of the origins serves any more.
    AllDown,
    /// One origin serves again after all were down.
    AllUp,
    /// An operator changed an origin's override (drain, disable, ...).
    Override,
    /// Agent, standby: the peer's connector went quiet; this node serves.
    TakeOver,
    /// Agent, standby: the peer serves again; this node stopped.
    StandDown,
    /// Agent: this node serves again after proven egress.
    FailBack,
    /// Agent: this node stopped serving because it cannot (app down,
    /// uplink lost).
    Withdraw,
    /// Agent: the maintenance flag was set / this node drained for it.
    MaintenanceOn,
    /// Agent: the maintenance flag was cleared.
    MaintenanceOff,
    /// Agent: a planned handover to the peer.
    Handover,
}

impl Kind {
    /// Every kind, for tests and documentation.
    pub const ALL: [Kind; 12] = [
        Kind::OriginDown,
        Kind::OriginUp,
        Kind::AllDown,
        Kind::AllUp,
        Kind::Override,
        Kind::TakeOver,
        Kind::StandDown,
        Kind::FailBack,
        Kind::Withdraw,
        Kind::MaintenanceOn,
        Kind::MaintenanceOff,
        Kind::Handover,
    ];

    /// The `type` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::OriginDown => "origin.down",
            Kind::OriginUp => "origin.up",
            Kind::AllDown => "all.down",
            Kind::AllUp => "all.up",
            Kind::Override => "origin.override",
            Kind::TakeOver => "node.take-over",
            Kind::StandDown => "node.stand-down",
            Kind::FailBack => "node.fail-back",
            Kind::Withdraw => "node.withdraw",
            Kind::MaintenanceOn => "node.maintenance-on",
            Kind::MaintenanceOff => "node.maintenance-off",
            Kind::Handover => "node.handover",
        }
    }

    /// The kind a `type` names, for events read back from storage.
    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// Bad news (a person may need to act) or good news (it healed).
    pub fn is_bad(self) -> bool {
        matches!(
            self,
            Kind::OriginDown | Kind::AllDown | Kind::TakeOver | Kind::Withdraw
        )
    }

    /// The sentence's verb phrase, after the subject.
    fn phrase(self) -> &'static str {
        match self {
            Kind::OriginDown => "is down",
            Kind::OriginUp => "is up again",
            Kind::AllDown => "no origin is serving",
            Kind::AllUp => "an origin is serving again",
            Kind::Override => "override changed",
            Kind::TakeOver => "took over: this node serves now",
            Kind::StandDown => "stood down: the peer serves again",
            Kind::FailBack => "failed back: this node serves again",
            Kind::Withdraw => "withdrew: this node stopped serving",
            Kind::MaintenanceOn => "is in maintenance",
            Kind::MaintenanceOff => "left maintenance",
            Kind::Handover => "handed over to its peer",
        }
    }
}

/// Who emitted the event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The Worker's global checker (one writer for the whole site).
    Edge,
    /// A node agent, about its own decisions.
    Agent,
}

impl Source {
    /// The `source` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Edge => "edge",
            Source::Agent => "agent",
        }
    }
}

/// One event. `id` is unique per event and the same on every retry of it,
/// so a receiver can drop duplicates (delivery is at least once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Unique per event, stable across retries.
    pub id: String,
    /// What happened.
    pub kind: Kind,
    /// The origin it is about (`None` for `all.*`; the agent's own origin
    /// name, when it knows it).
    pub origin: Option<String>,
    /// When it happened, ms since the Unix epoch.
    pub at_ms: u64,
    /// The evidence, in words: "connection refused", "status 502 from probe".
    pub reason: String,
    /// The public hostname (Worker) or the node's name (agent).
    pub site: String,
    /// Who emitted it.
    pub source: Source,
    /// The agent's node name; `None` from the edge.
    pub node: Option<String>,
    /// The state before and after, where there is one ("up" → "down").
    pub from: Option<String>,
    /// See `from`.
    pub to: Option<String>,
    /// Changes to the same subject held back by the flap guard since the
    /// last message, summarised in this one ("and 4 more changes").
    pub more: u32,
}

impl Event {
    /// The subject the flap guard limits: the origin, or the node, or the
    /// whole site for `all.*`.
    pub fn subject(&self) -> &str {
        self.origin
            .as_deref()
            .or(self.node.as_deref())
            .unwrap_or("*")
    }

    /// One line a person reads: "www.example.com: origin primary is down
    /// (connection refused), and 4 more changes".
    pub fn sentence(&self) -> String {
        let who = match (self.kind, &self.origin, &self.node) {
            (Kind::AllDown | Kind::AllUp, _, _) => String::new(),
            (Kind::OriginDown | Kind::OriginUp | Kind::Override, Some(o), _) => {
                format!("origin {o} ")
            }
            (_, _, Some(node)) => format!("node {node} "),
            (_, Some(o), None) => format!("{o} "),
            (_, None, None) => String::new(),
        };
        let mut line = format!("{}: {who}{}", self.site, self.kind.phrase());
        if !self.reason.is_empty() {
            line.push_str(&format!(" ({})", self.reason));
        }
        match self.more {
            0 => {}
            1 => line.push_str(", and 1 more change"),
            n => line.push_str(&format!(", and {n} more changes")),
        }
        line
    }

    /// The generic JSON body (and the stored form in the history).
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("id".into(), json!(self.id));
        map.insert("type".into(), json!(self.kind.as_str()));
        map.insert("origin".into(), json!(self.origin));
        map.insert("at".into(), json!(rfc3339::format(self.at_ms)));
        map.insert("at_ms".into(), json!(self.at_ms));
        map.insert("reason".into(), json!(self.reason));
        map.insert("site".into(), json!(self.site));
        map.insert("source".into(), json!(self.source.as_str()));
        if let Some(node) = &self.node {
            map.insert("node".into(), json!(node));
        }
        if let Some(from) = &self.from {
            map.insert("from".into(), json!(from));
        }
        if let Some(to) = &self.to {
            map.insert("to".into(), json!(to));
        }
        map.insert("more".into(), json!(self.more));
        map.insert("message".into(), json!(self.sentence()));
        Value::Object(map)
    }

    /// Reads back what [`Event::to_json`] wrote (the history in storage, a
    /// queued delivery). `None` for anything else: a stored row that does
    /// not parse is skipped, never a panic.
    pub fn from_json(value: &Value) -> Option<Event> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(Event {
            id: text("id")?,
            kind: Kind::parse(value.get("type")?.as_str()?)?,
            origin: text("origin"),
            at_ms: value.get("at_ms")?.as_u64()?,
            reason: text("reason").unwrap_or_default(),
            site: text("site").unwrap_or_default(),
            source: match value.get("source")?.as_str()? {
                "agent" => Source::Agent,
                _ => Source::Edge,
            },
            node: text("node"),
            from: text("from"),
            to: text("to"),
            more: value
                .get("more")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn down(id: &str, origin: &str, at_ms: u64) -> Event {
        Event {
            id: id.into(),
            kind: Kind::OriginDown,
            origin: Some(origin.into()),
            at_ms,
            reason: "connection refused".into(),
            site: "www.example.com".into(),
            source: Source::Edge,
            node: None,
            from: Some("up".into()),
            to: Some("down".into()),
            more: 0,
        }
    }

    #[test]
    fn the_json_carries_the_contract_fields() {
        let v = down("e-1", "primary", 1_796_153_464_000).to_json();
        for key in ["id", "type", "origin", "at", "reason", "site", "source"] {
            assert!(v.get(key).is_some(), "{key} in {v}");
        }
        assert_eq!(v["type"], "origin.down");
        assert_eq!(v["at"], "2026-12-01T19:31:04Z");
        assert_eq!(v["source"], "edge");
    }

    #[test]
    fn json_round_trips_and_junk_is_refused() {
        let mut e = down("e-1", "primary", 5);
        e.more = 3;
        assert_eq!(Event::from_json(&e.to_json()), Some(e));
        for junk in [
            json!(null),
            json!({"id": "x"}),
            json!({"id": "x", "type": "origin.exploded", "at_ms": 1, "source": "edge"}),
            json!({"id": 7, "type": "origin.down", "at_ms": 1, "source": "edge"}),
        ] {
            assert_eq!(Event::from_json(&junk), None, "{junk}");
        }
    }

    #[test]
    fn sentences_read_as_english() {
        let mut e = down("e-1", "primary", 0);
        assert_eq!(
            e.sentence(),
            "www.example.com: origin primary is down (connection refused)"
        );
        e.more = 4;
        assert!(e.sentence().ends_with(", and 4 more changes"));
        e.more = 1;
        assert!(e.sentence().ends_with(", and 1 more change"));
        let all = Event {
            kind: Kind::AllDown,
            origin: None,
            ..down("e-2", "x", 0)
        };
        assert_eq!(
            all.sentence(),
            "www.example.com: no origin is serving (connection refused)"
        );
        let agent = Event {
            kind: Kind::TakeOver,
            origin: None,
            node: Some("vps".into()),
            source: Source::Agent,
            reason: "peer missed 3 checks".into(),
            ..down("a-1", "x", 0)
        };
        assert_eq!(
            agent.sentence(),
            "www.example.com: node vps took over: this node serves now (peer missed 3 checks)"
        );
    }

    #[test]
    fn every_kind_has_a_distinct_type_that_parses_back() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.as_str()), Some(kind));
        }
        let mut types: Vec<_> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        types.sort_unstable();
        types.dedup();
        assert_eq!(types.len(), Kind::ALL.len());
    }
}
