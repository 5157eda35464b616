//! [`Node`]: one node's decisions, whichever role it plays. The standby runs
//! the peer-watch clock, the primary the fail-back clock, a node with its own
//! tunnel the fail-back clock and a watch on its own connector; all obey the
//! maintenance flag and, when configured, their app's health. Each
//! `observe_*` call takes one observation and returns the [`Outcome`] to
//! carry out; [`Node::next_due_ms`] and [`Node::take_due`] say when to look
//! at what.

use super::app::{AppState, AppTiming, AppWatch};
use super::decision::{Action, Decision, Outcome, Reason, ReasonCounts};
use super::evidence::Evidence;
use super::failback::FailBack;
use super::maintenance::Maintenance;
use super::order::Order;
use super::peer_watch::PeerWatch;
use super::readiness::{PeerView, Readiness};
use super::schedule::{Check, Schedule};
use super::start_backoff::StartBackoff;
use super::timing::Timing;
use super::topology::Topology;

/// The part this node plays, from its config: it fixes which clocks run
/// and which decisions exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Shared tunnel: serves whenever it can; fails back on its own clock.
    Primary,
    /// Shared tunnel: serves only while the primary's connector does not.
    Standby,
    /// Tunnel per node: this node's own tunnel, no peer; serves whenever its
    /// app, its uplink and the flag allow.
    Node,
}

impl Role {
    /// The spelling in `/health`, the metrics' `role` label and the logs;
    /// `primary` and `standby` are the config's `role` values too.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Standby => "standby",
            Role::Node => "node",
        }
    }

    /// The topology the role implies. The config names a role only in a
    /// shared tunnel, so role and topology are never stored apart to
    /// disagree.
    pub fn topology(self) -> Topology {
        match self {
            Role::Node => Topology::TunnelPerNode,
            Role::Primary | Role::Standby => Topology::SharedTunnel,
        }
    }

    fn fails_back(self) -> bool {
        matches!(self, Role::Primary | Role::Node)
    }
}

/// Why a handover from the peer is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandoverRefused {
    /// A node with its own tunnel has no peer to take over from.
    NoSharedTunnel,
    /// This node's maintenance flag is set.
    Maintenance,
    /// This node's app is down: serving would answer 502s.
    AppDown,
}

impl HandoverRefused {
    /// The refusal in words: the peer reads it in the 409's `error`, the
    /// log in a warning.
    pub fn as_str(self) -> &'static str {
        match self {
            HandoverRefused::NoSharedTunnel => "this node has its own tunnel (tunnel-per-node)",
            HandoverRefused::Maintenance => "this node's maintenance flag is set",
            HandoverRefused::AppDown => "this node's app is down",
        }
    }
}

/// Counters and state for `/health` and `/metrics`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The node's role, which gives the topology too.
    pub role: Role,
    /// `None` until the local connector was looked at once.
    pub local_running: Option<bool>,
    /// Tunnel per node: the last look at our connector's `/ready`.
    pub local_ready: Option<bool>,
    /// Whether the flag was set at the last local look.
    pub maintenance: bool,
    /// When the flag last changed, on the machine's clock (the agent turns
    /// it into Unix time for `/metrics`); `None` if it has not changed since
    /// the agent started.
    pub maintenance_since_ms: Option<u64>,
    /// `None` without an `[app]` section.
    pub app: Option<AppState>,
    /// The last app check: `healthy`, or the problem; `None` without
    /// `[app]` or before the first check.
    pub app_last: Option<String>,
    /// The last outcome's decision, a hold most of the time.
    pub last_decision: Decision,
    /// What the last outcome rested on: `/health`'s `why`.
    pub last_evidence: Evidence,
    /// When the last decision other than a hold was taken, or a handover
    /// received, on the machine's clock. The agent does not read it: its
    /// `/metrics` stamps the wall-clock time of each carried-out decision.
    pub last_transition_ms: Option<u64>,
    /// Take-over episodes; a start retried within one is not counted again.
    pub takeovers: u64,
    /// Times the standby stopped its connector for a ready peer.
    pub standdowns: u64,
    /// Times a primary, or a node with its own tunnel, started its
    /// connector on proven egress.
    pub failbacks: u64,
    /// Stops for the maintenance flag.
    pub drains: u64,
    /// Stops because the app was down or (tunnel per node) the uplink was
    /// lost.
    pub withdrawals: u64,
    /// Decisions carried out, by reason.
    pub reasons: ReasonCounts,
    /// The standby's misses of the peer in a row; 0 on the other roles.
    pub peer_misses_in_a_row: u32,
    /// The standby's misses of the peer since the start, in a row or not;
    /// 0 on the other roles.
    pub peer_misses_total: u64,
    /// Good egress checks in a row, not capped; 0 on the standby, which
    /// checks no egress.
    pub egress_good_in_a_row: u32,
    /// Good egress checks a fail-back needs now, the penalty included.
    pub failback_required: u32,
}

