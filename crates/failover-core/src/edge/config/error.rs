//! What a config error says, and to whom: the setting and the problem for
//! every visitor, the value for the log alone.

use std::borrow::Cow;
use std::fmt;

/// A setting that cannot be used, and why. What it displays (the body of
/// every response while the config is broken, seen by any visitor) names
/// the setting and the problem, never the value: a value can hold a
/// password (`https://user:pass@host`) or a secret's name. The value goes
/// to the Worker's log only (`value`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// A `[vars]` name, or one origin's key: `ORIGINS[1].weight`.
    pub setting: Cow<'static, str>,
    /// What is wrong, without the value.
    pub problem: String,
    /// The offending value as written, for the log alone.
    pub value: Option<String>,
}

impl ConfigError {
    /// The offending value, as JSON (`Shown`), for the log.
    pub(super) fn with_value(mut self, value: impl Shown) -> ConfigError {
        self.value = Some(value.shown());
        self
    }
}

/// A value as the log shows it: JSON, so a string is quoted and escaped
/// and a number is written as it was. Not `Debug`, whose `f64` formatting
/// alone is 14 KB of the request path's Wasm (serde_json writes floats
/// with its own small `ryu`).
pub trait Shown {
    /// The value as JSON text.
    fn shown(&self) -> String;
}

impl Shown for str {
    fn shown(&self) -> String {
        serde_json::Value::from(self).to_string()
    }
}

impl Shown for String {
    fn shown(&self) -> String {
        self.as_str().shown()
    }
}

impl Shown for serde_json::Value {
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl Shown for serde_json::Number {
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl Shown for u64 {
    fn shown(&self) -> String {
        self.to_string()
    }
}

/// Text already written for the log (a value with what was wrong in it).
impl Shown for fmt::Arguments<'_> {
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl<T: Shown + ?Sized> Shown for &T {
    fn shown(&self) -> String {
        (**self).shown()
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "configuration error in {}: {}",
            self.setting, self.problem
        )
    }
}

impl std::error::Error for ConfigError {}

pub(super) fn error(
    setting: impl Into<Cow<'static, str>>,
    problem: impl Into<String>,
) -> ConfigError {
    ConfigError {
        setting: setting.into(),
        problem: problem.into(),
        value: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The log shows values as JSON: strings quoted and escaped, numbers
    /// as written (a float too, without `Debug`'s formatting), text that
    /// was already written as it is.
    #[test]
    fn values_are_shown_as_json() {
        assert_eq!("a \"b\"\n".shown(), r#""a \"b\"\n""#);
        assert_eq!(String::from("x").shown(), r#""x""#);
        assert_eq!(json!(1.5).shown(), "1.5");
        assert_eq!(json!({"w": 2.25}).shown(), r#"{"w":2.25}"#);
        assert_eq!(7u64.shown(), "7");
        assert_eq!(format_args!("{}: bad", "x".shown()).shown(), r#""x": bad"#);
        let e = error("ORIGINS[0].weight", "is not a whole number").with_value(json!(1.5));
        assert_eq!(e.value.as_deref(), Some("1.5"));
        assert_eq!(
            e.to_string(),
            "configuration error in ORIGINS[0].weight: is not a whole number"
        );
    }
}
