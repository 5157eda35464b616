//! One line per decision or transition, on stderr. Under systemd (which sets
//! JOURNAL_STREAM) each line carries a `<N>` priority prefix that journald
//! turns into the entry's priority.
//!
//! Lines less severe than the threshold are dropped: `log_level` in the
//! config, moved by `-v`/`-q` ([`set_threshold`]). The levels are journald's
//! priorities, so `journalctl -p` filters the same way.
//!
//! A line is always one line: control characters are escaped wherever they
//! come from, so a peer or app that answers `"\n<3>..."` cannot forge a
//! journal entry of its own. Text another party chose goes through
//! [`quoted`], which also bounds its length.

use std::fmt::Write as _;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

/// The most bytes of another party's text (a peer's refusal, a redirect's
/// `Location`) that one line carries: enough to read why, too little to
/// flood the journal.
pub const QUOTED_MAX: usize = 512;

/// A line's severity, most severe first (journald's priorities 3 to 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warning,
    Notice,
    /// Decisions and transitions: the default threshold.
    Info,
    /// Every check, also those that changed nothing.
    Debug,
}

impl Level {
    const ALL: [Level; 5] = [
        Level::Error,
        Level::Warning,
        Level::Notice,
        Level::Info,
        Level::Debug,
    ];
    /// The names `log_level` accepts, most severe first.
    pub const NAMES: [&'static str; 5] = ["error", "warning", "notice", "info", "debug"];

    fn priority(self) -> u8 {
        match self {
            Level::Error => 3,
            Level::Warning => 4,
            Level::Notice => 5,
            Level::Info => 6,
            Level::Debug => 7,
        }
    }

    pub fn name(self) -> &'static str {
        Level::NAMES[usize::from(self.priority() - 3)]
    }

    /// A name from [`Level::NAMES`].
    pub fn parse(name: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.name() == name)
    }

    /// `steps` levels more verbose (positive, `-v`) or quieter (negative,
    /// `-q`), stopping at `debug` and `error`: errors are always logged.
    pub fn shifted(self, steps: i16) -> Level {
        let index = (i16::from(self.priority()) - 3).saturating_add(steps);
        Level::ALL[index.clamp(0, 4) as usize]
    }
}

/// The least severe priority logged; info until [`set_threshold`].
static THRESHOLD: AtomicU8 = AtomicU8::new(6);

/// Lines less severe than `level` are dropped from now on (process-wide).
pub fn set_threshold(level: Level) {
    THRESHOLD.store(level.priority(), Ordering::Relaxed);
}

/// Whether a line at `level` would be written: to skip building one.
pub fn enabled(level: Level) -> bool {
    level.priority() <= THRESHOLD.load(Ordering::Relaxed)
}

pub fn line(level: Level, message: &str) {
    if !enabled(level) {
        return;
    }
    let message = escape_controls(message);
    let text = if std::env::var_os("JOURNAL_STREAM").is_some() {
        format!("<{}>{message}\n", level.priority())
    } else {
        format!("failover-agent {}: {message}\n", level.name())
    };
    // A closed stderr must not take the agent down.
    let _ = std::io::stderr().write_all(text.as_bytes());
}

pub fn debug(message: &str) {
    line(Level::Debug, message);
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

/// `message` with every control character (newline, carriage return, ESC,
/// C1 controls...) written as a Rust-style escape; everything else as is.
fn escape_controls(message: &str) -> std::borrow::Cow<'_, str> {
    if !message.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(message.len() + 8);
    for c in message.chars() {
        push_escaped(&mut out, c, false);
    }
    std::borrow::Cow::Owned(out)
}

fn push_escaped(out: &mut String, c: char, in_quotes: bool) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '"' | '\\' if in_quotes => {
            out.push('\\');
            out.push(c);
        }
        c if c.is_control() => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// Another party's text for a log line: in double quotes, control
/// characters, quotes and backslashes escaped, at most [`QUOTED_MAX`] bytes
/// inside the quotes (cut on a character boundary), and how much was cut.
pub fn quoted(text: &str) -> String {
    let mut inside = String::new();
    let mut taken = 0;
    for c in text.chars() {
        let mut one = String::new();
        push_escaped(&mut one, c, true);
        if inside.len() + one.len() > QUOTED_MAX {
            break;
        }
        inside.push_str(&one);
        taken += c.len_utf8();
    }
    let cut = text.len() - taken;
    if cut == 0 {
        format!("\"{inside}\"")
    } else {
        format!("\"{inside}\" ({cut} more bytes not shown)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_read_back_and_shift_within_bounds() {
        for level in Level::ALL {
            assert_eq!(Level::parse(level.name()), Some(level));
        }
        for bad in ["", "INFO", "warn", "err", "7", "info ", "trace"] {
            assert_eq!(Level::parse(bad), None, "{bad:?}");
        }
        assert_eq!(Level::Info.shifted(1), Level::Debug);
        assert_eq!(Level::Info.shifted(9), Level::Debug);
        assert_eq!(Level::Info.shifted(-1), Level::Notice);
        assert_eq!(Level::Info.shifted(-3), Level::Error);
        assert_eq!(Level::Warning.shifted(-200), Level::Error);
        assert_eq!(Level::Error.shifted(i16::MAX), Level::Debug);
        assert_eq!(Level::Debug.shifted(i16::MIN), Level::Error);
    }

    #[test]
    fn a_line_stays_one_line() {
        let forged = "refused\n<3>forged entry\r\x1b[31m\u{85}end";
        let escaped = escape_controls(forged);
        assert_eq!(escaped, "refused\\n<3>forged entry\\r\\u{1b}[31m\\u{85}end");
        assert!(!escaped.chars().any(char::is_control));
        assert!(matches!(
            escape_controls("plain <3> text"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn quoted_text_is_escaped_and_bounded() {
        assert_eq!(quoted("busy"), "\"busy\"");
        assert_eq!(quoted("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        let huge = "x".repeat(10_000);
        let q = quoted(&huge);
        assert!(
            q.starts_with(&format!("\"{}\"", "x".repeat(QUOTED_MAX))),
            "{q}"
        );
        assert!(q.ends_with("(9488 more bytes not shown)"), "{q}");
        // Multi-byte characters and escapes are never split.
        for text in [
            "é".repeat(600),
            "\n".repeat(600),
            format!("x{}", "€".repeat(300)),
        ] {
            let q = quoted(&text);
            let inside = q[1..].split('"').next().unwrap_or_default();
            assert!(inside.len() <= QUOTED_MAX, "{} bytes", inside.len());
            assert!(!q.chars().any(char::is_control));
        }
    }
}