/// One node's decision machine: it owns its role's clocks, takes
/// observations and orders with their time, and answers with what to do.
/// The agent holds one and feeds it from its monitor and its API.
#[derive(Clone, Debug)]
pub struct Node {
    role: Role,
    timing: Timing,
    schedule: Schedule,
    local_running: Option<bool>,
    /// Standby: the peer's connector.
    peer: PeerWatch,
    /// Tunnel per node: our own connector's readiness, while it runs. Not
    /// ready for `takeover_after` looks = the uplink is gone.
    own: PeerWatch,
    local_ready: Option<bool>,
    failback: FailBack,
    maintenance: Maintenance,
    app: Option<AppWatch>,
    /// The peer handed the tunnel to us and is about to stop: its connector
    /// still looks ready for a moment, which must not make us stand down.
    /// Until the peer is seen not ready once, or this time passes.
    peer_leaving_until_ms: Option<u64>,
    /// How long a peer that handed us the tunnel may keep looking ready:
    /// its wait for our readiness and its stop, each bounded by the agent.
    handover_grace_ms: u64,
    last: Outcome,
    last_transition_ms: Option<u64>,
    takeovers: u64,
    standdowns: u64,
    failbacks: u64,
    drains: u64,
    withdrawals: u64,
    reasons: ReasonCounts,
    /// This take-over episode already asked the peer to stand down.
    asked_peer: bool,
    /// An operator started the connector through the API while the
    /// maintenance flag was set: no drain until the flag next changes.
    operator_started: bool,
    /// Starts that the next look found not running: the next one waits.
    starts: StartBackoff,
}

impl Node {
    /// A node whose agent starts at `start_ms`. The standby's first look
    /// waits one poll interval: after a joint boot the primary gets its head
    /// start, and the standby needs several misses anyway.
    pub fn new(role: Role, timing: Timing, app: Option<AppTiming>, start_ms: u64) -> Self {
        let poll = timing.poll_interval_ms;
        let mut schedule = Schedule::default();
        if let Some(app) = app {
            schedule = schedule.every(Check::App, app.interval_ms, start_ms);
        }
        schedule = match role {
            Role::Standby => schedule.every(Check::Local, poll, start_ms + poll).every(
                Check::Peer,
                poll,
                start_ms + poll,
            ),
            Role::Primary | Role::Node => schedule.every(Check::Local, poll, start_ms).every(
                Check::Egress,
                timing.failback_interval_ms,
                start_ms,
            ),
        };
        Node {
            role,
            timing,
            schedule,
            local_running: None,
            peer: PeerWatch::new(&timing),
            own: PeerWatch::new(&timing),
            local_ready: None,
            failback: FailBack::new(&timing),
            maintenance: Maintenance::default(),
            app: app.map(AppWatch::new),
            peer_leaving_until_ms: None,
            handover_grace_ms: 0,
            last: Outcome::hold(Evidence::Starting),
            last_transition_ms: None,
            takeovers: 0,
            standdowns: 0,
            failbacks: 0,
            drains: 0,
            withdrawals: 0,
            reasons: ReasonCounts::default(),
            asked_peer: false,
            operator_started: false,
            starts: StartBackoff::new(poll),
        }
    }

