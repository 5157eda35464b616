//! [`Node`]: one node's decisions, whichever role it plays. The standby runs
//! the peer-watch clock, the primary the fail-back clock; both obey the
//! maintenance flag. Each `observe_*` call takes one observation and returns
//! the [`Outcome`] to carry out.

use super::decision::{Action, Decision, Outcome};
use super::failback::FailBack;
use super::maintenance::Maintenance;
use super::peer_watch::PeerWatch;
use super::readiness::PeerView;
use super::timing::Timing;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Serves whenever it can: fails back on its own clock.
    Primary,
    /// Serves only while the primary's connector does not.
    Standby,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Standby => "standby",
        }
    }
}

/// Counters and state for `/health` and `/metrics`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub role: Role,
    /// `None` until the local connector was looked at once.
    pub local_running: Option<bool>,
    pub maintenance: bool,
    pub last_decision: Decision,
    pub last_why: String,
    pub last_transition_ms: Option<u64>,
    pub takeovers: u64,
    pub standdowns: u64,
    pub failbacks: u64,
    pub drains: u64,
    pub peer_misses_in_a_row: u32,
    pub peer_misses_total: u64,
    pub egress_good_in_a_row: u32,
    pub failback_required: u32,
}

#[derive(Clone, Debug)]
pub struct Node {
    role: Role,
    local_running: Option<bool>,
    peer: PeerWatch,
    failback: FailBack,
    maintenance: Maintenance,
    last: Outcome,
    last_transition_ms: Option<u64>,
    takeovers: u64,
    standdowns: u64,
    failbacks: u64,
    drains: u64,
    /// This take-over episode already asked the peer to stand down.
    asked_peer: bool,
    /// An operator started the connector through the API while the
    /// maintenance flag was set: no drain until the flag next changes.
    operator_started: bool,
}

impl Node {
    pub fn new(role: Role, timing: Timing) -> Self {
        Node {
            role,
            local_running: None,
            peer: PeerWatch::new(&timing),
            failback: FailBack::new(&timing),
            maintenance: Maintenance::default(),
            last: Outcome::hold("starting"),
            last_transition_ms: None,
            takeovers: 0,
            standdowns: 0,
            failbacks: 0,
            drains: 0,
            asked_peer: false,
            operator_started: false,
        }
    }

    pub fn role(&self) -> Role {
        self.role
    }

    /// Only the standby looks at the peer: the primary's way back is its own
    /// egress, never the standby's state.
    pub fn wants_peer_check(&self) -> bool {
        self.role == Role::Standby
    }

    /// The primary checks egress on every fail-back tick unless flagged.
    pub fn wants_egress_check(&self) -> bool {
        self.role == Role::Primary && !self.maintenance.is_on()
    }

    /// The local connector's process state (systemd `is-active`, or the
    /// status command).
    pub fn observe_local(&mut self, now_ms: u64, running: bool) -> Outcome {
        let changed = self.local_running != Some(running);
        self.local_running = Some(running);
        let state = if running { "running" } else { "not running" };
        let hold = if changed {
            format!("local connector {state}")
        } else {
            self.last.why.clone()
        };
        self.decide(now_ms, hold)
    }

    /// One look at the peer's connector (standby only; ignored otherwise).
    pub fn observe_peer(&mut self, now_ms: u64, view: &PeerView) -> Outcome {
        if self.role != Role::Standby {
            return Outcome::hold("the primary does not watch its peer");
        }
        self.peer.observe(view);
        let hold = if view.is_ready() {
            format!("peer connector {}", view.describe())
        } else {
            format!(
                "peer connector miss {}/{} ({})",
                self.peer.misses_in_a_row(),
                self.peer.takeover_after(),
                view.describe()
            )
        };
        self.decide(now_ms, hold)
    }

    /// One egress check (primary only; ignored otherwise).
    pub fn observe_egress(&mut self, now_ms: u64, good: bool) -> Outcome {
        if self.role != Role::Primary {
            return Outcome::hold("the standby does not fail back");
        }
        self.failback.observe(good);
        let hold = format!(
            "egress check {}: {}/{} good in a row",
            if good { "good" } else { "failed" },
            // Capped so that a steady good egress does not log a new line
            // every check.
            self.failback.good_in_a_row().min(self.failback.required()),
            self.failback.required()
        );
        self.decide(now_ms, hold)
    }

    /// The maintenance flag file appeared or went away.
    pub fn set_maintenance(&mut self, now_ms: u64, on: bool) -> Outcome {
        if !self.maintenance.set(now_ms, on) {
            return self.decide(now_ms, self.last.why.clone());
        }
        self.operator_started = false;
        if on {
            self.failback.planned_handover();
            self.decide(
                now_ms,
                "maintenance flag set: this node will not start its connector".into(),
            )
        } else {
            let hold = match self.role {
                Role::Primary => format!(
                    "maintenance flag removed: fail-back after {} good egress check(s)",
                    self.failback.required()
                ),
                Role::Standby => "maintenance flag removed: watching the peer again".into(),
            };
            self.decide(now_ms, hold)
        }
    }

