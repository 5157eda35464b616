//! Overrides: an operator moving traffic on purpose, at runtime, without a
//! redeploy (`POST {STATUS_PATH}/origins/{name}`). One per origin at most,
//! written by the global checker (the one writer) and learned by every
//! isolate from it (`edge::consult`). What each mode means for routing:
//!
//! - `drain`: no new requests, except those pinned to the origin by the
//!   affinity cookie, which keep going to it for `drain_s` after the
//!   override was set; then none (Cloudflare's drain). After that it is
//!   held like `disable`.
//! - `disable`: held: used only when every other origin is down.
//! - `force-up`: routed to as if healthy, whatever the checks say (a false
//!   positive in the checks).
//! - `auto`: health decides. An override whose `ttl_s` has run out is
//!   `auto` again by itself, on every isolate's own clock.
//!
//! Layout: this module has the types and what an override means at an
//! instant ([`Standing`]); [`request`] parses an operator's change and
//! bounds it; [`api`] is the admin API's paths, who may use them, and the
//! JSON it answers; [`wire`] is how overrides travel from the checker to the
//! isolates and sit in its storage.

use std::time::Duration;

use crate::edge::time::after;

pub mod api;
pub mod request;
pub mod wire;

/// What an operator asked for one origin. The words are the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Health decides (no override).
    Auto,
    /// No new requests; pinned ones for `drain_s`, then none.
    Drain,
    /// Only when every other origin is down.
    Disable,
    /// Served regardless of health.
    ForceUp,
}

impl Mode {
    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Drain => "drain",
            Mode::Disable => "disable",
            Mode::ForceUp => "force-up",
        }
    }

    /// [`Mode::as_str`] read back, exactly; None for any other word.
    pub fn parse(text: &str) -> Option<Mode> {
        [Mode::Auto, Mode::Drain, Mode::Disable, Mode::ForceUp]
            .into_iter()
            .find(|m| m.as_str() == text)
    }
}

/// One origin's override as the checker stored it: instants on the
/// checker's clock, judged by each isolate on its own (they agree to NTP's
/// precision, far below anything an operator sets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Override {
    /// What was asked.
    pub mode: Mode,
    /// When the checker stored it, ms since the epoch.
    pub set_at_ms: u64,
    /// When it turns back to `auto` by itself; None: never.
    pub expires_at_ms: Option<u64>,
    /// `drain` only: how long pinned requests keep going (zero otherwise).
    pub drain: Duration,
}

impl Override {
    /// Whether its `ttl_s` has run out at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms.is_some_and(|at| now_ms >= at)
    }

    /// The mode that applies at `now_ms`: `auto` once expired.
    pub fn mode_at(&self, now_ms: u64) -> Mode {
        if self.expired(now_ms) {
            Mode::Auto
        } else {
            self.mode
        }
    }

    /// When pinned requests stop going to a draining origin.
    pub fn drain_ends_ms(&self) -> u64 {
        after(self.set_at_ms, self.drain)
    }

    /// One line for a person (a log line, an event's reason): `drain
    /// (pinned requests for 300 s) until 2026-12-01T20:31:04Z`.
    pub fn describe(&self) -> String {
        let what = match self.mode {
            Mode::Auto => return "auto (health decides)".to_string(),
            Mode::Drain => format!("drain (pinned requests for {} s)", self.drain.as_secs()),
            Mode::Disable => "disable (only when every other origin is down)".to_string(),
            Mode::ForceUp => "force-up (served regardless of health)".to_string(),
        };
        match self.expires_at_ms {
            Some(at) => format!("{what} until {}", crate::notify::rfc3339::format(at)),
            None => format!("{what} until changed"),
        }
    }

    /// What it means for routing at `now_ms`.
    pub fn standing(&self, now_ms: u64) -> Standing {
        match self.mode_at(now_ms) {
            Mode::Auto => Standing::Auto,
            Mode::ForceUp => Standing::ForcedUp,
            Mode::Disable => Standing::Held,
            Mode::Drain if now_ms < self.drain_ends_ms() => Standing::Draining,
            Mode::Drain => Standing::Held,
        }
    }

    /// The next instant after `now_ms` at which [`Override::standing`]
    /// changes by itself (an expiry, a drain's end), if any.
    pub fn next_change_ms(&self, now_ms: u64) -> Option<u64> {
        let drain_end = (self.mode == Mode::Drain).then(|| self.drain_ends_ms());
        [self.expires_at_ms, drain_end]
            .into_iter()
            .flatten()
            .filter(|&at| at > now_ms)
            .min()
    }
}

/// What routing makes of one origin at one instant, overrides and time
/// folded in. Health is the other input (`Standing::routable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// No override in force: the health map decides.
    Auto,
    /// `force-up`: routed to as if healthy.
    ForcedUp,
    /// `drain` before its end: only requests pinned to it go there.
    Draining,
    /// `disable`, or `drain` past its end: only once nothing else is up.
    Held,
}