    /// The same node, allowing a peer that hands the tunnel over `grace_ms`
    /// to stop its connector (see [`Node::handover_received`]).
    pub fn with_handover_grace_ms(mut self, grace_ms: u64) -> Self {
        self.handover_grace_ms = grace_ms;
        self
    }

    /// The role it was made for; it never changes.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The clocks' settings it was made with.
    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// When the driver should next call [`Node::take_due`].
    pub fn next_due_ms(&self) -> u64 {
        self.schedule.next_due_ms()
    }

    /// The checks to run now, in order. Egress is not checked under the
    /// maintenance flag: nothing would come of it.
    pub fn take_due(&mut self, now_ms: u64) -> Vec<Check> {
        let mut due = self.schedule.take_due(now_ms);
        if self.maintenance.is_on() {
            due.retain(|c| *c != Check::Egress);
        }
        due
    }

    /// Tunnel per node: look at our connector's `/ready` while it runs (the
    /// only sign of a lost uplink that watches the thing serving traffic).
    pub fn wants_local_readiness(&self) -> bool {
        self.role == Role::Node && self.local_running == Some(true)
    }

    /// The local app's check; `problem` is `None` when it was healthy.
    pub fn observe_app(&mut self, now_ms: u64, problem: Option<&str>) -> Outcome {
        let Some(app) = &mut self.app else {
            return Outcome::hold(Evidence::NoApp);
        };
        let before = app.state();
        app.observe(problem);
        let after = app.state();
        let hold = if before != after {
            Evidence::App {
                state: after,
                last: app.last().map(str::to_string),
            }
        } else {
            self.last.evidence.clone()
        };
        self.decide(now_ms, hold)
    }

    /// The local connector's process state (systemd `is-active`, or the
    /// status command).
    pub fn observe_local(&mut self, now_ms: u64, running: bool) -> Outcome {
        self.starts.observed(now_ms, running);
        let changed = self.local_running != Some(running);
        self.local_running = Some(running);
        if !running {
            self.local_ready = None;
        }
        let hold = if changed {
            Evidence::Local { running }
        } else {
            self.last.evidence.clone()
        };
        self.decide(now_ms, hold)
    }

    /// Tunnel per node: one look at our own running connector's `/ready`.
    pub fn observe_local_ready(&mut self, now_ms: u64, readiness: &Readiness) -> Outcome {
        if !self.wants_local_readiness() {
            return self.decide(now_ms, self.last.evidence.clone());
        }
        let ready = readiness.is_ready();
        let changed = self.local_ready != Some(ready);
        self.local_ready = Some(ready);
        self.own.observe(&PeerView::relayed(readiness.clone()));
        let hold = if ready && changed {
            Evidence::LocalReady {
                readiness: readiness.clone(),
            }
        } else if !ready {
            Evidence::LocalNotReady {
                misses: self.own.misses_in_a_row(),
                of: self.own.takeover_after(),
                readiness: readiness.clone(),
            }
        } else {
            self.last.evidence.clone()
        };
        self.decide(now_ms, hold)
    }

    /// One look at the peer's connector (standby only; ignored otherwise).
    pub fn observe_peer(&mut self, now_ms: u64, view: &PeerView) -> Outcome {
        if self.role != Role::Standby {
            return Outcome::hold(Evidence::NotWatchingPeer);
        }
        self.peer.observe(view);
        if !view.is_ready() {
            // The leaving peer has stopped: its next ready look is a real
            // return.
            self.peer_leaving_until_ms = None;
        }
        let hold = if view.is_ready() {
            Evidence::PeerReady { view: view.clone() }
        } else {
            Evidence::PeerMiss {
                misses: self.peer.misses_in_a_row(),
                of: self.peer.takeover_after(),
                view: view.clone(),
            }
        };
        self.decide(now_ms, hold)
    }

    /// One egress check (primary and tunnel per node; ignored otherwise).
    pub fn observe_egress(&mut self, now_ms: u64, good: bool) -> Outcome {
        if !self.role.fails_back() {
            return Outcome::hold(Evidence::NoFailBack);
        }
        self.failback.observe(good);
        let hold = Evidence::Egress {
            good,
            // Capped so that a steady good egress does not log a new line
            // every check.
            in_a_row: self.failback.good_in_a_row().min(self.failback.required()),
            required: self.failback.required(),
        };
        self.decide(now_ms, hold)
    }

