//! The node's own application, watched through its local health URL: the
//! thing the connector serves, not a bystander. A connector whose app is
//! dead still holds its edge connections and answers every request with a
//! 502, which a client cannot safely retry elsewhere; stopping it turns those
//! into the edge's 530, which the Worker replays to the other node.
//!
//! `fall` failed checks in a row make the app down, `rise` good ones make it
//! up. Before either threshold is reached the app is `Unknown`: an agent that
//! just started neither stops a running connector nor starts a stopped one
//! on a guess.

use crate::streak::{Streak, Verdict};

/// The `[app]` settings: check interval and thresholds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppTiming {
    /// `[app] interval`: time between checks (the agent's config defaults
    /// it to `poll_interval`).
    pub interval_ms: u64,
    /// `[app] rise`: good checks in a row that make the app up, so that a
    /// stopped connector may start.
    pub rise: u32,
    /// `[app] fall`: failed checks in a row that make the app down, which
    /// withdraws a running connector.
    pub fall: u32,
}

impl AppTiming {
    /// `rise` when `[app]` sets none: one good answer from an app still
    /// coming up does not start the connector.
    pub const DEFAULT_RISE: u32 = 2;
    /// `fall` when `[app]` sets none: one slow or failed answer does not
    /// withdraw a serving connector.
    pub const DEFAULT_FALL: u32 = 3;
}

/// What the node believes of its app, by the `[app]` thresholds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppState {
    /// Neither threshold reached since the agent started.
    Unknown,
    /// `rise` good checks in a row, and not `fall` failed ones since: the
    /// connector may serve.
    Up,
    /// `fall` failed checks in a row, and not `rise` good ones since: a
    /// running connector is withdrawn, a stopped one stays stopped.
    Down,
}

impl AppState {
    /// The spelling in `/health`, systemd's `STATUS=` and the evidence text.
    pub fn as_str(self) -> &'static str {
        match self {
            AppState::Unknown => "unknown",
            AppState::Up => "up",
            AppState::Down => "down",
        }
    }
}

/// The app's checks over time: a [`Streak`], plus the `Unknown` a streak
/// machine does not have.
#[derive(Clone, Debug)]
pub struct AppWatch {
    timing: AppTiming,
    streak: Streak,
    state: AppState,
    last: Option<String>,
}

impl AppWatch {
    /// A watch with no check yet, so [`AppState::Unknown`].
    pub fn new(timing: AppTiming) -> Self {
        AppWatch {
            timing,
            // Down until proven: `rise` good checks make it up.
            streak: Streak::new(Verdict::Down, timing.rise, timing.fall),
            state: AppState::Unknown,
            last: None,
        }
    }

    /// The `[app]` settings it judges by.
    pub fn timing(&self) -> AppTiming {
        self.timing
    }

    /// One check; `problem` is `None` when the app answered 2xx/3xx in time.
    pub fn observe(&mut self, problem: Option<&str>) {
        let good = problem.is_none();
        self.streak.observe(good);
        self.last = Some(problem.map_or_else(|| "healthy".to_string(), str::to_string));
        self.state = if self.streak.is_up() {
            AppState::Up
        } else if self.state == AppState::Up || self.streak.bad_streak() >= self.timing.fall.max(1)
        {
            // Either it just fell from up, or it has failed `fall` checks
            // since the start: down, known.
            AppState::Down
        } else {
            self.state
        };
    }

    /// The state after the last check.
    pub fn state(&self) -> AppState {
        self.state
    }

    /// Good checks since the last failed one.
    pub fn good_in_a_row(&self) -> u32 {
        self.streak.good_streak()
    }

    /// Failed checks since the last good one: what a withdrawal reports.
    pub fn bad_in_a_row(&self) -> u32 {
        self.streak.bad_streak()
    }

    /// The last check, described for logs and `/health`.
    pub fn last(&self) -> Option<&str> {
        self.last.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: AppTiming = AppTiming {
        interval_ms: 1_000,
        rise: 2,
        fall: 3,
    };

    fn run(checks: &[bool]) -> Vec<AppState> {
        let mut w = AppWatch::new(T);
        checks
            .iter()
            .map(|&good| {
                w.observe((!good).then_some("HTTP 500"));
                w.state()
            })
            .collect()
    }

    #[test]
    fn states_over_check_sequences() {
        use AppState::*;
        let table: [(&[bool], &[AppState]); 5] = [
            (&[true, true], &[Unknown, Up]),
            (&[false, false, false], &[Unknown, Unknown, Down]),
            (
                &[true, true, false, false, true, false],
                &[Unknown, Up, Up, Up, Up, Up],
            ),
            (
                &[true, true, false, false, false, true, true],
                &[Unknown, Up, Up, Up, Down, Down, Up],
            ),
            (
                &[false, false, true, false, false, false],
                &[Unknown, Unknown, Unknown, Unknown, Unknown, Down],
            ),
        ];
        for (checks, states) in table {
            assert_eq!(run(checks), states, "checks {checks:?}");
        }
    }
}