    /// The peer (or an operator) is stopping our connector through the API.
    /// Recorded before the stop runs, so that no decision in between works
    /// from a stale "running". A primary whose RUNNING connector is taken
    /// away must then prove egress from zero, so that a take-over is not
    /// undone at once by a streak gathered before it; a stop sent to a
    /// connector that was already down takes nothing away and changes no
    /// count.
    pub fn peer_ordered_stop(&mut self, now_ms: u64) {
        let was_running = self.local_running == Some(true);
        self.local_running = Some(false);
        self.operator_started = false;
        if self.role == Role::Primary {
            self.failback.peer_ordered_stop(now_ms, was_running);
            self.last = Outcome::hold(format!(
                "stopped on request: fail-back after {} good egress check(s)",
                self.failback.required()
            ));
        }
    }

    /// An operator started our connector through the API (`POST
    /// /failover/start`). Under the maintenance flag that is an explicit
    /// override: the node does not drain it again until the flag next
    /// changes.
    pub fn operator_started(&mut self) {
        self.local_running = Some(true);
        if self.maintenance.is_on() {
            self.operator_started = true;
            self.last = Outcome::hold(
                "started on request under the maintenance flag: no drain until the flag changes",
            );
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            role: self.role,
            local_running: self.local_running,
            maintenance: self.maintenance.is_on(),
            last_decision: self.last.decision,
            last_why: self.last.why.clone(),
            last_transition_ms: self.last_transition_ms,
            takeovers: self.takeovers,
            standdowns: self.standdowns,
            failbacks: self.failbacks,
            drains: self.drains,
            peer_misses_in_a_row: self.peer.misses_in_a_row(),
            peer_misses_total: self.peer.misses_total(),
            egress_good_in_a_row: self.failback.good_in_a_row(),
            failback_required: self.failback.required(),
        }
    }

    fn decide(&mut self, now_ms: u64, hold_why: String) -> Outcome {
        if !self.peer.peer_is_down() {
            // The take-over episode ends once the peer is seen ready again.
            self.asked_peer = false;
        }
        let outcome = self.rule(hold_why);
        if !outcome.is_hold() {
            self.carry_out(now_ms, &outcome);
        }
        self.last = outcome.clone();
        outcome
    }

    fn rule(&self, hold_why: String) -> Outcome {
        let running = self.local_running;
        if self.maintenance.is_on() {
            if running == Some(true) && !self.operator_started {
                return Outcome::new(
                    Decision::Drain,
                    "maintenance flag set: stopping the local connector so the peer takes over",
                );
            }
            return Outcome::hold(hold_why);
        }
        match self.role {
            Role::Standby if running == Some(false) && self.peer.peer_is_down() => {
                let missed = format!(
                    "peer connector missed {} check(s) in a row (last: {})",
                    self.peer.misses_in_a_row(),
                    self.peer.last().unwrap_or("none")
                );
                if self.asked_peer {
                    Outcome::retry_start(
                        Decision::TakeOver,
                        format!(
                            "{missed} and the local connector is not running yet: starting it \
                             again (the peer was asked to stand down already)"
                        ),
                    )
                } else {
                    Outcome::new(
                        Decision::TakeOver,
                        format!(
                            "{missed}: starting the local connector and asking the peer to \
                             stand down"
                        ),
                    )
                }
            }
            Role::Standby if running == Some(true) && self.peer.peer_serves() => Outcome::new(
                Decision::StandDown,
                format!(
                    "peer connector ready for {} check(s) in a row (last: {}): stopping the local \
                     connector",
                    self.peer.ready_in_a_row(),
                    self.peer.last().unwrap_or("none")
                ),
            ),
            Role::Primary if running == Some(false) && self.failback.egress_proven() => {
                Outcome::new(
                    Decision::FailBack,
                    format!(
                        "local connector not running and egress good for {} check(s) in a row: \
                         starting the local connector",
                        self.failback.good_in_a_row()
                    ),
                )
            }
            _ => Outcome::hold(hold_why),
        }
    }

