//! Files that hold a secret: the shared token, a webhook's URL or signing
//! key, the Worker's admin token. Each is refused unless its owner alone
//! may read it, unless it is a regular file of reasonable size (a symlink
//! to a device or a FIFO would hang or flood the read), and when it is
//! empty or shorter than its use needs. Its text is trimmed and never
//! shown in an error.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{err, ConfigError};

/// No secret is longer: a larger file is the wrong file.
const MAX_BYTES: u64 = 64 * 1024;

/// What a secret is for, in the words of its errors.
pub(super) struct Use<'a> {
    /// What someone who reads it can do: "anyone on the host who reads it
    /// can ...".
    pub readers_can: &'a str,
    /// At least this many characters.
    pub min_chars: usize,
    /// Why that many: "(it keys the peers' signed orders)".
    pub why_long: &'a str,
}

pub(super) fn read(key: &str, path: &Path, use_: &Use<'_>) -> Result<String, ConfigError> {
    let cannot = |e: std::io::Error| err(key, format!("cannot read {}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if !meta.is_file() {
        return Err(err(
            key,
            format!("{} is not a regular file", path.display()),
        ));
    }
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(err(
            key,
            format!(
                "{} is readable by group or others (mode {:04o}): anyone on the host who reads \
                 it {}; chmod 600 it",
                path.display(),
                mode & 0o7777,
                use_.readers_can
            ),
        ));
    }
    if meta.len() > MAX_BYTES {
        return Err(err(
            key,
            format!(
                "{} holds {} bytes; a secret is one line (at most {MAX_BYTES} bytes)",
                path.display(),
                meta.len()
            ),
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(cannot)?
        .trim()
        .to_string();
    if text.is_empty() {
        return Err(err(key, format!("{} is empty", path.display())));
    }
    let chars = text.chars().count();
    if chars < use_.min_chars {
        return Err(err(
            key,
            format!(
                "the secret in {} has {chars} characters; at least {} are needed {}, e.g. \
                 `head -c 32 /dev/urandom | base64`",
                path.display(),
                use_.min_chars,
                use_.why_long
            ),
        ));
    }
    Ok(text)
}
