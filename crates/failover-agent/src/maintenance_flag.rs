//! The maintenance flag: set while its file exists. Asked with
//! `try_exists`, because `exists()` says "no" on any error: a flag behind
//! a directory the agent may not search, or a symlink loop, read as "not
//! set", and a node an operator had put in maintenance served again. An
//! error counts as SET: maintenance on means this node does not serve,
//! which is what whoever set a flag wants, and it is the side an operator
//! can see (`/health`, the warning) and undo.

use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::log;

/// Whether a look at the flag means "set": it exists, or it could not be
/// looked at.
pub(crate) fn set_by(looked: &io::Result<bool>) -> bool {
    !matches!(looked, Ok(false))
}

/// What to tell about a look, given the error of the one before: only a
/// change, so that a flag unreadable for hours costs one line, not one a
/// poll.
#[derive(Debug, PartialEq, Eq)]
enum Change {
    Unreadable(ErrorKind),
    ReadableAgain,
}

fn change(before: Option<ErrorKind>, looked: &io::Result<bool>) -> Option<Change> {
    match (before, looked) {
        (Some(_), Ok(_)) => Some(Change::ReadableAgain),
        (before, Err(e)) if before != Some(e.kind()) => Some(Change::Unreadable(e.kind())),
        _ => None,
    }
}

/// The flag of this agent, and the error its last look met (the monitor and
/// a drain's wait both look; the warning is written once for both).
#[derive(Debug)]
pub(crate) struct MaintenanceFlag {
    path: PathBuf,
    unreadable: Mutex<Option<ErrorKind>>,
}

impl MaintenanceFlag {
    pub(crate) fn new(path: &Path) -> MaintenanceFlag {
        MaintenanceFlag {
            path: path.to_path_buf(),
            unreadable: Mutex::new(None),
        }
    }

    /// Whether the flag is set now; a change between readable and not is
    /// logged.
    pub(crate) fn is_set(&self) -> bool {
        let looked = self.path.try_exists();
        let mut unreadable = self.unreadable.lock().unwrap_or_else(|e| e.into_inner());
        match change(*unreadable, &looked) {
            Some(Change::Unreadable(_)) => {
                if let Err(e) = &looked {
                    log::warn(&unreadable_text(&self.path, e));
                }
            }
            Some(Change::ReadableAgain) => log::notice(&format!(
                "maintenance_flag {} can be looked at again: set only while it exists",
                self.path.display()
            )),
            None => {}
        }
        *unreadable = looked.as_ref().err().map(io::Error::kind);
        set_by(&looked)
    }
}

/// `check-config`'s look: the warning, if the flag cannot be looked at (as
/// this user: the agent's may differ).
pub fn unreadable(path: &Path) -> Option<String> {
    path.try_exists().err().map(|e| unreadable_text(path, &e))
}

/// The warning for a flag that cannot be looked at.
fn unreadable_text(path: &Path, error: &io::Error) -> String {
    format!(
        "maintenance_flag {}: cannot tell whether it exists ({error}); treated as SET (this \
         node does not serve) until it can be looked at: make its directory searchable by the \
         agent's user, or remove what is in the way",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(kind: ErrorKind) -> io::Result<bool> {
        Err(io::Error::from(kind))
    }

    #[test]
    fn an_error_is_set_and_only_a_clear_no_is_not() {
        assert!(set_by(&Ok(true)));
        assert!(!set_by(&Ok(false)));
        assert!(set_by(&err(ErrorKind::PermissionDenied)));
        assert!(set_by(&err(ErrorKind::Other)));
    }

    /// (the error before, this look, what is told).
    #[test]
    fn only_a_change_is_told() {
        use ErrorKind::{Other, PermissionDenied as Denied};
        let table: &[(Option<ErrorKind>, io::Result<bool>, Option<Change>)] = &[
            (None, Ok(false), None),
            (None, Ok(true), None),
            (None, err(Denied), Some(Change::Unreadable(Denied))),
            (Some(Denied), err(Denied), None),
            (Some(Denied), err(Other), Some(Change::Unreadable(Other))),
            (Some(Other), Ok(false), Some(Change::ReadableAgain)),
            (Some(Other), Ok(true), Some(Change::ReadableAgain)),
        ];
        for (before, looked, expected) in table {
            assert_eq!(
                change(*before, looked),
                *expected,
                "{before:?} then {looked:?}"
            );
        }
    }

    #[test]
    fn a_flag_in_a_symlink_loop_is_set() {
        let dir = std::env::temp_dir().join(format!("maintenance-flag-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink("loop", dir.join("loop")).unwrap();
        let flag = MaintenanceFlag::new(&dir.join("loop").join("maintenance"));
        assert!(flag.is_set());
        assert!(flag.unreadable.lock().unwrap().is_some());
        let absent = MaintenanceFlag::new(&dir.join("maintenance"));
        assert!(!absent.is_set());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
