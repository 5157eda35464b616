//! Two nodes of a shared tunnel on a virtual clock: the world (hosts, links,
//! apps, connectors) is modelled; every decision comes from [`Node`], and so
//! does every node's schedule (the driver in the agent asks the same
//! [`Node::next_due_ms`] / [`Node::take_due`]). These are the timing claims
//! of the runbook, checked over many clock phases.
//!
//! Left out: the time actions take (a start, a stop, a wait for readiness
//! happen within the step that decides them) and the agents' restarts.

use super::app::AppTiming;
use super::decision::{Action, Decision, Outcome};
use super::machine::{Node, Role};
use super::readiness::{PeerView, Readiness};
use super::schedule::Check;
use super::timing::Timing;

const STEP_MS: u64 = 100;
const MINUTE: u64 = 60_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Who {
    Primary,
    Standby,
}

impl Who {
    fn other(self) -> Who {
        match self {
            Who::Primary => Who::Standby,
            Who::Standby => Who::Primary,
        }
    }
}

/// The physical world: what is up, what runs.
struct World {
    primary_host_up: bool,
    primary_agent_up: bool,
    primary_egress_up: bool,
    primary_app_up: bool,
    primary_flag: bool,
    primary_connector: bool,
    standby_connector: bool,
    standby_app_up: bool,
    /// The standby's config names the peer connector's `/ready` directly.
    direct_url: bool,
    /// How the standby's own connector start goes.
    standby_start: StartGoes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StartGoes {
    Works,
    /// The start command fails (the agent skips asking the peer).
    Fails,
    /// The start "succeeds" but the process never shows as running
    /// (systemd: activating, auto-restart).
    NeverComesUp,
}

struct Sim {
    t: u64,
    world: World,
    primary: Node,
    standby: Node,
    log: Vec<(u64, Who, Decision)>,
    /// `POST /failover/stop` requests the standby sent.
    peer_stops: u32,
    /// Planned stops that went ahead without the peer ready.
    stops_without_peer: u32,
    /// Steps (of `STEP_MS`) with no ready connector, and with two.
    steps_unserved: u64,
    steps_both: u64,
}

impl Sim {
    /// The steady state: the primary serves, both agents have run for a
    /// while. Phases shift the agents' clocks against each other.
    fn steady(timing: Timing, standby_phase: u64, primary_phase: u64) -> Sim {
        Sim::steady_with_app(timing, None, standby_phase, primary_phase)
    }

    fn steady_with_app(
        timing: Timing,
        app: Option<AppTiming>,
        standby_phase: u64,
        primary_phase: u64,
    ) -> Sim {
        let mut sim = Sim {
            t: 0,
            world: World {
                primary_host_up: true,
                primary_agent_up: true,
                primary_egress_up: true,
                primary_app_up: true,
                primary_flag: false,
                primary_connector: true,
                standby_connector: false,
                standby_app_up: true,
                direct_url: false,
                standby_start: StartGoes::Works,
            },
            primary: Node::new(Role::Primary, timing, app, primary_phase),
            standby: Node::new(Role::Standby, timing, app, standby_phase),
            log: Vec::new(),
            peer_stops: 0,
            stops_without_peer: 0,
            steps_unserved: 0,
            steps_both: 0,
        };
        sim.run_for(5 * MINUTE);
        let startup_failbacks = sim.count(Who::Primary, Decision::FailBack);
        assert!(
            sim.log.len() == startup_failbacks && startup_failbacks <= 1,
            "steady state made decisions: {:?}",
            sim.log
        );
        sim.log.clear();
        sim.steps_unserved = 0;
        sim.steps_both = 0;
        sim
    }

    fn run_for(&mut self, ms: u64) {
        self.run_until(self.t + ms, |_, _| {});
    }

