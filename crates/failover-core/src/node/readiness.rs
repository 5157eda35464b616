//! What one look at the peer's connector found. Readiness, not process state:
//! a running connector can hold no edge connection and serve nothing.

/// The answer of one readiness URL (cloudflared's `/ready`, directly or
/// relayed by the peer agent's `/connector/ready`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// 200 with `readyConnections` ≥ 1.
    Ready {
        /// `readyConnections`: the edge connections the connector holds.
        connections: u32,
    },
    /// The connector answered but holds no edge connection (503, or 200 with
    /// zero connections).
    NotReady {
        /// The HTTP status: cloudflared's 503, a 200 with zero connections,
        /// or any other non-200 (the agent counts every one as not ready).
        status: u16,
    },
    /// Nothing answered in time: refused, reset, timed out.
    Unreachable {
        /// The client's error, for logs and evidence; never branched on.
        detail: String,
    },
    /// Something answered, but not like a connector does.
    Malformed {
        /// What was wrong with the answer, for logs and evidence; never
        /// branched on.
        detail: String,
    },
}

impl Readiness {
    /// Whether the connector holds an edge connection: the one answer that
    /// counts as serving.
    pub fn is_ready(&self) -> bool {
        matches!(self, Readiness::Ready { .. })
    }

    /// One phrase with the count, the status or the detail, for logs and
    /// evidence.
    pub fn describe(&self) -> String {
        match self {
            Readiness::Ready { connections } => {
                format!("ready with {connections} edge connection(s)")
            }
            Readiness::NotReady { status } => format!("not ready (HTTP {status})"),
            Readiness::Unreachable { detail } => format!("unreachable ({detail})"),
            Readiness::Malformed { detail } => format!("malformed answer ({detail})"),
        }
    }
}

/// One poll of the peer's connector. `via_agent` goes through the peer
/// agent's relay; `direct` is the connector's own `/ready` when the config
/// exposes it. The peer serves if either path sees it ready, so a dead peer
/// AGENT in front of a serving peer CONNECTOR is not a miss when `direct` is
/// configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerView {
    /// Through the peer agent's `/connector/ready`; always asked.
    pub via_agent: Readiness,
    /// The peer connector's own `/ready`, asked only when
    /// `peer.connector_ready_url` is configured.
    pub direct: Option<Readiness>,
}

impl PeerView {
    /// A look through the relay alone (no `peer.connector_ready_url`).
    pub fn relayed(via_agent: Readiness) -> Self {
        PeerView {
            via_agent,
            direct: None,
        }
    }

    /// Whether the peer serves: either path saw it ready.
    pub fn is_ready(&self) -> bool {
        self.via_agent.is_ready() || self.direct.as_ref().is_some_and(Readiness::is_ready)
    }

    /// Both paths' answers in one line, for logs and evidence.
    pub fn describe(&self) -> String {
        match &self.direct {
            None => format!("via agent: {}", self.via_agent.describe()),
            Some(direct) => format!(
                "via agent: {}; direct: {}",
                self.via_agent.describe(),
                direct.describe()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down() -> Readiness {
        Readiness::Unreachable {
            detail: "connection refused".into(),
        }
    }

    #[test]
    fn either_path_ready_means_the_peer_serves() {
        let table = [
            (PeerView::relayed(Readiness::Ready { connections: 4 }), true),
            (PeerView::relayed(down()), false),
            (
                PeerView::relayed(Readiness::NotReady { status: 503 }),
                false,
            ),
            (
                PeerView {
                    via_agent: down(),
                    direct: Some(Readiness::Ready { connections: 1 }),
                },
                true,
            ),
            (
                PeerView {
                    via_agent: down(),
                    direct: Some(Readiness::NotReady { status: 503 }),
                },
                false,
            ),
            (
                PeerView {
                    via_agent: Readiness::Malformed {
                        detail: "not json".into(),
                    },
                    direct: Some(down()),
                },
                false,
            ),
        ];
        for (view, ready) in table {
            assert_eq!(view.is_ready(), ready, "{}", view.describe());
        }
    }
}
