//! Draining this node at the edge before its connector stops (tunnel per
//! node, with the Worker's admin API): the agent asks the Worker to
//! `drain` its origin, then waits until the Worker reports the drain in
//! effect and the local cloudflared has had no request in flight for
//! `quiet_for`, bounded by `drain_timeout`; only then does it stop the
//! connector, so no request meets a connector on its way down. Once the
//! node serves again it gives the origin back to health (`auto`).
//!
//! [`QuietWait`] is the wait, one look at a time, on the caller's clock;
//! [`in_flight`] reads cloudflared's Prometheus text; [`resume_due`] says
//! when the drain is given back.

/// cloudflared's gauge of requests (HTTP, WebSocket and TCP streams) it is
/// proxying now (`proxy/metrics.go`: namespace `cloudflared`, subsystem
/// `tunnel`).
pub const IN_FLIGHT_GAUGE: &str = "cloudflared_tunnel_concurrent_requests_per_tunnel";

/// What one look says to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// Look again.
    Wait,
    /// Stop the connector now, and why.
    Stop(Stopping),
    /// The maintenance flag went away during the wait: keep serving, give
    /// the origin back to health, and carry out no stop.
    Cancel,
}

/// Why the wait ended in a stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopping {
    /// The drain was in effect and nothing in flight for `quiet_for`.
    Quiet,
    /// `drain_timeout` passed first: the stop goes ahead (a planned stop
    /// that waits forever is no longer planned), and cloudflared's own
    /// grace period still lets what is in flight finish.
    TimedOut,
}

/// The wait between the drain and the stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuietWait {
    until_ms: u64,
    quiet_for_ms: u64,
    /// Since when every look was quiet; `None` after a look that was not.
    quiet_since_ms: Option<u64>,
}

impl QuietWait {
    /// A wait that starts at `now_ms`, needs `quiet_for_ms` of quiet and
    /// ends by `now_ms + timeout_ms` whatever it sees.
    pub fn new(now_ms: u64, quiet_for_ms: u64, timeout_ms: u64) -> QuietWait {
        QuietWait {
            until_ms: now_ms.saturating_add(timeout_ms),
            quiet_for_ms,
            quiet_since_ms: None,
        }
    }

    /// One look: whether the flag is still set, whether the Worker reports
    /// the drain in effect (`None`: it did not answer, or not clearly), and
    /// the requests cloudflared has in flight (`None`: unknown, which is
    /// never quiet: an unknown count is not zero).
    pub fn observe(
        &mut self,
        now_ms: u64,
        flag_set: bool,
        in_effect: Option<bool>,
        in_flight: Option<u64>,
    ) -> Look {
        if !flag_set {
            return Look::Cancel;
        }
        if in_effect == Some(true) && in_flight == Some(0) {
            let since = *self.quiet_since_ms.get_or_insert(now_ms);
            if now_ms.saturating_sub(since) >= self.quiet_for_ms {
                return Look::Stop(Stopping::Quiet);
            }
        } else {
            self.quiet_since_ms = None;
        }
        if now_ms >= self.until_ms {
            return Look::Stop(Stopping::TimedOut);
        }
        Look::Wait
    }
}

/// The requests in flight, from cloudflared's `/metrics` text: the sum of
/// [`IN_FLIGHT_GAUGE`]'s samples (one per tunnel, with or without labels).
/// `None` when the gauge is absent or a sample is not a count (a NaN, a
/// negative, junk): unknown, not zero.
pub fn in_flight(metrics: &str) -> Option<u64> {
    let mut total: Option<u64> = None;
    for line in metrics.lines() {
        let Some(rest) = line.trim_start().strip_prefix(IN_FLIGHT_GAUGE) else {
            continue;
        };
        // The name must end here: another metric may share the prefix.
        let value = match rest.chars().next() {
            Some('{') => rest.rsplit_once('}').map(|(_, v)| v)?,
            Some(' ' | '\t') => rest,
            _ => continue,
        };
        // `value [timestamp]`.
        let number: f64 = value.split_whitespace().next()?.parse().ok()?;
        if !(0.0..=1e12).contains(&number) {
            return None;
        }
        total = Some(total.unwrap_or(0).saturating_add(number.round() as u64));
    }
    total
}