    /// Advances the clock to `end`; `script` may change the world before
    /// every step.
    fn run_until(&mut self, end: u64, mut script: impl FnMut(&mut World, u64)) {
        while self.t < end {
            script(&mut self.world, self.t);
            self.step();
            match (self.ready(Who::Primary), self.ready(Who::Standby)) {
                (false, false) => self.steps_unserved += 1,
                (true, true) => self.steps_both += 1,
                _ => {}
            }
            self.t += STEP_MS;
        }
    }

    fn agent_alive(&self, who: Who) -> bool {
        match who {
            Who::Primary => self.world.primary_host_up && self.world.primary_agent_up,
            Who::Standby => true,
        }
    }

    fn node(&mut self, who: Who) -> &mut Node {
        match who {
            Who::Primary => &mut self.primary,
            Who::Standby => &mut self.standby,
        }
    }

    fn connector(&mut self, who: Who) -> &mut bool {
        match who {
            Who::Primary => &mut self.world.primary_connector,
            Who::Standby => &mut self.world.standby_connector,
        }
    }

    /// The connector holds edge connections: it serves the tunnel.
    fn ready(&self, who: Who) -> bool {
        let w = &self.world;
        match who {
            Who::Primary => w.primary_host_up && w.primary_connector && w.primary_egress_up,
            Who::Standby => w.standby_connector,
        }
    }

    fn step(&mut self) {
        let t = self.t;
        for who in [Who::Primary, Who::Standby] {
            if !self.agent_alive(who) || self.node(who).next_due_ms() > t {
                continue;
            }
            for check in self.node(who).take_due(t) {
                self.run_check(who, check);
            }
        }
    }

    /// One check, run the way the agent's driver runs it.
    fn run_check(&mut self, who: Who, check: Check) {
        let t = self.t;
        match check {
            Check::App => {
                let up = match who {
                    Who::Primary => self.world.primary_app_up,
                    Who::Standby => self.world.standby_app_up,
                };
                let o = self.node(who).observe_app(t, (!up).then_some("refused"));
                self.apply(who, &o);
            }
            Check::Local => {
                let flag = who == Who::Primary && self.world.primary_flag;
                let o = self.node(who).set_maintenance(t, flag);
                self.apply(who, &o);
                let running = *self.connector(who);
                let o = self.node(who).observe_local(t, running);
                self.apply(who, &o);
            }
            Check::Peer => {
                let view = self.peer_view();
                let o = self.standby.observe_peer(t, &view);
                self.apply(who, &o);
            }
            Check::Egress => {
                let good = self.world.primary_host_up && self.world.primary_egress_up;
                let o = self.primary.observe_egress(t, good);
                self.apply(who, &o);
            }
        }
    }

    /// What the standby sees of the primary's connector right now.
    fn peer_view(&self) -> PeerView {
        let w = &self.world;
        let process = w.primary_host_up && w.primary_connector;
        let connector = if !process {
            Readiness::Unreachable {
                detail: "connection refused".into(),
            }
        } else if w.primary_egress_up {
            Readiness::Ready { connections: 4 }
        } else {
            Readiness::NotReady { status: 503 }
        };
        let via_agent = if w.primary_host_up && w.primary_agent_up {
            match connector {
                Readiness::Unreachable { .. } => Readiness::NotReady { status: 503 },
                ref other => other.clone(),
            }
        } else {
            Readiness::Unreachable {
                detail: "timed out".into(),
            }
        };
        PeerView {
            via_agent,
            direct: w.direct_url.then_some(connector),
        }
    }

    /// Starts a connector as its controller would; false when the start
    /// command failed.
    fn start(&mut self, who: Who) -> bool {
        match (who, self.world.standby_start) {
            (Who::Primary, _) | (Who::Standby, StartGoes::Works) => {
                *self.connector(who) = true;
                true
            }
            (Who::Standby, StartGoes::Fails) => false,
            (Who::Standby, StartGoes::NeverComesUp) => true,
        }
    }

