//! One node with its own tunnel (topology tunnel-per-node) on a virtual
//! clock: its app, its uplink and its connector are modelled; decisions and
//! the schedule come from [`Node`]. The Worker in front switches its traffic
//! to the other tunnel whenever this connector stops serving, so each start
//! of the connector after a withdrawal is one switch back and forth.
//!
//! Left out: the time a start, a stop or an edge registration takes.

use super::app::AppTiming;
use super::decision::{Action, Decision, Outcome, Reason};
use super::machine::{Node, Role};
use super::readiness::Readiness;
use super::schedule::Check;
use super::timing::Timing;

const STEP_MS: u64 = 100;

struct World {
    app_up: bool,
    uplink_up: bool,
    flag: bool,
    connector: bool,
}

struct Sim {
    t: u64,
    world: World,
    node: Node,
    log: Vec<(u64, Decision)>,
    /// Times the connector went from serving to not serving.
    serving_lost: u32,
    was_serving: bool,
}

impl Sim {
    fn new(timing: Timing, app: AppTiming) -> Sim {
        let mut sim = Sim {
            t: 0,
            world: World {
                app_up: true,
                uplink_up: true,
                flag: false,
                connector: false,
            },
            node: Node::new(Role::Node, timing, Some(app), 0),
            log: Vec::new(),
            serving_lost: 0,
            was_serving: false,
        };
        sim.run_for(timing.failback_interval_ms * 3 + app.interval_ms * 3);
        assert!(
            sim.serving(),
            "the node serves after start-up: {:?}",
            sim.log
        );
        sim.log.clear();
        sim
    }

    fn serving(&self) -> bool {
        self.world.connector && self.world.uplink_up
    }

    fn run_for(&mut self, ms: u64) {
        self.run_until(self.t + ms, |_, _| {});
    }

    fn run_until(&mut self, end: u64, mut script: impl FnMut(&mut World, u64)) {
        while self.t < end {
            script(&mut self.world, self.t);
            if self.node.next_due_ms() <= self.t {
                for check in self.node.take_due(self.t) {
                    self.run_check(check);
                }
            }
            let serving = self.serving();
            if self.was_serving && !serving {
                self.serving_lost += 1;
            }
            self.was_serving = serving;
            self.t += STEP_MS;
        }
    }

    fn run_check(&mut self, check: Check) {
        let (t, w) = (self.t, &self.world);
        let outcomes = match check {
            Check::App => {
                vec![self
                    .node
                    .observe_app(t, (!w.app_up).then_some("connection refused"))]
            }
            Check::Local => {
                let (flag, running) = (w.flag, w.connector);
                let ready = if w.uplink_up {
                    Readiness::Ready { connections: 4 }
                } else {
                    Readiness::NotReady { status: 503 }
                };
                let mut o = vec![
                    self.node.set_maintenance(t, flag),
                    self.node.observe_local(t, running),
                ];
                if self.node.wants_local_readiness() {
                    o.push(self.node.observe_local_ready(t, &ready));
                }
                o
            }
            Check::Egress => vec![self.node.observe_egress(t, w.uplink_up)],
            Check::Peer => unreachable!("a node with its own tunnel has no peer"),
        };
        for o in outcomes {
            self.apply(&o);
        }
    }

    fn apply(&mut self, outcome: &Outcome) {
        if outcome.is_hold() {
            return;
        }
        self.log.push((self.t, outcome.decision));
        for action in outcome.actions {
            match action {
                Action::StartLocal => self.world.connector = true,
                Action::StopLocal => self.world.connector = false,
                // The Worker is not simulated here: the agent's edge steps
                // change nothing the machine sees.
                Action::DrainAtEdge | Action::ResumeAtEdge => {}
                other => panic!("{other:?} in the tunnel-per-node topology"),
            }
        }
    }

    fn count(&self, decision: Decision) -> usize {
        self.log.iter().filter(|(_, d)| *d == decision).count()
    }
}

