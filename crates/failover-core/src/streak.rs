//! Consecutive-result hysteresis: a binary verdict that flips only after
//! `rise` good or `fall` bad observations in a row, and a result that agrees
//! with the current verdict resets the opposite streak (the model of
//! pingora-load-balancing's health checks). The Worker's origin health and the
//! agent's peer and egress checks are all this one machine.

/// What a streak machine currently believes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Healthy: serve, or keep serving.
    Up,
    /// Not: route around it, or stand down.
    Down,
}

impl Verdict {
    /// `up` or `down`, for logs, status and the shared-verdict wire format.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Up => "up",
            Verdict::Down => "down",
        }
    }
}

/// Counts consecutive good and bad observations and flips the verdict at the
/// thresholds. Thresholds below 1 are treated as 1: "flip after zero
/// observations" has no meaning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Streak {
    rise: u32,
    fall: u32,
    verdict: Verdict,
    good: u32,
    bad: u32,
}

impl Streak {
    /// A machine at `initial` with no observation yet; `rise` good ones in
    /// a row bring it up, `fall` bad ones take it down.
    pub fn new(initial: Verdict, rise: u32, fall: u32) -> Self {
        Streak {
            rise: rise.max(1),
            fall: fall.max(1),
            verdict: initial,
            good: 0,
            bad: 0,
        }
    }

    /// Records one observation; returns the new verdict when it flipped.
    pub fn observe(&mut self, good: bool) -> Option<Verdict> {
        if good {
            self.good = self.good.saturating_add(1);
            self.bad = 0;
            if self.verdict == Verdict::Down && self.good >= self.rise {
                self.verdict = Verdict::Up;
                return Some(Verdict::Up);
            }
        } else {
            self.bad = self.bad.saturating_add(1);
            self.good = 0;
            if self.verdict == Verdict::Up && self.bad >= self.fall {
                self.verdict = Verdict::Down;
                return Some(Verdict::Down);
            }
        }
        None
    }

    /// Forces a verdict without an observation (an operator command, a
    /// restart); both streaks start again from zero.
    pub fn reset(&mut self, verdict: Verdict) {
        self.verdict = verdict;
        self.good = 0;
        self.bad = 0;
    }

    /// The current verdict.
    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// True while the verdict is `Up`.
    pub fn is_up(&self) -> bool {
        self.verdict == Verdict::Up
    }

    /// Consecutive good observations so far (0 after any bad one).
    pub fn good_streak(&self) -> u32 {
        self.good
    }

    /// Consecutive bad observations so far (0 after any good one).
    pub fn bad_streak(&self) -> u32 {
        self.bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flips_down_only_after_fall_misses_in_a_row() {
        let mut s = Streak::new(Verdict::Up, 2, 3);
        assert_eq!(s.observe(false), None);
        assert_eq!(s.observe(false), None);
        assert_eq!(s.observe(true), None, "a good result resets the bad streak");
        assert_eq!(s.bad_streak(), 0);
        assert_eq!(s.observe(false), None);
        assert_eq!(s.observe(false), None);
        assert_eq!(s.observe(false), Some(Verdict::Down));
        assert_eq!(s.verdict(), Verdict::Down);
    }

    #[test]
    fn flips_up_only_after_rise_goods_in_a_row() {
        let mut s = Streak::new(Verdict::Down, 2, 1);
        assert_eq!(s.observe(true), None);
        assert_eq!(s.observe(false), None);
        assert_eq!(s.observe(true), None);
        assert_eq!(s.observe(true), Some(Verdict::Up));
        assert!(s.is_up());
    }

    #[test]
    fn zero_thresholds_behave_as_one() {
        let mut s = Streak::new(Verdict::Up, 0, 0);
        assert_eq!(s.observe(false), Some(Verdict::Down));
        assert_eq!(s.observe(true), Some(Verdict::Up));
    }

    #[test]
    fn reset_clears_streaks() {
        let mut s = Streak::new(Verdict::Up, 3, 3);
        s.observe(false);
        s.reset(Verdict::Down);
        assert_eq!(
            (s.verdict(), s.good_streak(), s.bad_streak()),
            (Verdict::Down, 0, 0)
        );
    }
}