    /// Carries out an outcome the way the agent does: in order, and skipping
    /// the rest after a failed start or a local connector never ready.
    fn apply(&mut self, who: Who, outcome: &Outcome) {
        let decision = outcome.decision;
        if decision == Decision::Hold {
            return;
        }
        self.log.push((self.t, who, decision));
        let (t, peer) = (self.t, who.other());
        for action in outcome.actions {
            match action {
                Action::StartLocal => {
                    if !self.start(who) {
                        break;
                    }
                }
                Action::StopLocal => *self.connector(who) = false,
                Action::AwaitLocalReady => {
                    if !self.ready(who) {
                        break;
                    }
                }
                Action::AskPeerToStop => {
                    if who == Who::Standby {
                        self.peer_stops += 1;
                    }
                    if self.agent_alive(peer) {
                        self.node(peer).peer_ordered_stop(t);
                        *self.connector(peer) = false;
                    }
                }
                Action::HandOverToPeer => {
                    let grace = t + 2 * MINUTE;
                    if self.agent_alive(peer)
                        && self.node(peer).accepts_handover().is_ok()
                        && self.start(peer)
                    {
                        self.node(peer).handover_received(t, grace);
                    }
                }
                Action::AwaitPeerReady => {
                    if !self.ready(peer) {
                        self.stops_without_peer += 1;
                    }
                }
                Action::DrainAtEdge | Action::ResumeAtEdge => {
                    panic!("{action:?} in a shared tunnel")
                }
            }
        }
    }

    fn first_after(&self, from: u64, who: Who, decision: Decision) -> Option<u64> {
        self.log
            .iter()
            .find(|(t, w, d)| *t >= from && *w == who && *d == decision)
            .map(|(t, _, _)| *t)
    }

