//! Which probe answers mean "healthy", per origin (`health_expect` in
//! `ORIGINS`): a list of exact codes (`200`), classes (`2xx`) and inclusive
//! ranges (`200-399`). Absent, today's rule holds: a probe is healthy unless
//! it is a failure by [`classify`](crate::edge::classify)'s rules. Only probes are
//! judged by this; a client's attempt is always judged by the failure rules,
//! so an origin answering a client 404 is still an answer, not a failover.

use std::fmt;

use crate::edge::classify::{classify_status, Failure};

/// The lowest status a `health_expect` item may name.
pub const MIN_STATUS: u16 = 100;
/// The highest status a `health_expect` item may name.
pub const MAX_STATUS: u16 = 599;
/// More items than this is a typo, not a policy.
pub const MAX_ITEMS: usize = 32;

/// One comma-separated item, kept as written so `describe` reads back what
/// the operator wrote (normalised: `2XX` reads `2xx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusItem {
    /// `204`
    Code(u16),
    /// `2xx`: the hundred codes of a class (1 to 5).
    Class(u16),
    /// `200-399`, both ends included.
    Range(u16, u16),
}

impl StatusItem {
    fn contains(self, status: u16) -> bool {
        match self {
            StatusItem::Code(code) => status == code,
            StatusItem::Class(class) => status / 100 == class,
            StatusItem::Range(low, high) => (low..=high).contains(&status),
        }
    }
}

impl fmt::Display for StatusItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatusItem::Code(code) => write!(f, "{code}"),
            StatusItem::Class(class) => write!(f, "{class}xx"),
            StatusItem::Range(low, high) => write!(f, "{low}-{high}"),
        }
    }
}

/// The probe statuses that mean healthy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HealthExpect {
    /// No `health_expect`: healthy unless the status is a failure (5xx).
    #[default]
    NotFailure,
    /// Healthy only when the status matches one of these items.
    Statuses(Vec<StatusItem>),
}

/// Why a `health_expect` text was refused; the config error adds the
/// setting's name and the accepted forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectError(pub String);

impl HealthExpect {
    /// Parses `"200"`, `"2xx"`, `"200-399"`, `"2xx,304"` (spaces around
    /// items allowed, `X` in either case).
    pub fn parse(text: &str) -> Result<HealthExpect, ExpectError> {
        let mut items = Vec::new();
        for raw in text.split(',') {
            let item = raw.trim();
            if item.is_empty() {
                return Err(ExpectError(format!(
                    "{text:?} has an empty item; separate items with single commas"
                )));
            }
            items.push(parse_item(item)?);
        }
        if items.len() > MAX_ITEMS {
            return Err(ExpectError(format!(
                "{text:?} has {} items; at most {MAX_ITEMS} are accepted",
                items.len()
            )));
        }
        Ok(HealthExpect::Statuses(items))
    }

    /// True when a probe answered with `status` counts as a good probe.
    pub fn accepts(&self, status: u16) -> bool {
        match self {
            HealthExpect::NotFailure => classify_status(status).is_none(),
            HealthExpect::Statuses(items) => items.iter().any(|i| i.contains(status)),
        }
    }

    /// The probe's verdict on an answer, in the shape
    /// `HealthMap::record_probe` takes (None for a good probe). `by_rules` is
    /// what the failure rules make of the same response (`classify`), so the
    /// default stays exactly today's rule, whatever it grows to. An explicit
    /// expectation overrides only the rules' verdict on the status code; a
    /// failure they find elsewhere in the response (a redirect to an Access
    /// login page) still fails the probe. A refused status fails as itself,
    /// so the status endpoint shows `status 404` for a probe that wanted 2xx.
    pub fn judge_probe(&self, status: u16, by_rules: Option<Failure>) -> Option<Failure> {
        match self {
            HealthExpect::NotFailure => by_rules,
            HealthExpect::Statuses(_) if !self.accepts(status) => Some(Failure::Status(status)),
            HealthExpect::Statuses(_) => by_rules.filter(|f| !matches!(f, Failure::Status(_))),
        }
    }

