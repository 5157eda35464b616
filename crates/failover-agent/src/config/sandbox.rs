//! What the packaged unit's sandbox hides from the agent
//! (packaging/failover-agent.service: `PrivateTmp=yes`, `ProtectHome=yes`),
//! for the paths an operator and the daemon must both see: a maintenance
//! flag there is set by the operator's shell and never seen by the agent.
//! A path is judged as written and as the filesystem resolves it today, so
//! a symlink into a hidden directory is refused too.

use std::io;
use std::path::{Component, Path, PathBuf};

/// The directories the unit hides or replaces with its own.
const HIDDEN_FROM_THE_UNIT: &[&str] = &["/tmp", "/var/tmp", "/home", "/root", "/run/user"];

/// More symlinks than this on one path is a loop (Linux's own limit).
const MAX_LINKS: usize = 40;

/// The hidden directory an absolute `path` lies in, as written or once its
/// symlinks are resolved.
pub(super) fn hidden_from_the_unit(path: &Path) -> Option<&'static str> {
    let written = hidden_as_written(path);
    // A path that cannot be resolved (a loop, a directory the agent may
    // not search) is judged as written: the flag's own look reports it.
    written.or_else(|| resolved(path).ok().and_then(|p| hidden_as_written(&p)))
}

/// The hidden directory `path` lies in, judged on the path as written with
/// `.` and `..` resolved (no symlink followed).
fn hidden_as_written(path: &Path) -> Option<&'static str> {
    let normal = lexical(path);
    HIDDEN_FROM_THE_UNIT
        .iter()
        .copied()
        .find(|dir| normal.starts_with(dir))
}

fn lexical(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

/// `path` with its symlinks resolved, though it need not exist: the deepest
/// ancestor that exists is canonicalized and the rest appended; a dangling
/// symlink where the rest begins (a flag file linked to where no file is
/// yet) is followed too.
fn resolved(path: &Path) -> io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let existing = path
            .ancestors()
            .find(|a| !a.as_os_str().is_empty() && a.try_exists().unwrap_or(false))
            .unwrap_or(Path::new("/"));
        let rest = path.strip_prefix(existing).unwrap_or(Path::new(""));
        let base = std::fs::canonicalize(existing)?;
        let mut parts = rest.components();
        let Some(first) = parts.next() else {
            return Ok(base);
        };
        let next = base.join(first);
        match std::fs::read_link(&next) {
            // Relative targets are taken from the link's directory; an
            // absolute one replaces `base` (`join`).
            Ok(target) => path = base.join(target).join(parts.as_path()),
            Err(_) => return Ok(lexical(&base.join(rest))),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_hidden_as_written_or_through_its_symlinks() {
        let dir = std::env::temp_dir().join(format!("sandbox-{}", std::process::id()));
        // Stands in for an unhidden directory: the test runs under /tmp
        // itself, so it is judged through a table of its own paths.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("real")).unwrap();
        std::os::unix::fs::symlink(&dir, dir.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.join("real/flag"), dir.join("dangling")).unwrap();
        std::os::unix::fs::symlink("loop", dir.join("loop")).unwrap();
        let real = std::fs::canonicalize(&dir).unwrap();
        for (path, expected) in [
            (dir.join("link/real/flag"), real.join("real/flag")),
            (dir.join("link/missing/more"), real.join("missing/more")),
            (dir.join("dangling"), real.join("real/flag")),
            (dir.join("link/real/../real/flag"), real.join("real/flag")),
        ] {
            assert_eq!(resolved(&path).unwrap(), expected, "{}", path.display());
        }
        assert!(resolved(&dir.join("loop/flag")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
