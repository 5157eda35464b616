//! Times for a person, in UTC and without a date library: how long ago
//! ("12s ago"), when exactly ("2026-08-01 12:00:05 UTC"), the time of day
//! alone when it is today's ("19:21 UTC"), and a setting's duration. The
//! page runs no script, so every time is written here, as of the document's
//! `now_ms`.

/// `12s ago`, `3m 5s ago`, `in 2s` (a shared verdict stamped by a clock
/// slightly ahead), `just now` within a second either way.
pub fn ago(now_ms: Option<u64>, then_ms: Option<u64>) -> String {
    let (Some(now), Some(then)) = (now_ms, then_ms) else {
        return unknown();
    };
    let (gap, future) = if then > now {
        (then - now, true)
    } else {
        (now - then, false)
    };
    match (gap < 1000, future) {
        (true, _) => "just now".to_string(),
        (false, true) => format!("in {}", span(gap)),
        (false, false) => format!("{} ago", span(gap)),
    }
}

/// A gap in its two largest units, whole and rounded down: `59s`, `1m 0s`,
/// `2h 5m`, `3d 4h`.
pub fn span(ms: u64) -> String {
    let s = ms / 1000;
    let (m, h, d) = (s / 60, s / 3600, s / 86_400);
    if m == 0 {
        format!("{s}s")
    } else if h == 0 {
        format!("{m}m {}s", s % 60)
    } else if d == 0 {
        format!("{h}h {}m", m % 60)
    } else {
        format!("{d}d {}h", h % 24)
    }
}

/// A setting's duration: whole seconds as `6 s`, anything else in ms.
pub fn duration(ms: u64) -> String {
    match (ms / 1000, ms % 1000) {
        (s, 0) if s > 0 => format!("{s} s"),
        _ => format!("{ms} ms"),
    }
}

/// The last instant both this and JavaScript's `toISOString` write with a
/// four-digit year (9999-12-31T23:59:59.999Z); later ones read `?`.
pub const LAST_MS: u64 = 253_402_300_799_999;

/// `2026-08-01 12:00:05 UTC`.
pub fn utc(ms: u64) -> String {
    calendar(ms).map_or_else(unknown, |(y, mo, d, h, mi, s, _)| {
        format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
    })
}

/// How precisely [`moment`] writes the time of day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// `19:21`: a headline's "since".
    Minutes,
    /// `19:21:04`: a row of the history, where a drill's changes are
    /// seconds apart.
    Seconds,
}

/// `19:21 UTC` when `ms` falls on the same UTC day as `now_ms`, else with
/// the date, `2026-07-31 19:21 UTC` (also when `now_ms` is unknown).
pub fn moment(ms: u64, now_ms: Option<u64>, precision: Precision) -> String {
    let Some((y, mo, d, h, mi, s, _)) = calendar(ms) else {
        return unknown();
    };
    let time = match precision {
        Precision::Minutes => format!("{h:02}:{mi:02}"),
        Precision::Seconds => format!("{h:02}:{mi:02}:{s:02}"),
    };
    let today = now_ms.is_some_and(|now| now <= LAST_MS && now / 86_400_000 == ms / 86_400_000);
    if today {
        format!("{time} UTC")
    } else {
        format!("{y:04}-{mo:02}-{d:02} {time} UTC")
    }
}

/// `2026-08-01T12:00:05.123Z`, as JavaScript's `Date.prototype.toISOString`.
pub fn iso(ms: u64) -> Option<String> {
    calendar(ms).map(|(y, mo, d, h, mi, s, milli)| {
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
    })
}

/// (year, month, day, hour, minute, second, ms) in UTC; the date part is
/// Howard Hinnant's `civil_from_days`, here on days since 1970 that cannot
/// be negative.
fn calendar(ms: u64) -> Option<(u64, u64, u64, u64, u64, u64, u64)> {
    if ms > LAST_MS {
        return None;
    }
    let (days, in_day) = (ms / 86_400_000, ms % 86_400_000);
    let z = days + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    let s = in_day / 1000;
    Some((
        year,
        month,
        day,
        s / 3600,
        s / 60 % 60,
        s % 60,
        in_day % 1000,
    ))
}

/// What every unreadable value reads as.
pub fn unknown() -> String {
    "?".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times() {
        let now = Some(10_000_000);
        let cases = [
            (Some(10_000_000), "just now"),
            (Some(9_999_001), "just now"),
            (Some(10_000_999), "just now"),
            (Some(9_999_000), "1s ago"),
            (Some(9_941_000), "59s ago"),
            (Some(9_940_000), "1m 0s ago"),
            (Some(10_000_000 - 3_599_999), "59m 59s ago"),
            (Some(10_000_000 - 3_600_000), "1h 0m ago"),
            (Some(10_002_500), "in 2s"),
            (Some(0), "2h 46m ago"),
            (None, "?"),
        ];
        for (then, text) in cases {
            assert_eq!(ago(now, then), text, "{then:?}");
        }
        assert_eq!(
            ago(Some(3 * 86_400_000 + 5 * 3_600_000), Some(0)),
            "3d 5h ago"
        );
        assert_eq!(ago(None, Some(1)), "?");
    }

    #[test]
    fn absolute_times() {
        let cases = [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_785_585_605_123, "2026-08-01T12:00:05.123Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
            (LAST_MS, "9999-12-31T23:59:59.999Z"),
        ];
        for (ms, text) in cases {
            assert_eq!(iso(ms).as_deref(), Some(text), "{ms}");
        }
        assert_eq!(iso(LAST_MS + 1), None);
        assert_eq!(utc(1_785_585_605_123), "2026-08-01 12:00:05 UTC");
        assert_eq!(utc(u64::MAX), "?");
    }

    #[test]
    fn moments_carry_the_date_only_when_not_today() {
        // 2026-08-01 12:00:05.123 UTC.
        let now = Some(1_785_585_605_123);
        let midnight = 1_785_542_400_000; // 2026-08-01 00:00:00
        let cases = [
            (midnight, now, Precision::Minutes, "00:00 UTC"),
            (midnight + 69_664_000, now, Precision::Minutes, "19:21 UTC"),
            (
                midnight + 69_664_000,
                now,
                Precision::Seconds,
                "19:21:04 UTC",
            ),
            (
                midnight - 1,
                now,
                Precision::Minutes,
                "2026-07-31 23:59 UTC",
            ),
            (
                midnight - 1,
                now,
                Precision::Seconds,
                "2026-07-31 23:59:59 UTC",
            ),
            (
                midnight + 86_400_000,
                now,
                Precision::Minutes,
                "2026-08-02 00:00 UTC",
            ),
            (midnight, None, Precision::Minutes, "2026-08-01 00:00 UTC"),
            (
                midnight,
                Some(u64::MAX),
                Precision::Minutes,
                "2026-08-01 00:00 UTC",
            ),
            (u64::MAX, now, Precision::Seconds, "?"),
        ];
        for (ms, now, precision, text) in cases {
            assert_eq!(moment(ms, now, precision), text, "{ms} {now:?}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(duration(6000), "6 s");
        assert_eq!(duration(1500), "1500 ms");
        assert_eq!(duration(0), "0 ms");
    }
}
