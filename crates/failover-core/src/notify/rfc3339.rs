//! Milliseconds since the Unix epoch as RFC 3339 UTC (`2026-12-02T19:21:04Z`),
//! with no date library: the civil-from-days algorithm (Howard Hinnant's
//! `civil_from_days`, proleptic Gregorian, exact for every `u64` ms we meet).

/// `ms` since 1970-01-01T00:00:00Z as `YYYY-MM-DDTHH:MM:SSZ` (whole seconds:
/// a receiver orders events by `at` and `id`, not by milliseconds).
pub fn format(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        let rows = [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400_000, "2000-02-29T00:00:00Z"), // leap day of a /400 year
            (4_107_542_399_000, "2100-02-28T23:59:59Z"), // 2100 is not leap
            (4_107_542_400_000, "2100-03-01T00:00:00Z"),
            (1_796_153_464_999, "2026-12-01T19:31:04Z"), // ms are dropped
        ];
        for (ms, want) in rows {
            assert_eq!(format(ms), want, "{ms}");
        }
    }

    #[test]
    fn every_day_follows_the_one_before() {
        // 200 years of days: the date only ever moves forward by one day.
        let mut last = String::new();
        for day in 0..73_000u64 {
            let text = format(day * 86_400_000);
            assert!(text > last, "{text} after {last}");
            last = text;
        }
    }
}