impl Standing {
    /// Whether a request may go to the origin in the policy's order (before
    /// the last-resort tier): `up` is the health map's verdict,
    /// `pinned_here` whether the request's affinity cookie names it.
    pub fn routable(self, up: bool, pinned_here: bool) -> bool {
        match self {
            Standing::Auto => up,
            Standing::ForcedUp => true,
            Standing::Draining => up && pinned_here,
            Standing::Held => false,
        }
    }

    /// Whether a request may be meant for the origin at all: a request sent
    /// elsewhere because of an override is not a failover (no
    /// `x-failover`), one sent elsewhere because of health is.
    pub fn intendable(self) -> bool {
        matches!(self, Standing::Auto | Standing::ForcedUp)
    }

    /// Whether slow start may hold the origin back from part of its
    /// requests (`edge::slow_start`): only where health decides. A
    /// force-up is the operator's word that it serves now, all of it; a
    /// drained or disabled origin takes no unpinned request to ramp, and
    /// a pinned one is never held back.
    pub fn ramps(self) -> bool {
        self == Standing::Auto
    }
}

/// Every origin's override, by index in `ORIGINS`; None is `auto`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    by_origin: Vec<Option<Override>>,
}

impl Overrides {
    /// No override for any of `origins` origins.
    pub fn none(origins: usize) -> Overrides {
        Overrides {
            by_origin: vec![None; origins],
        }
    }

    /// The stored override of `origin`, expired or not.
    pub fn get(&self, origin: usize) -> Option<&Override> {
        self.by_origin.get(origin).and_then(Option::as_ref)
    }

    /// Stores `value` for `origin` (ignored past the end: the table is made
    /// for one config).
    pub fn set(&mut self, origin: usize, value: Override) {
        if let Some(slot) = self.by_origin.get_mut(origin) {
            *slot = Some(value);
        }
    }

    /// How many origins the table is for.
    pub fn len(&self) -> usize {
        self.by_origin.len()
    }

    /// True for a table of no origins.
    pub fn is_empty(&self) -> bool {
        self.by_origin.is_empty()
    }

    /// Every origin's standing at `now_ms`, by index.
    pub fn standings(&self, now_ms: u64) -> Vec<Standing> {
        self.by_origin
            .iter()
            .map(|o| o.map_or(Standing::Auto, |o| o.standing(now_ms)))
            .collect()
    }

    /// The soonest instant after `now_ms` at which some standing changes by
    /// itself.
    pub fn next_change_ms(&self, now_ms: u64) -> Option<u64> {
        self.by_origin
            .iter()
            .flatten()
            .filter_map(|o| o.next_change_ms(now_ms))
            .min()
    }

    /// Overrides that have expired by `now_ms`, turned into an explicit
    /// `auto` set at their expiry (the checker stores that, and says so
    /// once); the indices of those that changed.
    pub fn expire(&mut self, now_ms: u64) -> Vec<usize> {
        let mut changed = Vec::new();
        for (i, slot) in self.by_origin.iter_mut().enumerate() {
            let Some(o) = slot else { continue };
            if o.mode != Mode::Auto && o.expired(now_ms) {
                *slot = Some(Override {
                    mode: Mode::Auto,
                    set_at_ms: o.expires_at_ms.unwrap_or(now_ms),
                    expires_at_ms: None,
                    drain: Duration::ZERO,
                });
                changed.push(i);
            }
        }
        changed
    }
}

