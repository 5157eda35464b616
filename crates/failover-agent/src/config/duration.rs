//! Durations as the config writes them: `"30s"`, `"500ms"`, `"2h"`, compound
//! `"1m30s"` or `"1h2m3s500ms"` (units largest first, each once), or a bare
//! number of seconds (`"30"`, which the config has always accepted). Parsed
//! to milliseconds; [`format_ms`] writes a value back in the same grammar, so
//! `check-config` prints what the file could say.

use std::fmt;

/// The units, largest first: the order a compound duration must use.
const UNITS: &[(&str, u64)] = &[("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)];

/// Why a text is not a duration (the config names the key and the forms).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum DurationError {
    Empty,
    Negative,
    /// A unit with no number before it (`"s"`, `"1m s"`), or a stray
    /// character where a number should be.
    NoNumber,
    UnknownUnit(String),
    /// `"1m30"`: a number without a unit after one with (only a number
    /// alone means seconds).
    NoUnit(String),
    /// `"1m1m"`: the same unit twice.
    Repeated(&'static str),
    /// `"30s1m"`: a larger unit after a smaller one.
    OutOfOrder {
        unit: &'static str,
        after: &'static str,
    },
    Overflow,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Empty => f.write_str("empty"),
            DurationError::Negative => f.write_str("negative"),
            DurationError::NoNumber => f.write_str("a unit without a number"),
            DurationError::UnknownUnit(unit) => write!(f, "unknown unit {unit:?}"),
            DurationError::NoUnit(number) => write!(f, "`{number}` has no unit"),
            DurationError::Repeated(unit) => write!(f, "`{unit}` appears twice"),
            DurationError::OutOfOrder { unit, after } => {
                write!(f, "`{unit}` after `{after}` (largest unit first)")
            }
            DurationError::Overflow => f.write_str("too long"),
        }
    }
}

/// The text in milliseconds.
pub(crate) fn parse_ms(text: &str) -> Result<u64, DurationError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    if text.starts_with('-') {
        return Err(DurationError::Negative);
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return seconds(text);
    }
    let mut rest = text;
    let mut total: u64 = 0;
    // Index into UNITS of the last unit read: the next must come after it.
    let mut last: Option<usize> = None;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(DurationError::NoNumber);
        }
        let (number, after) = rest.split_at(digits);
        // The unit: a run of letters, or else the one character where it
        // should be (for the error).
        let letters = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit_len = if letters > 0 {
            letters
        } else {
            after.chars().next().map_or(0, char::len_utf8)
        };
        let (unit, tail) = after.split_at(unit_len);
        if unit.is_empty() {
            return Err(DurationError::NoUnit(number.to_string()));
        }
        let Some(index) = UNITS.iter().position(|(name, _)| *name == unit) else {
            return Err(DurationError::UnknownUnit(unit.to_string()));
        };
        if let Some(previous) = last {
            let name = UNITS[index].0;
            if index == previous {
                return Err(DurationError::Repeated(name));
            }
            if index < previous {
                return Err(DurationError::OutOfOrder {
                    unit: name,
                    after: UNITS[previous].0,
                });
            }
        }
        let n: u64 = number.parse().map_err(|_| DurationError::Overflow)?;
        total = n
            .checked_mul(UNITS[index].1)
            .and_then(|ms| total.checked_add(ms))
            .ok_or(DurationError::Overflow)?;
        last = Some(index);
        rest = tail;
    }
    Ok(total)
}

fn seconds(digits: &str) -> Result<u64, DurationError> {
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1_000))
        .ok_or(DurationError::Overflow)
}

/// `ms` in the grammar [`parse_ms`] reads, largest units first: `90000` is
/// `"1m30s"`, `0` is `"0ms"`.
pub(crate) fn format_ms(ms: u64) -> String {
    if ms == 0 {
        return "0ms".to_string();
    }
    let mut left = ms;
    let mut out = String::new();
    for (name, size) in UNITS {
        let n = left / size;
        if n > 0 {
            out.push_str(&n.to_string());
            out.push_str(name);
            left -= n * size;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms() {
        let table: &[(&str, u64)] = &[
            ("30s", 30_000),
            ("250ms", 250),
            ("2m", 120_000),
            ("2h", 7_200_000),
            ("1m30s", 90_000),
            ("1m30s500ms", 90_500),
            ("1h2m3s4ms", 3_723_004),
            ("1h500ms", 3_600_500),
            ("0s", 0),
            ("007s", 7_000),
            // A bare number is seconds, as it always was.
            ("30", 30_000),
            ("  45s  ", 45_000),
        ];
        for (text, ms) in table {
            assert_eq!(parse_ms(text), Ok(*ms), "{text:?}");
        }
    }

    #[test]
    fn refused_forms_say_why() {
        use DurationError::*;
        let table: &[(&str, DurationError)] = &[
            ("", Empty),
            ("   ", Empty),
            ("-1s", Negative),
            ("-30", Negative),
            ("s", NoNumber),
            ("ms", NoNumber),
            ("1m s", NoNumber),
            ("1 s", UnknownUnit(" ".into())),
            ("1m30", NoUnit("30".into())),
            ("1.5s", UnknownUnit(".".into())),
            ("3d", UnknownUnit("d".into())),
            ("10sec", UnknownUnit("sec".into())),
            ("5µs", UnknownUnit("µ".into())),
            ("1m1m", Repeated("m")),
            ("1s2s", Repeated("s")),
            (
                "30s1m",
                OutOfOrder {
                    unit: "m",
                    after: "s",
                },
            ),
            (
                "500ms1s",
                OutOfOrder {
                    unit: "s",
                    after: "ms",
                },
            ),
            ("+1s", NoNumber),
            ("18446744073709551616ms", Overflow),
            ("18446744073709551615", Overflow),
            ("5124095576030432h", Overflow),
            ("5124095576030431h59m", Overflow),
        ];
        for (text, why) in table {
            assert_eq!(parse_ms(text).as_ref(), Err(why), "{text:?}");
        }
    }

    #[test]
    fn hostile_text_is_refused_without_panicking() {
        for text in [
            "1".repeat(10_000) + "s",
            "1s".repeat(5_000),
            "\u{0}s".to_string(),
            "1\u{301}s".to_string(),
            "9".repeat(40),
            "1h\n2m".to_string(),
        ] {
            assert!(parse_ms(&text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn format_reads_back() {
        for ms in [
            0,
            1,
            999,
            1_000,
            59_999,
            60_000,
            90_500,
            3_600_000,
            3_723_004,
            u64::MAX / 1_000,
        ] {
            let text = format_ms(ms);
            assert_eq!(parse_ms(&text), Ok(ms), "{ms} -> {text}");
        }
        assert_eq!(format_ms(90_000), "1m30s");
        assert_eq!(format_ms(7_200_000), "2h");
        assert_eq!(format_ms(250), "250ms");
    }
}
