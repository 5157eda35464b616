//! The agent's last decisions, newest first, for `/health` and `status`:
//! kept across restarts in `{state_dir}/history.json`, a small JSON file
//! written whole to a temporary name and renamed over the old one (a crash
//! mid-write leaves the old file, never half a new one).
//!
//! The file is read once, at start, as untrusted: a symlink, a FIFO, a
//! file over [`MAX_FILE_BYTES`] or one that does not parse is ignored with
//! a log line (the history starts empty), a row that does not parse is
//! skipped, and never more than [`KEEP`] rows are kept.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use failover_core::notify::Event;
use serde_json::{json, Value};

use crate::log;

/// Decisions kept, newest first.
pub(crate) const KEEP: usize = 20;
/// The file's name in the state directory.
pub(crate) const FILE: &str = "history.json";
/// Twenty events are a few kilobytes; a larger file is not ours.
const MAX_FILE_BYTES: u64 = 256 * 1024;

pub(crate) struct History {
    path: PathBuf,
    events: VecDeque<Event>,
}

impl History {
    /// The history kept in `state_dir`, or an empty one (with a log line
    /// when a file was there and was ignored).
    pub(crate) fn load(state_dir: &Path) -> History {
        let path = state_dir.join(FILE);
        let events = match read(&path) {
            Ok(events) => events,
            Err(Unread::Missing) => VecDeque::new(),
            Err(Unread::Ignored(why)) => {
                log::warn(&format!(
                    "{} ignored ({why}): the decision history starts empty and replaces it at \
                     the next decision",
                    path.display()
                ));
                VecDeque::new()
            }
        };
        History { path, events }
    }

    /// Adds `event` as the newest, and writes the file. A write that fails
    /// is logged; the history in memory goes on.
    pub(crate) fn record(&mut self, event: Event) {
        self.events.push_front(event);
        self.events.truncate(KEEP);
        if let Err(e) = write(&self.path, &self.to_json()) {
            log::warn(&format!(
                "cannot keep the decision history in {}: {e} (it lives in memory until the \
                 agent restarts; state_dir must be writable, as the unit's StateDirectory is)",
                self.path.display()
            ));
        }
    }

    /// The events, newest first, each as the notifications carry it.
    pub(crate) fn to_json(&self) -> Value {
        Value::Array(self.events.iter().map(Event::to_json).collect())
    }
}

/// Why nothing was read.
enum Unread {
    /// No file yet: the first start, or a new state directory.
    Missing,
    /// A file was there and is not one we wrote.
    Ignored(String),
}

fn read(path: &Path) -> Result<VecDeque<Event>, Unread> {
    // O_NOFOLLOW: a symlink planted in our place is refused, not followed
    // to /dev/zero or a file of someone else's. O_NONBLOCK: a FIFO opens
    // without a writer instead of hanging the start; it is refused below.
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let mut file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unread::Missing),
        Err(e) => return Err(Unread::Ignored(format!("cannot open it: {e}"))),
    };
    let meta = file
        .metadata()
        .map_err(|e| Unread::Ignored(format!("cannot stat it: {e}")))?;
    if !meta.is_file() {
        return Err(Unread::Ignored("not a regular file".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(Unread::Ignored(format!(
            "{} bytes, more than the {MAX_FILE_BYTES} a history takes",
            meta.len()
        )));
    }
    let mut text = String::new();
    // Bounded again: the file may grow between the stat and the read.
    (&mut file)
        .take(MAX_FILE_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| Unread::Ignored(format!("cannot read it as text: {e}")))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| Unread::Ignored(format!("not JSON: {e}")))?;
    let rows = value
        .get("events")
        .and_then(Value::as_array)
        .ok_or_else(|| Unread::Ignored("no \"events\" list".into()))?;
    Ok(rows
        .iter()
        .filter_map(Event::from_json)
        .take(KEEP)
        .collect())
}

/// The whole file to `path.tmp`, synced, then renamed over `path`.
fn write(path: &Path, events: &Value) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    // A temporary file left by a crash (or planted: O_NOFOLLOW refuses a
    // symlink) is replaced, never written through.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let body = json!({ "version": 1, "events": events }).to_string();
    let mut file: File = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o640)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    file.write_all(body.as_bytes())?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use failover_core::notify::{Kind, Source};

    fn event(n: u64) -> Event {
        Event {
            id: format!("e-{n}"),
            kind: Kind::FailBack,
            origin: None,
            at_ms: 1_796_153_464_000 + n,
            reason: format!("reason {n}"),
            site: "home".into(),
            source: Source::Agent,
            node: Some("home".into()),
            from: Some("stopped".into()),
            to: Some("serving".into()),
            more: 0,
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let root = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = root.join(format!(
            "failover-agent-history-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn ids(history: &History) -> Vec<String> {
        history.events.iter().map(|e| e.id.clone()).collect()
    }

    #[test]
    fn kept_newest_first_across_a_restart_and_bounded() {
        let dir = scratch("restart");
        let mut history = History::load(&dir);
        for n in 0..25 {
            history.record(event(n));
        }
        assert_eq!(history.events.len(), KEEP);
        assert_eq!(ids(&history)[0], "e-24");
        let again = History::load(&dir);
        assert_eq!(ids(&again), ids(&history));
        assert_eq!(again.events[0], event(24));
        // Written whole, then renamed: no temporary file is left.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(FILE)]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_broken_or_hostile_file_is_ignored_never_a_panic() {
        let dir = scratch("hostile");
        let path = dir.join(FILE);
        let junk_rows = json!({"events": [1, "x", null, {"id": "only"}, event(1).to_json()]});
        let many = json!({"events": (0..100).map(|n| event(n).to_json()).collect::<Vec<_>>()});
        let cases: Vec<(&str, Vec<u8>, usize)> = vec![
            ("not JSON", b"{\"events\": [".to_vec(), 0),
            ("binary", vec![0xff, 0x00, 0xfe], 0),
            ("a list, not an object", b"[]".to_vec(), 0),
            ("junk rows", junk_rows.to_string().into_bytes(), 1),
            ("huge", vec![b' '; (MAX_FILE_BYTES + 1) as usize], 0),
            ("too many rows", many.to_string().into_bytes(), KEEP),
        ];
        for (what, bytes, want) in cases {
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(History::load(&dir).events.len(), want, "{what}");
        }
        // A symlink (here to /dev/zero, which would never end) and a FIFO
        // (which would block the start) are refused.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert!(History::load(&dir).events.is_empty());
        std::fs::remove_file(&path).unwrap();
        let fifo = std::ffi::CString::new(path.to_string_lossy().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(History::load(&dir).events.is_empty());
        // The next decision replaces whatever was there with a good file.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/null", dir.join("history.json.tmp")).unwrap();
        let mut history = History::load(&dir);
        history.record(event(7));
        assert_eq!(ids(&History::load(&dir)), ["e-7"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unwritable_directory_keeps_the_history_in_memory() {
        let mut history = History::load(Path::new("/nonexistent/failover-agent"));
        history.record(event(1));
        assert_eq!(ids(&history), ["e-1"]);
        assert_eq!(history.to_json()[0]["type"], "node.fail-back");
    }
}