/// The full path's last-resort tier: in an attempt order, after the
/// origins the request may go to, the origins an override holds back
/// (disabled, drained) that the health map calls up, before those it calls
/// down, so that with every other origin down a held one serves at once
/// rather than after a dead one's timeout. `routable` is what the route was
/// made with; the relative order within each tier is kept.
pub fn last_resort(
    order: &[usize],
    routable: impl Fn(usize) -> bool,
    held_up: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let mut out: Vec<usize> = order.iter().copied().filter(|&i| routable(i)).collect();
    out.extend(order.iter().filter(|&&i| !routable(i) && held_up(i)));
    out.extend(order.iter().filter(|&&i| !routable(i) && !held_up(i)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn o(mode: Mode, set_at_ms: u64, expires_at_ms: Option<u64>, drain_s: u64) -> Override {
        Override {
            mode,
            set_at_ms,
            expires_at_ms,
            drain: S * u32::try_from(drain_s).unwrap_or(0),
        }
    }

    #[test]
    fn each_override_describes_itself_in_one_line() {
        let table = [
            (
                o(Mode::Drain, 0, Some(1_796_153_464_000), 300),
                "drain (pinned requests for 300 s) until 2026-12-01T19:31:04Z",
            ),
            (
                o(Mode::Disable, 0, None, 0),
                "disable (only when every other origin is down) until changed",
            ),
            (
                o(Mode::ForceUp, 0, None, 0),
                "force-up (served regardless of health) until changed",
            ),
            (o(Mode::Auto, 0, Some(5), 0), "auto (health decides)"),
        ];
        for (over, text) in table {
            assert_eq!(over.describe(), text);
        }
    }

    #[test]
    fn modes_read_back_exactly() {
        for m in [Mode::Auto, Mode::Drain, Mode::Disable, Mode::ForceUp] {
            assert_eq!(Mode::parse(m.as_str()), Some(m));
        }
        for bad in ["", "Drain", "force_up", "forceup", " auto", "up", "enable"] {
            assert_eq!(Mode::parse(bad), None, "{bad:?}");
        }
    }

    /// Mode × time: the standing routing sees, and when it next changes.
    #[test]
    fn standing_over_time() {
        let drain = o(Mode::Drain, 1_000, Some(100_000), 30);
        let table: &[(Override, u64, Standing, Option<u64>)] = &[
            (drain, 1_000, Standing::Draining, Some(31_000)),
            (drain, 30_999, Standing::Draining, Some(31_000)),
            (drain, 31_000, Standing::Held, Some(100_000)),
            (drain, 100_000, Standing::Auto, None),
            (o(Mode::Drain, 1_000, None, 0), 1_000, Standing::Held, None),
            (
                o(Mode::Disable, 1_000, None, 0),
                9_999_999,
                Standing::Held,
                None,
            ),
            (
                o(Mode::Disable, 1_000, Some(5_000), 0),
                4_999,
                Standing::Held,
                Some(5_000),
            ),
            (
                o(Mode::Disable, 1_000, Some(5_000), 0),
                5_000,
                Standing::Auto,
                None,
            ),
            (
                o(Mode::ForceUp, 1_000, Some(2_000), 0),
                1_500,
                Standing::ForcedUp,
                Some(2_000),
            ),
            (o(Mode::Auto, 1_000, None, 0), 1_500, Standing::Auto, None),
        ];
        for (over, now, standing, next) in table {
            assert_eq!(over.standing(*now), *standing, "{over:?} at {now}");
            assert_eq!(over.next_change_ms(*now), *next, "{over:?} at {now}");
        }
    }

    /// Standing × health × pin: whether the policy may pick the origin.
    #[test]
    fn routable_table() {
        use Standing::*;
        let table = [
            (Auto, true, false, true),
            (Auto, false, true, false),
            (ForcedUp, false, false, true),
            (Draining, true, true, true),
            (Draining, true, false, false),
            (Draining, false, true, false),
            (Held, true, true, false),
        ];
        for (standing, up, pinned, routable) in table {
            assert_eq!(
                standing.routable(up, pinned),
                routable,
                "{standing:?} up {up} pinned {pinned}"
            );
        }
        assert!(Auto.intendable() && ForcedUp.intendable());
        assert!(Auto.ramps());
        assert!(!ForcedUp.ramps() && !Draining.ramps() && !Held.ramps());
        assert!(!Draining.intendable() && !Held.intendable());
    }

    #[test]
    fn the_table_knows_the_soonest_change_and_expires_into_auto() {
        let mut table = Overrides::none(3);
        table.set(0, o(Mode::Drain, 0, Some(50_000), 10));
        table.set(2, o(Mode::ForceUp, 0, Some(20_000), 0));
        table.set(7, o(Mode::Disable, 0, None, 0)); // past the end: ignored
        assert_eq!(table.len(), 3);
        assert_eq!(
            table.standings(5_000),
            vec![Standing::Draining, Standing::Auto, Standing::ForcedUp]
        );
        assert_eq!(table.next_change_ms(5_000), Some(10_000));
        assert_eq!(table.next_change_ms(10_000), Some(20_000));
        assert_eq!(table.next_change_ms(20_000), Some(50_000));
        assert_eq!(table.expire(20_000), vec![2]);
        assert_eq!(
            table.get(2).map(|o| (o.mode, o.set_at_ms)),
            Some((Mode::Auto, 20_000))
        );
        assert_eq!(table.expire(20_000), Vec::<usize>::new(), "once");
        assert_eq!(table.next_change_ms(20_000), Some(50_000));
    }

    #[test]
    fn held_origins_that_are_up_come_before_the_down_ones() {
        // Order from the policy: routable first, then the rest by priority.
        let up = [false, true, false, true];
        let held = [false, true, false, false];
        let routable = |i: usize| up[i] && !held[i];
        let held_up = |i: usize| up[i] && held[i];
        assert_eq!(
            last_resort(&[3, 0, 1, 2], routable, held_up),
            vec![3, 1, 0, 2]
        );
        // Nothing held: unchanged.
        assert_eq!(
            last_resort(&[1, 0, 2], |i| i == 1, |_| false),
            vec![1, 0, 2]
        );
    }
}