    /// Book-keeping for a decision the shell is about to carry out. The
    /// connector is presumed to follow; the next local look corrects that if
    /// the start or stop failed, and the rule then decides again.
    fn carry_out(&mut self, now_ms: u64, outcome: &Outcome) {
        self.last_transition_ms = Some(now_ms);
        match outcome.decision {
            Decision::Hold => {}
            Decision::TakeOver => {
                // One take-over episode asks the peer once and counts once;
                // a retried start is part of the same episode.
                if outcome.actions.contains(&Action::AskPeerToStop) {
                    self.takeovers += 1;
                    self.asked_peer = true;
                }
                self.local_running = Some(true);
            }
            Decision::StandDown => {
                self.standdowns += 1;
                self.local_running = Some(false);
            }
            Decision::FailBack => {
                self.failbacks += 1;
                self.failback.record_failback(now_ms);
                self.local_running = Some(true);
            }
            Decision::Drain => {
                self.drains += 1;
                self.local_running = Some(false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::readiness::Readiness;

    fn ready() -> PeerView {
        PeerView::relayed(Readiness::Ready { connections: 4 })
    }

    fn miss() -> PeerView {
        PeerView::relayed(Readiness::Unreachable {
            detail: "timed out".into(),
        })
    }

    #[test]
    fn standby_takes_over_on_the_third_miss_then_stands_down_on_one_ready() {
        let mut n = Node::new(Role::Standby, Timing::default());
        n.observe_local(0, false);
        assert!(n.observe_peer(1, &miss()).is_hold());
        assert!(n.observe_peer(2, &miss()).is_hold());
        let o = n.observe_peer(3, &miss());
        assert_eq!(o.decision, Decision::TakeOver, "{}", o.why);
        assert!(n.observe_peer(4, &miss()).is_hold(), "already serving");
        assert_eq!(n.observe_peer(5, &ready()).decision, Decision::StandDown);
        assert_eq!(n.snapshot().takeovers, 1);
    }

    #[test]
    fn standby_does_not_take_over_before_it_knows_its_own_connector_state() {
        let mut n = Node::new(Role::Standby, Timing::default());
        for t in 0..5 {
            assert!(n.observe_peer(t, &miss()).is_hold());
        }
        assert_eq!(n.observe_local(6, false).decision, Decision::TakeOver);
    }

    #[test]
    fn primary_fails_back_after_two_good_checks_and_restarts_a_bare_stop_at_once() {
        let mut n = Node::new(Role::Primary, Timing::default());
        n.observe_local(0, false);
        assert!(n.observe_egress(1, true).is_hold());
        assert_eq!(n.observe_egress(2, true).decision, Decision::FailBack);
        assert!(n.observe_egress(3, true).is_hold());
        let o = n.observe_local(4, false);
        assert_eq!(
            o.decision,
            Decision::FailBack,
            "the streak is warm: {}",
            o.why
        );
    }

    #[test]
    fn a_stop_ordered_by_the_peer_restarts_the_egress_count() {
        let mut n = Node::new(Role::Primary, Timing::default());
        n.observe_local(0, true);
        n.observe_egress(1, true);
        n.observe_egress(2, true);
        n.peer_ordered_stop(3);
        assert!(n.observe_local(4, false).is_hold());
        assert!(n.observe_egress(5, true).is_hold());
        assert_eq!(n.observe_egress(6, true).decision, Decision::FailBack);
    }

    #[test]
    fn maintenance_drains_and_holds_both_roles() {
        for role in [Role::Primary, Role::Standby] {
            let mut n = Node::new(role, Timing::default());
            n.observe_local(0, true);
            assert_eq!(n.set_maintenance(1, true).decision, Decision::Drain);
            for t in 2..10 {
                assert!(n.observe_egress(t, true).is_hold());
                assert!(n.observe_peer(t, &miss()).is_hold());
                assert!(n.observe_local(t, false).is_hold());
            }
            assert!(!n.wants_egress_check());
        }
    }

    #[test]
    fn the_primary_ignores_peer_views_and_the_standby_egress() {
        let mut p = Node::new(Role::Primary, Timing::default());
        p.observe_local(0, false);
        for t in 1..10 {
            assert!(p.observe_peer(t, &miss()).is_hold());
        }
        let mut s = Node::new(Role::Standby, Timing::default());
        s.observe_local(0, false);
        for t in 1..10 {
            assert!(s.observe_egress(t, true).is_hold());
        }
    }

    #[test]
    fn a_retried_take_over_asks_the_peer_once_per_episode() {
        let mut n = Node::new(Role::Standby, Timing::default());
        n.observe_local(0, false);
        for t in 1..=3 {
            n.observe_peer(t, &miss());
        }
        assert!(n.last.actions.contains(&Action::AskPeerToStop));
        let retry = n.observe_local(4, false);
        assert_eq!(retry.decision, Decision::TakeOver);
        assert_eq!(retry.actions, &[Action::StartLocal]);
        assert_eq!(n.snapshot().takeovers, 1);
        // The peer serves again: the episode is over; the next one asks.
        assert_eq!(n.observe_peer(5, &ready()).decision, Decision::StandDown);
        n.observe_peer(6, &miss());
        n.observe_peer(7, &miss());
        let o = n.observe_peer(8, &miss());
        assert!(o.actions.contains(&Action::AskPeerToStop), "{o:?}");
        assert_eq!(n.snapshot().takeovers, 2);
    }

    #[test]
    fn an_operator_start_under_the_flag_is_not_drained_until_the_flag_changes() {
        let mut n = Node::new(Role::Primary, Timing::default());
        n.observe_local(0, false);
        assert!(n.set_maintenance(1, true).is_hold());
        n.operator_started();
        for t in 2..6 {
            assert!(n.observe_local(t, true).is_hold());
            assert!(n.set_maintenance(t, true).is_hold());
        }
        n.set_maintenance(6, false);
        assert_eq!(n.set_maintenance(7, true).decision, Decision::Drain);
    }
}
