//! One line per decision or transition, on stderr. Under systemd (which sets
//! JOURNAL_STREAM) each line carries a `<N>` priority prefix that journald
//! turns into the entry's priority.

use std::io::Write;

#[derive(Clone, Copy)]
pub enum Level {
    Error,
    Warning,
    Notice,
    Info,
}

impl Level {
    fn priority(self) -> u8 {
        match self {
            Level::Error => 3,
            Level::Warning => 4,
            Level::Notice => 5,
            Level::Info => 6,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Notice => "notice",
            Level::Info => "info",
        }
    }
}

pub fn line(level: Level, message: &str) {
    let text = if std::env::var_os("JOURNAL_STREAM").is_some() {
        format!("<{}>{message}\n", level.priority())
    } else {
        format!("failover-agent {}: {message}\n", level.name())
    };
    // A closed stderr must not take the agent down.
    let _ = std::io::stderr().write_all(text.as_bytes());
}

pub fn info(message: &str) {
    line(Level::Info, message);
}

pub fn notice(message: &str) {
    line(Level::Notice, message);
}

pub fn warn(message: &str) {
    line(Level::Warning, message);
}

pub fn error(message: &str) {
    line(Level::Error, message);
}