    fn count(&self, who: Who, decision: Decision) -> usize {
        self.log
            .iter()
            .filter(|(_, w, d)| *w == who && *d == decision)
            .count()
    }
}

/// Phases in steps of a few seconds across one poll interval for the standby
/// and one fail-back interval for the primary.
fn phases() -> impl Iterator<Item = (u64, u64)> {
    (0..30_000)
        .step_by(3_000)
        .flat_map(|s| (0..60_000).step_by(7_000).map(move |p| (s, p)))
}

#[test]
fn primary_dies_takeover_lands_between_two_and_three_poll_intervals() {
    let timing = Timing::default();
    let p = timing.poll_interval_ms;
    let (mut earliest, mut latest) = (u64::MAX, 0);
    for (s, pp) in phases() {
        for offset in (0..30_000).step_by(2_300) {
            let mut sim = Sim::steady(timing, s, pp);
            let failed_at = sim.t + offset;
            sim.run_until(failed_at + 5 * MINUTE, |w, t| {
                if t == failed_at {
                    w.primary_host_up = false;
                }
            });
            let took = sim.first_after(failed_at, Who::Standby, Decision::TakeOver);
            let took = took.unwrap_or_else(|| panic!("no take-over (phases {s}/{pp})"));
            let after = took - failed_at;
            assert!(
                (2 * p..=3 * p).contains(&after),
                "take-over {after} ms after the failure"
            );
            assert_eq!(sim.count(Who::Standby, Decision::TakeOver), 1);
            earliest = earliest.min(after);
            latest = latest.max(after);
        }
    }
    println!("primary dies: take-over {earliest}..{latest} ms after the failure");
}

#[test]
fn bare_connector_stop_on_a_primary_with_egress_is_undone_by_failback_first() {
    let timing = Timing::default();
    let (mut failback_first, mut takeover_first) = (0, 0);
    let mut slowest = 0;
    for (s, pp) in phases() {
        for offset in (0..30_000).step_by(2_300) {
            let mut sim = Sim::steady(timing, s, pp);
            let stopped_at = sim.t + offset;
            sim.run_until(stopped_at + 5 * MINUTE, |w, t| {
                if t == stopped_at {
                    w.primary_connector = false;
                }
            });
            let fb = sim.first_after(stopped_at, Who::Primary, Decision::FailBack);
            let to = sim.first_after(stopped_at, Who::Standby, Decision::TakeOver);
            match (fb, to) {
                (Some(fb), Some(to)) if to < fb => takeover_first += 1,
                (Some(fb), _) => {
                    failback_first += 1;
                    slowest = slowest.max(fb - stopped_at);
                }
                (None, _) => panic!("no fail-back after a bare stop"),
            }
        }
    }
    println!(
        "bare stop: fail-back first {failback_first} times, take-over first {takeover_first} \
         times; fail-back at most {slowest} ms after the stop"
    );
    assert_eq!(
        takeover_first, 0,
        "the fail-back clock must win a stop-only test"
    );
    assert!(slowest <= timing.poll_interval_ms);
}

#[test]
fn isolated_primary_standby_takes_over_unopposed_until_egress_returns() {
    let timing = Timing::default();
    for (s, pp) in phases() {
        let mut sim = Sim::steady(timing, s, pp);
        let cut = sim.t;
        let back = cut + 10 * MINUTE;
        sim.run_until(back + 5 * MINUTE, |w, t| {
            w.primary_egress_up = !(cut..back).contains(&t);
        });
        let took = sim
            .first_after(cut, Who::Standby, Decision::TakeOver)
            .expect("take-over");
        assert!(took - cut <= 3 * timing.poll_interval_ms);
        assert_eq!(
            sim.first_after(cut, Who::Primary, Decision::FailBack)
                .map(|t| t >= back),
            Some(true)
        );
        let fb = sim
            .first_after(back, Who::Primary, Decision::FailBack)
            .expect("fail-back");
        assert!(fb - back <= timing.failback_after as u64 * timing.failback_interval_ms);
        // Make before break: the primary, once ready, stops the standby
        // itself; the standby's own stand-down never comes into it.
        assert!(!sim.world.standby_connector, "{:?}", sim.log);
        assert_eq!(sim.count(Who::Standby, Decision::StandDown), 0);
        assert_eq!(sim.steps_both, 0, "both connectors served");
        assert_eq!(
            sim.count(Who::Standby, Decision::TakeOver),
            1,
            "{:?}",
            sim.log
        );
        assert_eq!(
            sim.count(Who::Primary, Decision::FailBack),
            1,
            "{:?}",
            sim.log
        );
    }
}

/// A deterministic link that flips every 2 to 7 seconds.
fn flapping(seed: u64) -> impl FnMut(&mut World, u64) {
    let mut state = seed;
    let mut next_flip = 0;
    move |w, t| {
        if t >= next_flip {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            w.primary_egress_up = !w.primary_egress_up;
            next_flip = t + 2_000 + (state >> 33) % 5_001;
        }
    }
}

#[test]
fn a_link_flapping_for_ten_minutes_does_not_ping_pong() {
    let timing = Timing::default();
    let mut worst = 0;
    for seed in 1..=40u64 {
        let (s, pp) = ((seed * 7_919) % 30_000, (seed * 15_401) % 60_000);
        let mut sim = Sim::steady(timing, s / 100 * 100, pp / 100 * 100);
        let start = sim.t;
        sim.run_until(start + 10 * MINUTE, flapping(seed));
        let handovers = sim.count(Who::Standby, Decision::TakeOver)
            + sim.count(Who::Primary, Decision::FailBack);
        worst = worst.max(handovers);
        // Each take-over that reverses a fail-back doubles the egress proof
        // the primary needs: 2, 4, 8 checks of a minute each. Ten minutes of
        // flapping fit at most two round trips.
        assert!(
            handovers <= 4,
            "seed {seed}: {handovers} handovers: {:?}",
            sim.log
        );
        let fb = sim.count(Who::Primary, Decision::FailBack);
        let to = sim.count(Who::Standby, Decision::TakeOver);
        assert!(fb <= to, "a fail-back without a take-over before it");
    }
    println!("flapping link, 10 minutes: at most {worst} handovers over 40 seeds");
}

#[test]
fn peer_agent_down_while_its_connector_serves_is_no_takeover_with_a_direct_url() {
    let timing = Timing::default();
    for (s, pp) in phases() {
        let mut sim = Sim::steady(timing, s, pp);
        sim.world.direct_url = true;
        sim.world.primary_agent_up = false;
        sim.run_for(10 * MINUTE);
        assert_eq!(
            sim.count(Who::Standby, Decision::TakeOver),
            0,
            "{:?}",
            sim.log
        );
        // The monitor still works: the connector dies too, the standby serves.
        let died = sim.t;
        sim.world.primary_connector = false;
        sim.run_for(2 * MINUTE);
        let took = sim
            .first_after(died, Who::Standby, Decision::TakeOver)
            .expect("take-over");
        assert!(took - died <= 3 * timing.poll_interval_ms);
    }
}

#[test]
fn peer_agent_down_without_a_direct_url_counts_as_a_dead_peer() {
    // Documented trade-off: through the relay alone a dead agent and a dead
    // host look the same, and a dead host must be taken over.
    let mut sim = Sim::steady(Timing::default(), 0, 0);
    sim.world.primary_agent_up = false;
    sim.run_for(2 * MINUTE);
    assert_eq!(sim.count(Who::Standby, Decision::TakeOver), 1);
}

#[test]
fn maintenance_flag_held_then_released_hands_over_with_no_gap() {
    let timing = Timing::default();
    let (p, f) = (timing.poll_interval_ms, timing.failback_interval_ms);
    let mut slowest_return = 0;
    for (s, pp) in phases() {
        let mut sim = Sim::steady(timing, s, pp);
        let set = sim.t;
        let released = set + 15 * MINUTE;
        sim.run_until(released + 6 * MINUTE, |w, t| {
            w.primary_flag = (set..released).contains(&t)
        });
        let drained = sim
            .first_after(set, Who::Primary, Decision::Drain)
            .expect("drain");
        assert!(drained - set <= p);
        let fb = sim
            .first_after(set, Who::Primary, Decision::FailBack)
            .expect("fail-back");
        assert!(fb >= released, "failed back while the flag was held");
        // Noticed at the next poll, then two good egress checks.
        assert!(fb - released <= p + 2 * f, "{} ms", fb - released);
        slowest_return = slowest_return.max(fb - released);
        // The standby was handed the tunnel before the primary stopped, and
        // stopped by the primary once it served again: no take-over, no
        // stand-down, not one step without a ready connector.
        assert_eq!(sim.log.len(), 2, "{:?}", sim.log);
        assert_eq!(sim.steps_unserved, 0, "a gap during planned maintenance");
        assert_eq!(sim.stops_without_peer, 0);
        assert!(sim.world.primary_connector && !sim.world.standby_connector);
    }
    println!("maintenance released: primary serving again at most {slowest_return} ms later");
}

#[test]
fn a_standby_that_cannot_start_does_not_block_the_primary_fail_back() {
    let timing = Timing::default();
    let (p, f) = (timing.poll_interval_ms, timing.failback_interval_ms);
    for start in [StartGoes::Fails, StartGoes::NeverComesUp] {
        for (s, pp) in phases().step_by(5) {
            let mut sim = Sim::steady(timing, s, pp);
            sim.world.standby_start = start;
            let set = sim.t;
            let released = set + 5 * MINUTE;
            sim.run_until(released + 10 * MINUTE, |w, t| {
                w.primary_flag = (set..released).contains(&t)
            });
            sim.first_after(set, Who::Primary, Decision::Drain)
                .expect("drain");
            assert!(
                sim.count(Who::Standby, Decision::TakeOver) > 1,
                "{start:?}: the standby keeps retrying its start: {:?}",
                sim.log
            );
            let fb = sim
                .first_after(released, Who::Primary, Decision::FailBack)
                .unwrap_or_else(|| panic!("{start:?}: no fail-back: {:?}", sim.log));
            assert!(
                fb - released <= p + 2 * f,
                "{start:?}: {} ms",
                fb - released
            );
            assert!(sim.world.primary_connector);
            let expected_asks = match start {
                StartGoes::Fails => 0,
                _ => 1,
            };
            assert_eq!(
                sim.peer_stops, expected_asks,
                "{start:?}: one take-over episode asks the peer at most once"
            );
            assert_eq!(
                sim.standby.snapshot().takeovers,
                1,
                "{start:?}: a retried start is the same take-over"
            );
        }
    }
}

#[test]
fn a_link_down_100s_up_150s_for_an_hour_is_handed_over_only_a_few_times() {
    // Long enough for each clock to fire in every half of the cycle: without
    // damping every cycle hands the tunnel over and back (about 28 times an
    // hour).
    let timing = Timing::default();
    let mut worst = 0;
    for (s, pp) in phases().step_by(3) {
        let mut sim = Sim::steady(timing, s, pp);
        let start = sim.t;
        let end = start + 60 * MINUTE;
        sim.run_until(end, |w, t| {
            w.primary_egress_up = (t - start) % 250_000 >= 100_000;
        });
        let handovers = sim.count(Who::Standby, Decision::TakeOver)
            + sim.count(Who::Primary, Decision::FailBack);
        worst = worst.max(handovers);
        assert!(handovers <= 4, "{handovers} hand-overs: {:?}", sim.log);
        // Once the link holds, the primary comes back (at most 16 checks).
        sim.world.primary_egress_up = true;
        sim.run_for(20 * MINUTE);
        assert!(
            sim.world.primary_connector && !sim.world.standby_connector,
            "the primary does not serve once the link held: {:?}",
            sim.log
        );
    }
    println!("link down 100 s / up 150 s for an hour: at most {worst} hand-overs");
}

#[test]
fn the_primarys_app_dies_the_standby_is_handed_the_tunnel_and_back() {
    let timing = Timing::default();
    let app = AppTiming {
        interval_ms: timing.poll_interval_ms,
        rise: 2,
        fall: 3,
    };
    for (s, pp) in phases().step_by(4) {
        let mut sim = Sim::steady_with_app(timing, Some(app), s, pp);
        let died = sim.t;
        let back = died + 10 * MINUTE;
        sim.run_until(back + 10 * MINUTE, |w, t| {
            w.primary_app_up = !(died..back).contains(&t)
        });
        let withdrew = sim
            .first_after(died, Who::Primary, Decision::Withdraw)
            .expect("withdraw");
        // The third failed check: between two and three app intervals.
        assert!(withdrew - died <= u64::from(app.fall) * app.interval_ms);
        let fb = sim
            .first_after(back, Who::Primary, Decision::FailBack)
            .expect("fail-back");
        assert!(fb - back <= u64::from(app.rise) * app.interval_ms);
        // Handed over and taken back by the primary itself: the standby
        // decided nothing, and never was the tunnel without a connector.
        assert_eq!(sim.log.len(), 2, "{:?}", sim.log);
        assert_eq!(sim.steps_unserved, 0);
        assert!(sim.world.primary_connector && !sim.world.standby_connector);
    }
}

#[test]
fn a_standby_whose_app_is_down_does_not_take_over() {
    let timing = Timing::default();
    let app = AppTiming {
        interval_ms: timing.poll_interval_ms,
        rise: 2,
        fall: 3,
    };
    let mut sim = Sim::steady_with_app(timing, Some(app), 0, 0);
    sim.world.standby_app_up = false;
    sim.run_for(5 * MINUTE);
    sim.world.primary_host_up = false;
    sim.run_for(5 * MINUTE);
    assert_eq!(sim.count(Who::Standby, Decision::TakeOver), 0);
    sim.world.standby_app_up = true;
    sim.run_for(3 * MINUTE);
    assert_eq!(sim.count(Who::Standby, Decision::TakeOver), 1);
    assert!(sim.world.standby_connector);
}