    /// The maintenance flag file appeared or went away.
    pub fn set_maintenance(&mut self, now_ms: u64, on: bool) -> Outcome {
        if !self.maintenance.set(now_ms, on) {
            return self.decide(now_ms, self.last.evidence.clone());
        }
        self.operator_started = false;
        if on {
            self.failback.planned_handover();
            self.decide(now_ms, Evidence::MaintenanceSet)
        } else {
            let hold = Evidence::MaintenanceCleared {
                failback_after: self.role.fails_back().then(|| self.failback.required()),
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
        self.local_ready = None;
        self.operator_started = false;
        self.peer_leaving_until_ms = None;
        if self.role == Role::Standby {
            // Only a serving primary asks (after its own connector became
            // ready), or an operator who means it: a take-over now would
            // undo the fail-back before our next look at the peer.
            self.peer.presume_serving();
        }
        if self.role.fails_back() {
            self.failback.peer_ordered_stop(now_ms, was_running);
            self.last = Outcome::hold(Evidence::StoppedOnRequest {
                failback_after: self.failback.required(),
            });
        }
    }

    /// An operator started our connector through the API (`POST
    /// /failover/start`). Under the maintenance flag that is an explicit
    /// override: the node does not drain it again until the flag next
    /// changes.
    pub fn operator_started(&mut self) {
        self.started_now();
        if self.maintenance.is_on() {
            self.operator_started = true;
            self.last = Outcome::hold(Evidence::StartedUnderMaintenance);
        }
    }

    /// An order from the peer or an operator: whether it is taken and, if
    /// so, the actions that carry it out. A stop is recorded here, before it
    /// runs, so that no decision in between works from a stale "running"
    /// ([`Node::peer_ordered_stop`]); a start is recorded by
    /// [`Node::order_done`] once it succeeded.
    pub fn order(
        &mut self,
        now_ms: u64,
        order: Order,
    ) -> Result<&'static [Action], HandoverRefused> {
        match order {
            Order::Handover => self.accepts_handover()?,
            Order::Stop => self.peer_ordered_stop(now_ms),
            Order::Start => {}
        }
        Ok(order.actions())
    }

    /// The actions of an [`Order`] succeeded.
    pub fn order_done(&mut self, now_ms: u64, order: Order) {
        match order {
            Order::Start => self.operator_started(),
            Order::Handover => {
                self.handover_received(now_ms, now_ms.saturating_add(self.handover_grace_ms));
            }
            Order::Stop => {}
        }
    }

    /// Whether this node takes the tunnel when its peer hands it over.
    pub fn accepts_handover(&self) -> Result<(), HandoverRefused> {
        if self.role == Role::Node {
            Err(HandoverRefused::NoSharedTunnel)
        } else if self.maintenance.is_on() {
            Err(HandoverRefused::Maintenance)
        } else if self.app_state() == Some(AppState::Down) {
            Err(HandoverRefused::AppDown)
        } else {
            Ok(())
        }
    }

    /// The peer handed the tunnel over (`POST /failover/handover`) and our
    /// connector was started: serve, and do not stand down because the
    /// leaving peer still looks ready until it has been seen not ready, or
    /// until `until_ms` (its stop failed: it serves, we may stand down).
    pub fn handover_received(&mut self, now_ms: u64, until_ms: u64) {
        self.started_now();
        self.last_transition_ms = Some(now_ms);
        if self.role == Role::Standby {
            self.peer_leaving_until_ms = Some(until_ms);
        }
        self.last = Outcome::hold(Evidence::HandedOver);
    }

    /// A copy of the counters and state that `/health`, `/metrics` and
    /// systemd's `STATUS=` line are rendered from.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            role: self.role,
            local_running: self.local_running,
            local_ready: self.local_ready,
            maintenance: self.maintenance.is_on(),
            maintenance_since_ms: self.maintenance.since_ms(),
            app: self.app_state(),
            app_last: self.app.as_ref().and_then(|a| a.last().map(str::to_string)),
            last_decision: self.last.decision,
            last_evidence: self.last.evidence.clone(),
            last_transition_ms: self.last_transition_ms,
            takeovers: self.takeovers,
            standdowns: self.standdowns,
            failbacks: self.failbacks,
            drains: self.drains,
            withdrawals: self.withdrawals,
            reasons: self.reasons,
            peer_misses_in_a_row: self.peer.misses_in_a_row(),
            peer_misses_total: self.peer.misses_total(),
            egress_good_in_a_row: self.failback.good_in_a_row(),
            failback_required: self.failback.required(),
        }
    }

    fn app_state(&self) -> Option<AppState> {
        self.app.as_ref().map(AppWatch::state)
    }

    /// The app allows serving: none configured, or proven up.
    fn app_allows_serving(&self) -> bool {
        self.app.as_ref().is_none_or(|a| a.state() == AppState::Up)
    }

    /// Our connector was just started: its readiness is watched afresh.
    fn started_now(&mut self) {
        self.starts.started();
        self.local_running = Some(true);
        self.local_ready = None;
        self.own = PeerWatch::new(&self.timing);
    }

    fn peer_leaving(&self, now_ms: u64) -> bool {
        self.peer_leaving_until_ms
            .is_some_and(|until| now_ms < until)
    }

    fn decide(&mut self, now_ms: u64, hold: Evidence) -> Outcome {
        if !self.peer.peer_is_down() {
            // The take-over episode ends once the peer is seen ready again.
            self.asked_peer = false;
        }
        let outcome = self.paced(now_ms, self.rule(now_ms, hold));
        if !outcome.is_hold() {
            self.carry_out(now_ms, &outcome);
        }
        self.last = outcome.clone();
        outcome
    }

    /// `outcome`, unless it starts the connector while the starts before
    /// it did not stick ([`StartBackoff`]): then a hold that says so.
    fn paced(&self, now_ms: u64, outcome: Outcome) -> Outcome {
        if outcome.actions.contains(&Action::StartLocal) && self.starts.holds(now_ms) {
            return Outcome::hold(Evidence::StartsFailing {
                failed_in_a_row: self.starts.failed_in_a_row(),
                pause_ms: self.starts.pause_ms(),
            });
        }
        outcome
    }

    fn rule(&self, now_ms: u64, hold: Evidence) -> Outcome {
        let topology = self.role.topology();
        let running = self.local_running;
        if self.maintenance.is_on() {
            if running == Some(true) && !self.operator_started {
                return Outcome::new(
                    Decision::Drain,
                    Reason::Maintenance,
                    topology,
                    Evidence::Drain { topology },
                );
            }
            return Outcome::hold(hold);
        }
        if running == Some(true) {
            if let Some(app) = self.app.as_ref().filter(|a| a.state() == AppState::Down) {
                return Outcome::new(
                    Decision::Withdraw,
                    Reason::AppDown,
                    topology,
                    Evidence::AppDown {
                        bad_in_a_row: app.bad_in_a_row().max(1),
                        last: app.last().unwrap_or("none").to_string(),
                    },
                );
            }
            if self.role == Role::Node && self.own.peer_is_down() {
                return Outcome::new(
                    Decision::Withdraw,
                    Reason::UplinkLost,
                    topology,
                    Evidence::UplinkLost {
                        misses: self.own.misses_in_a_row(),
                        last: self.own.last().unwrap_or("none").to_string(),
                    },
                );
            }
        }
        match self.role {
            Role::Standby
                if running == Some(false)
                    && self.peer.peer_is_down()
                    && self.app_allows_serving() =>
            {
                let evidence = Evidence::PeerMissed {
                    misses: self.peer.misses_in_a_row(),
                    last: self.peer.last().unwrap_or("none").to_string(),
                    retry: self.asked_peer,
                };
                if self.asked_peer {
                    Outcome::retry_start(Decision::TakeOver, Reason::PeerMissed, evidence)
                } else {
                    Outcome::new(Decision::TakeOver, Reason::PeerMissed, topology, evidence)
                }
            }
            Role::Standby
                if running == Some(true)
                    && self.peer.peer_serves()
                    && !self.peer_leaving(now_ms) =>
            {
                Outcome::new(
                    Decision::StandDown,
                    Reason::PeerReady,
                    topology,
                    Evidence::PeerServes {
                        ready_in_a_row: self.peer.ready_in_a_row(),
                        last: self.peer.last().unwrap_or("none").to_string(),
                    },
                )
            }
            Role::Primary | Role::Node
                if running == Some(false)
                    && self.failback.egress_proven()
                    && self.app_allows_serving() =>
            {
                Outcome::new(
                    Decision::FailBack,
                    Reason::EgressProven,
                    topology,
                    Evidence::EgressProven {
                        good_in_a_row: self.failback.good_in_a_row(),
                        app: self.app.is_some(),
                    },
                )
            }
            _ => Outcome::hold(hold),
        }
    }

    /// Book-keeping for a decision the shell is about to carry out. The
    /// connector is presumed to follow; the next local look corrects that if
    /// the start or stop failed, and the rule then decides again.
    fn carry_out(&mut self, now_ms: u64, outcome: &Outcome) {
        self.last_transition_ms = Some(now_ms);
        self.reasons.add(outcome.reason);
        match outcome.decision {
            Decision::Hold => {}
            Decision::TakeOver => {
                // One take-over episode asks the peer once and counts once;
                // a retried start is part of the same episode.
                if outcome.actions.contains(&Action::AskPeerToStop) {
                    self.takeovers += 1;
                    self.asked_peer = true;
                }
                self.started_now();
            }
            Decision::StandDown => {
                self.standdowns += 1;
                self.local_running = Some(false);
            }
            Decision::FailBack => {
                self.failbacks += 1;
                self.failback.record_failback(now_ms);
                self.started_now();
            }
            Decision::Drain => {
                self.drains += 1;
                self.local_running = Some(false);
            }
            Decision::Withdraw => {
                self.withdrawals += 1;
                // A lost uplink soon after a fail-back is the link flapping:
                // the next fail-back needs a longer proof, as after a
                // take-over. A dead app says nothing about the link.
                if outcome.reason == Reason::UplinkLost {
                    self.failback.peer_ordered_stop(now_ms, true);
                }
                self.local_running = Some(false);
                self.local_ready = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut n = Node::new(Role::Standby, Timing::default(), None, 0);
        n.observe_local(0, false);
        assert!(n.observe_peer(1, &miss()).is_hold());
        assert!(n.observe_peer(2, &miss()).is_hold());
        let o = n.observe_peer(3, &miss());
        assert_eq!(o.decision, Decision::TakeOver, "{}", o.evidence);
        assert!(n.observe_peer(4, &miss()).is_hold(), "already serving");
        assert_eq!(n.observe_peer(5, &ready()).decision, Decision::StandDown);
        assert_eq!(n.snapshot().takeovers, 1);
    }

    #[test]
    fn standby_does_not_take_over_before_it_knows_its_own_connector_state() {
        let mut n = Node::new(Role::Standby, Timing::default(), None, 0);
        for t in 0..5 {
            assert!(n.observe_peer(t, &miss()).is_hold());
        }
        assert_eq!(n.observe_local(6, false).decision, Decision::TakeOver);
    }

    #[test]
    fn primary_fails_back_after_two_good_checks_and_restarts_a_bare_stop_at_once() {
        let mut n = Node::new(Role::Primary, Timing::default(), None, 0);
        n.observe_local(0, false);
        assert!(n.observe_egress(1, true).is_hold());
        assert_eq!(n.observe_egress(2, true).decision, Decision::FailBack);
        assert!(n.observe_egress(3, true).is_hold());
        let o = n.observe_local(4, false);
        assert_eq!(
            o.decision,
            Decision::FailBack,
            "the streak is warm: {}",
            o.evidence
        );
    }

    #[test]
    fn a_stop_ordered_by_the_peer_restarts_the_egress_count() {
        let mut n = Node::new(Role::Primary, Timing::default(), None, 0);
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
            let mut n = Node::new(role, Timing::default(), None, 0);
            n.observe_local(0, true);
            assert_eq!(n.set_maintenance(1, true).decision, Decision::Drain);
            for t in 2..10 {
                assert!(n.observe_egress(t, true).is_hold());
                assert!(n.observe_peer(t, &miss()).is_hold());
                assert!(n.observe_local(t, false).is_hold());
            }
            assert!(!n.take_due(1_000_000).contains(&Check::Egress));
        }
    }

    #[test]
    fn the_primary_ignores_peer_views_and_the_standby_egress() {
        let mut p = Node::new(Role::Primary, Timing::default(), None, 0);
        p.observe_local(0, false);
        for t in 1..10 {
            assert!(p.observe_peer(t, &miss()).is_hold());
        }
        let mut s = Node::new(Role::Standby, Timing::default(), None, 0);
        s.observe_local(0, false);
        for t in 1..10 {
            assert!(s.observe_egress(t, true).is_hold());
        }
    }

    #[test]
    fn a_connector_that_exits_after_every_start_is_started_less_and_less_often() {
        let timing = Timing::default();
        let poll = timing.poll_interval_ms;
        let mut n = Node::new(Role::Primary, timing, None, 0);
        n.observe_local(0, false);
        n.observe_egress(1, true);
        n.observe_egress(2, true);
        // An hour of looks at a connector that is never found running, with
        // the egress check every other look (60 s) keeping egress proven.
        let mut starts = Vec::new();
        for look in 1..=120u64 {
            let t = look * poll;
            let mut outcomes = Vec::new();
            if look % 2 == 0 {
                outcomes.push(n.observe_egress(t - 1, true));
            }
            outcomes.push(n.observe_local(t, false));
            for o in outcomes {
                if o.decision == Decision::FailBack {
                    starts.push(look);
                } else if let Evidence::StartsFailing { pause_ms, .. } = o.evidence {
                    assert!(pause_ms >= poll, "look {look}: {pause_ms}");
                }
            }
        }
        // Undamped: a start at every look. Here the gaps grow to 16 polls.
        println!("starts at looks {starts:?}");
        let gaps: Vec<u64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(starts.len() <= 12, "{starts:?}");
        assert!(gaps.windows(2).all(|g| g[1] >= g[0]), "{gaps:?}");
        assert!(gaps.last().is_some_and(|&g| g >= 16), "{gaps:?}");
        // The first start came with the second egress check, before the loop.
        assert_eq!(n.snapshot().failbacks, starts.len() as u64 + 1);
        // Seen running once: the streak is over, a later stop is undone at once.
        n.observe_local(121 * poll, true);
        assert_eq!(
            n.observe_local(122 * poll, false).decision,
            Decision::FailBack
        );
    }

    #[test]
    fn a_retried_take_over_asks_the_peer_once_per_episode() {
        let mut n = Node::new(Role::Standby, Timing::default(), None, 0);
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
        let mut n = Node::new(Role::Primary, Timing::default(), None, 0);
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

    #[test]
    fn orders_go_through_the_machine() {
        let mut n =
            Node::new(Role::Standby, Timing::default(), None, 0).with_handover_grace_ms(500);
        n.observe_local(0, false);
        // A refused handover changes nothing.
        n.set_maintenance(1, true);
        assert_eq!(
            n.order(2, Order::Handover),
            Err(HandoverRefused::Maintenance)
        );
        assert_eq!(n.snapshot().local_running, Some(false));
        n.set_maintenance(3, false);
        assert_eq!(n.order(4, Order::Handover), Ok(&[Action::StartLocal][..]));
        // Recorded only once the start succeeded.
        assert_eq!(n.snapshot().local_running, Some(false));
        n.order_done(5, Order::Handover);
        assert_eq!(n.snapshot().local_running, Some(true));
        // The leaving peer still looks ready within the grace: no stand-down.
        assert!(n.observe_peer(6, &ready()).is_hold());
        assert!(n.observe_peer(504, &ready()).is_hold());
        assert_eq!(n.observe_peer(505, &ready()).decision, Decision::StandDown);
        // A stop is recorded before it runs.
        n.order_done(600, Order::Start);
        assert_eq!(n.order(601, Order::Stop), Ok(&[Action::StopLocal][..]));
        assert_eq!(n.snapshot().local_running, Some(false));
    }
}