fn fast() -> (Timing, AppTiming) {
    let timing = Timing {
        poll_interval_ms: 1_000,
        failback_interval_ms: 1_000,
        ..Timing::default()
    };
    let app = AppTiming {
        interval_ms: 1_000,
        rise: 2,
        fall: 3,
    };
    (timing, app)
}

#[test]
fn app_down_withdraws_within_fall_checks_and_returns_within_rise_checks() {
    let (timing, app) = fast();
    for phase in (0..1_000).step_by(100) {
        let mut sim = Sim::new(timing, app);
        sim.run_for(phase);
        let died = sim.t;
        sim.world.app_up = false;
        sim.run_for(10_000);
        let (at, d) = sim.log[0];
        assert_eq!(d, Decision::Withdraw);
        assert!(at - died <= 3_000, "{} ms", at - died);
        assert!(!sim.world.connector);
        let back = sim.t;
        sim.world.app_up = true;
        sim.run_for(10_000);
        let (at, d) = sim.log[1];
        assert_eq!(d, Decision::FailBack);
        assert!(at - back <= 2_000, "{} ms", at - back);
        assert_eq!(sim.log.len(), 2, "{:?}", sim.log);
        let reasons = sim.node.snapshot().reasons;
        assert_eq!(reasons.get(Reason::AppDown), 1);
        assert_eq!(reasons.get(Reason::UplinkLost), 0);
    }
}

#[test]
fn uplink_lost_withdraws_then_fails_back_after_proven_egress() {
    let (timing, app) = fast();
    let mut sim = Sim::new(timing, app);
    let cut = sim.t;
    sim.world.uplink_up = false;
    sim.run_for(10_000);
    let (at, d) = sim.log[0];
    assert_eq!(d, Decision::Withdraw);
    assert!(at - cut <= 3_000);
    let back = sim.t;
    sim.world.uplink_up = true;
    sim.run_for(30_000);
    let (at, d) = sim.log[1];
    assert_eq!(d, Decision::FailBack);
    assert!(at - back <= 2_000 + 1_000, "{} ms", at - back);
    assert!(sim.serving());
    let reasons = sim.node.snapshot().reasons;
    assert_eq!(reasons.get(Reason::UplinkLost), 1);
    assert_eq!(reasons.get(Reason::AppDown), 0);
}

#[test]
fn an_uplink_flapping_5s_down_5s_up_for_a_minute_switches_a_few_times() {
    let (timing, app) = fast();
    let mut worst = 0;
    for phase in (0..1_000).step_by(100) {
        let mut sim = Sim::new(timing, app);
        sim.run_for(phase);
        let start = sim.t;
        sim.run_until(start + 60_000, |w, t| {
            w.uplink_up = (t - start) % 10_000 >= 5_000;
        });
        // Without damping every up phase is a start (six a minute); the
        // reversal penalty doubles the proof each time: 2, 4, 8 checks.
        let starts = sim.count(Decision::FailBack);
        worst = worst.max(starts);
        assert!(starts <= 3, "{starts} starts: {:?}", sim.log);
        sim.world.uplink_up = true;
        sim.run_for(60_000);
        assert!(sim.serving(), "serves again once the link holds");
    }
    println!("uplink 5 s down / 5 s up for a minute: at most {worst} restarts");
}

#[test]
fn maintenance_stops_at_once_and_returns_after_the_flag() {
    let (timing, app) = fast();
    let mut sim = Sim::new(timing, app);
    sim.world.flag = true;
    sim.run_for(5_000);
    assert_eq!(sim.log.first().map(|l| l.1), Some(Decision::Drain));
    assert!(!sim.world.connector);
    sim.world.flag = false;
    sim.run_for(5_000);
    assert_eq!(sim.log.last().map(|l| l.1), Some(Decision::FailBack));
    assert!(sim.serving());
}
