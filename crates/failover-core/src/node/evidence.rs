//! [`Evidence`]: what an [`Outcome`](super::Outcome) rests on, as values.
//! The machine states the facts; the agent renders them with `Display`
//! (its log, `/health`'s `why`, systemd's `STATUS=`) and decides itself
//! which are worth a line: it logs a hold only when its evidence changed.

use std::fmt;

use super::app::AppState;
use super::readiness::{PeerView, Readiness};
use super::topology::Topology;

/// The facts behind a decision or a hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// The agent has just started.
    Starting,
    /// An app check arrived, but no `[app]` is configured.
    NoApp,
    /// The app's state changed; `last` is its last check.
    App {
        /// The state it changed to.
        state: AppState,
        /// The last check: `healthy`, or the problem the agent reported.
        last: Option<String>,
    },
    /// The local connector's process state changed.
    Local {
        /// What systemd's `is-active` or the status command said.
        running: bool,
    },
    /// Tunnel per node: our running connector became ready.
    LocalReady {
        /// Its `/ready` answer.
        readiness: Readiness,
    },
    /// Tunnel per node: our running connector is not ready.
    LocalNotReady {
        /// Not-ready looks in a row.
        misses: u32,
        /// The misses that withdraw it (`takeover_after`).
        of: u32,
        /// This look's `/ready` answer.
        readiness: Readiness,
    },
    /// A peer look arrived at a node that does not watch its peer.
    NotWatchingPeer,
    /// The standby saw the peer's connector ready.
    PeerReady {
        /// What each path answered.
        view: PeerView,
    },
    /// The standby saw the peer's connector not ready.
    PeerMiss {
        /// Misses in a row.
        misses: u32,
        /// The misses that make a take-over (`takeover_after`).
        of: u32,
        /// What each path answered.
        view: PeerView,
    },
    /// An egress check arrived at the standby.
    NoFailBack,
    /// One egress check; `in_a_row` is capped at `required`, so that a
    /// steady good egress is the same evidence every check.
    Egress {
        /// Whether this check passed.
        good: bool,
        /// Good checks in a row, capped at `required`.
        in_a_row: u32,
        /// Good checks a fail-back needs now, the penalty included.
        required: u32,
    },
    /// The maintenance flag appeared.
    MaintenanceSet,
    /// The flag went away; a node that fails back needs this many good
    /// egress checks (`None`: the standby, which watches its peer again).
    MaintenanceCleared {
        /// Good egress checks before the fail-back; `None` on the standby.
        failback_after: Option<u32>,
    },
    /// The peer or an operator stopped our connector.
    StoppedOnRequest {
        /// Good egress checks the fail-back needs now: counted from zero,
        /// and doubled if the stop reversed a recent fail-back.
        failback_after: u32,
    },
    /// The peer handed the tunnel over to us.
    HandedOver,
    /// An operator started our connector under the maintenance flag.
    StartedUnderMaintenance,
    /// Drain: the maintenance flag is set and our connector runs.
    Drain {
        /// How it drains: a shared tunnel hands over to the peer first, a
        /// tunnel per node just stops.
        topology: Topology,
    },
    /// Withdraw: the app failed this many checks in a row.
    AppDown {
        /// Failed checks in a row, reported as at least 1: an app still
        /// down while it gathers `rise` good checks has none in a row, and
        /// `last` then reads `healthy`.
        bad_in_a_row: u32,
        /// The last check: `healthy`, or the problem.
        last: String,
    },
    /// Withdraw (tunnel per node): our connector ran without an edge
    /// connection for this many looks.
    UplinkLost {
        /// Not-ready looks in a row at our running connector.
        misses: u32,
        /// The last look, described.
        last: String,
    },
    /// Take-over: the peer's connector missed this many looks. `retry`:
    /// the peer was asked already in this episode; only our start is tried
    /// again.
    PeerMissed {
        /// Misses in a row.
        misses: u32,
        /// The last look, both paths described.
        last: String,
        /// A start retried within the episode; the peer is not asked again.
        retry: bool,
    },
    /// Stand-down: the peer's connector is ready.
    PeerServes {
        /// Ready looks in a row (at least `standdown_after`).
        ready_in_a_row: u32,
        /// The last look, both paths described.
        last: String,
    },
    /// A start is due, but the connector was not running at the first
    /// look after each of the last starts: the next one waits `pause_ms`
    /// after the last failed one (`start_backoff`).
    StartsFailing {
        /// Starts in a row the next look found not running.
        failed_in_a_row: u32,
        /// How long the next start waits after the last failed one.
        pause_ms: u64,
    },
    /// Fail-back: egress is proven (and the app up, if one is watched).
    EgressProven {
        /// Good egress checks in a row, not capped (unlike
        /// [`Evidence::Egress`]).
        good_in_a_row: u32,
        /// Whether an `[app]` is watched, and so was up too.
        app: bool,
    },
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Evidence::Starting => f.write_str("starting"),
            Evidence::NoApp => f.write_str("no [app] configured"),
            Evidence::App { state, last } => write!(
                f,
                "app {} ({})",
                state.as_str(),
                last.as_deref().unwrap_or("no check yet")
            ),
            Evidence::Local { running: true } => f.write_str("local connector running"),
            Evidence::Local { running: false } => f.write_str("local connector not running"),
            Evidence::LocalReady { readiness } => {
                write!(f, "local connector {}", readiness.describe())
            }
            Evidence::LocalNotReady {
                misses,
                of,
                readiness,
            } => write!(
                f,
                "local connector not ready {misses}/{of} ({})",
                readiness.describe()
            ),
            Evidence::NotWatchingPeer => f.write_str("only the standby watches its peer"),
            Evidence::PeerReady { view } => write!(f, "peer connector {}", view.describe()),
            Evidence::PeerMiss { misses, of, view } => {
                write!(f, "peer connector miss {misses}/{of} ({})", view.describe())
            }
            Evidence::NoFailBack => f.write_str("the standby does not fail back"),
            Evidence::Egress {
                good,
                in_a_row,
                required,
            } => write!(
                f,
                "egress check {}: {in_a_row}/{required} good in a row",
                if *good { "good" } else { "failed" }
            ),
            Evidence::MaintenanceSet => {
                f.write_str("maintenance flag set: this node will not start its connector")
            }
            Evidence::MaintenanceCleared {
                failback_after: Some(n),
            } => write!(
                f,
                "maintenance flag removed: fail-back after {n} good egress check(s)"
            ),
            Evidence::MaintenanceCleared {
                failback_after: None,
            } => f.write_str("maintenance flag removed: watching the peer again"),
            Evidence::StoppedOnRequest { failback_after } => write!(
                f,
                "stopped on request: fail-back after {failback_after} good egress check(s)"
            ),
            Evidence::HandedOver => f.write_str("serving: the peer handed the tunnel over"),
            Evidence::StartedUnderMaintenance => f.write_str(
                "started on request under the maintenance flag: no drain until the flag changes",
            ),
            Evidence::Drain {
                topology: Topology::SharedTunnel,
            } => f.write_str(
                "maintenance flag set: handing the tunnel to the peer, then stopping the local \
                 connector",
            ),
            Evidence::Drain {
                topology: Topology::TunnelPerNode,
            } => f.write_str(
                "maintenance flag set: stopping the local connector so the edge sends traffic \
                 to the other tunnel",
            ),
            Evidence::AppDown { bad_in_a_row, last } => write!(
                f,
                "app down: {bad_in_a_row} failed check(s) in a row (last: {last}): stopping the \
                 local connector"
            ),
            Evidence::UplinkLost { misses, last } => write!(
                f,
                "local connector running but not ready for {misses} look(s) in a row (last: \
                 {last}): uplink lost, stopping it until egress is proven again"
            ),
            Evidence::PeerMissed {
                misses,
                last,
                retry,
            } => {
                write!(
                    f,
                    "peer connector missed {misses} check(s) in a row (last: {last})"
                )?;
                if *retry {
                    f.write_str(
                        " and the local connector is not running yet: starting it again (the \
                         peer was asked to stand down already)",
                    )
                } else {
                    f.write_str(": starting the local connector and asking the peer to stand down")
                }
            }
            Evidence::PeerServes {
                ready_in_a_row,
                last,
            } => write!(
                f,
                "peer connector ready for {ready_in_a_row} check(s) in a row (last: {last}): \
                 stopping the local connector"
            ),
            Evidence::StartsFailing {
                failed_in_a_row,
                pause_ms,
            } => write!(
                f,
                "the local connector was not running at the first look after each of its last \
                 {failed_in_a_row} start(s): starting it again {} s after the last one",
                pause_ms / 1000
            ),
            Evidence::EgressProven { good_in_a_row, app } => write!(
                f,
                "local connector not running, egress good for {good_in_a_row} check(s) in a \
                 row{}: starting the local connector",
                if *app { " and app up" } else { "" }
            ),
        }
    }
}
