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
    /// The offending value, quoted as written, for the log.
    pub(super) fn with_value(mut self, value: impl fmt::Debug) -> ConfigError {
        self.value = Some(format!("{value:?}"));
        self
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