    /// For the status endpoint: `"2xx,304"`, or `"not 5xx"` by default.
    pub fn describe(&self) -> String {
        match self {
            HealthExpect::NotFailure => "not 5xx".to_string(),
            HealthExpect::Statuses(items) => items
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

fn parse_item(item: &str) -> Result<StatusItem, ExpectError> {
    let bad = || {
        ExpectError(format!(
            "item {item:?} is not a status code (200), class (2xx) or range (200-399)"
        ))
    };
    let code = |digits: &str| -> Result<u16, ExpectError> {
        if digits.len() != 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let value: u16 = digits.parse().map_err(|_| bad())?;
        if !(MIN_STATUS..=MAX_STATUS).contains(&value) {
            return Err(ExpectError(format!(
                "status {value} in {item:?} is outside {MIN_STATUS}-{MAX_STATUS}"
            )));
        }
        Ok(value)
    };
    if let Some((low, high)) = item.split_once('-') {
        let (low, high) = (code(low.trim())?, code(high.trim())?);
        if low > high {
            return Err(ExpectError(format!(
                "range {item:?} runs backwards; write the lower code first"
            )));
        }
        return Ok(StatusItem::Range(low, high));
    }
    let lower = item.to_ascii_lowercase();
    if let Some(class) = lower.strip_suffix("xx") {
        return match class.as_bytes() {
            [digit @ b'1'..=b'5'] => Ok(StatusItem::Class(u16::from(digit - b'0'))),
            _ => Err(ExpectError(format!(
                "class {item:?} must be 1xx, 2xx, 3xx, 4xx or 5xx"
            ))),
        };
    }
    code(item).map(StatusItem::Code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_todays_rule() {
        let e = HealthExpect::default();
        for status in [101, 200, 204, 301, 404, 429, 499] {
            assert!(e.accepts(status), "{status}");
        }
        // An interim 1xx or a status past 599 is no answer (classify).
        for status in [100, 103, 500, 502, 530, 599, 600] {
            assert!(!e.accepts(status), "{status}");
            let by_rules = classify_status(status);
            assert_eq!(
                e.judge_probe(status, by_rules),
                Some(Failure::Status(status))
            );
        }
        // Whatever the rules say, the default says too.
        assert_eq!(
            e.judge_probe(302, Some(Failure::Network)),
            Some(Failure::Network)
        );
        assert_eq!(e.judge_probe(200, None), None);
        assert_eq!(e.describe(), "not 5xx");
    }

    #[test]
    fn accepted_statuses() {
        // text, accepted, refused, describe
        let table: &[(&str, &[u16], &[u16], &str)] = &[
            ("200", &[200], &[199, 201, 204, 404, 500], "200"),
            ("2xx", &[200, 204, 299], &[199, 300, 404], "2xx"),
            ("2XX", &[250], &[300], "2xx"),
            ("200-399", &[200, 301, 399], &[199, 400, 500], "200-399"),
            ("2xx,304", &[200, 204, 304], &[301, 404], "2xx,304"),
            (" 204 , 4xx ", &[204, 404, 418], &[200, 500], "204,4xx"),
            ("503", &[503], &[200], "503"),
            ("100-599", &[100, 599], &[], "100-599"),
            ("301 - 302", &[301, 302], &[303], "301-302"),
        ];
        for (text, accepted, refused, describe) in table {
            let e = HealthExpect::parse(text).expect("valid");
            for s in *accepted {
                assert!(e.accepts(*s), "{text} should accept {s}");
                assert_eq!(e.judge_probe(*s, classify_status(*s)), None, "{text} {s}");
            }
            for s in *refused {
                assert!(!e.accepts(*s), "{text} should refuse {s}");
                let by_rules = classify_status(*s);
                assert_eq!(
                    e.judge_probe(*s, by_rules),
                    Some(Failure::Status(*s)),
                    "{text} {s}"
                );
            }
            assert_eq!(&e.describe(), describe, "{text}");
            assert_eq!(
                HealthExpect::parse(&e.describe()),
                Ok(e.clone()),
                "describe reads back"
            );
        }
    }

    /// A failure the rules find beyond the status code (standing in here:
    /// `Network`; in the Worker, a redirect to an Access login page) fails
    /// the probe even when the status is expected.
    #[test]
    fn other_failures_still_count() {
        let e = HealthExpect::parse("2xx,3xx").expect("valid");
        assert_eq!(
            e.judge_probe(302, Some(Failure::Network)),
            Some(Failure::Network)
        );
        assert_eq!(e.judge_probe(302, None), None);
        let e = HealthExpect::parse("503").expect("valid");
        assert_eq!(e.judge_probe(503, classify_status(503)), None);
    }

    #[test]
    fn refused_texts_say_why() {
        let table = [
            ("abc", "not a status code"),
            ("", "empty item"),
            ("200,", "empty item"),
            (",200", "empty item"),
            ("2xx,,3xx", "empty item"),
            ("99", "not a status code"),
            ("0200", "not a status code"),
            ("+200", "not a status code"),
            ("600", "outside 100-599"),
            ("099", "outside 100-599"),
            ("6xx", "must be 1xx"),
            ("0xx", "must be 1xx"),
            ("xx", "must be 1xx"),
            ("20x", "not a status code"),
            ("399-200", "runs backwards"),
            ("200-", "not a status code"),
            ("-200", "not a status code"),
            ("200-300-400", "not a status code"),
            ("200-600", "outside 100-599"),
            ("2 00", "not a status code"),
            ("２００", "not a status code"),
        ];
        for (text, needle) in table {
            let ExpectError(why) = HealthExpect::parse(text).expect_err(text);
            assert!(why.contains(needle), "{text:?}: {why:?} lacks {needle:?}");
        }
        let many = vec!["200"; MAX_ITEMS + 1].join(",");
        let ExpectError(why) = HealthExpect::parse(&many).expect_err("too many");
        assert!(why.contains("at most"), "{why}");
    }
}