/// Whether to give the origin back to health now: this node drained it,
/// the flag is off, and its connector is ready again.
pub fn resume_due(drained_by_us: bool, maintenance: bool, local_ready: Option<bool>) -> bool {
    drained_by_us && !maintenance && local_ready == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: u64 = 5_000;
    const TIMEOUT: u64 = 120_000;

    /// Looks every 500 ms from 0, with what the Worker and cloudflared say
    /// at each time; the first answer that is not a wait, and when.
    fn run(world: impl Fn(u64) -> (bool, Option<bool>, Option<u64>)) -> (u64, Look) {
        let mut wait = QuietWait::new(0, QUIET, TIMEOUT);
        let mut t = 0;
        loop {
            let (flag, in_effect, in_flight) = world(t);
            let look = wait.observe(t, flag, in_effect, in_flight);
            if look != Look::Wait {
                return (t, look);
            }
            t += 500;
        }
    }

    #[test]
    fn stops_after_quiet_for_once_the_drain_is_in_effect() {
        // In effect at 2 s; requests in flight until 10 s.
        let (t, look) = run(|t| (true, Some(t >= 2_000), Some(u64::from(t < 10_000) * 3)));
        assert_eq!((t, look), (15_000, Look::Stop(Stopping::Quiet)));
    }

    #[test]
    fn a_request_in_the_quiet_window_starts_it_over() {
        let (t, look) = run(|t| (true, Some(true), Some(u64::from(t == 3_000))));
        assert_eq!((t, look), (8_500, Look::Stop(Stopping::Quiet)));
    }

    #[test]
    fn unknown_is_never_quiet_and_the_timeout_bounds_the_wait() {
        for world in [
            |_| (true, None, Some(0)),        // the Worker does not answer
            |_| (true, Some(false), Some(0)), // the drain is not in effect
            |_| (true, Some(true), None),     // no gauge
            |_| (true, Some(true), Some(1)),  // a WebSocket that never ends
        ] as [fn(u64) -> (bool, Option<bool>, Option<u64>); 4]
        {
            assert_eq!(run(world), (TIMEOUT, Look::Stop(Stopping::TimedOut)));
        }
    }

    #[test]
    fn the_flag_cleared_cancels() {
        let (t, look) = run(|t| (t < 4_000, Some(true), Some(2)));
        assert_eq!((t, look), (4_000, Look::Cancel));
    }

    #[test]
    fn the_gauge_is_read_from_cloudflareds_text_and_junk_is_unknown() {
        let text = "# HELP cloudflared_tunnel_concurrent_requests_per_tunnel Concurrent requests\n\
                    # TYPE cloudflared_tunnel_concurrent_requests_per_tunnel gauge\n\
                    cloudflared_tunnel_concurrent_requests_per_tunnel 3\n\
                    cloudflared_tunnel_concurrent_requests_per_tunnel_other 9\n\
                    cloudflared_tunnel_total_requests 1234\n";
        assert_eq!(in_flight(text), Some(3));
        let labelled = "cloudflared_tunnel_concurrent_requests_per_tunnel{connection=\"a\"} 2\n\
                        cloudflared_tunnel_concurrent_requests_per_tunnel{connection=\"b\"} 1e+00 1700000000000\n";
        assert_eq!(in_flight(labelled), Some(3));
        assert_eq!(
            in_flight("cloudflared_tunnel_concurrent_requests_per_tunnel 0\n"),
            Some(0)
        );
        for junk in [
            "",
            "cloudflared_tunnel_total_requests 5\n",
            "cloudflared_tunnel_concurrent_requests_per_tunnel NaN\n",
            "cloudflared_tunnel_concurrent_requests_per_tunnel -1\n",
            "cloudflared_tunnel_concurrent_requests_per_tunnel +Inf\n",
            "cloudflared_tunnel_concurrent_requests_per_tunnel two\n",
            "cloudflared_tunnel_concurrent_requests_per_tunnel\n",
            "cloudflared_tunnel_concurrent_requests_per_tunnel{a=\"}\n",
            "cloudflared_tunnel_concurrent_requests_per_tunnel 1e300\n",
        ] {
            assert_eq!(in_flight(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn resumed_only_when_ours_off_maintenance_and_ready() {
        assert!(resume_due(true, false, Some(true)));
        for (ours, flag, ready) in [
            (false, false, Some(true)),
            (true, true, Some(true)),
            (true, false, Some(false)),
            (true, false, None),
        ] {
            assert!(!resume_due(ours, flag, ready), "{ours} {flag} {ready:?}");
        }
    }
}
