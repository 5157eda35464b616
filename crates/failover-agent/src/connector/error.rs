//! Why a controller did not do its job. Read by a person (the log, an API
//! answer's cause), but typed: a caller that needs to tell a timeout from a
//! refusal, or a missing socket from a missing container, has the variant.

use std::fmt;
use std::io::ErrorKind;
use std::time::Duration;

use crate::client::ProbeError;

#[derive(Debug)]
pub enum ControlError {
    /// The program could not be started at all.
    Spawn {
        program: &'static str,
        source: std::io::Error,
    },
    /// Waiting for it failed.
    Wait {
        program: &'static str,
        source: std::io::Error,
    },
    /// It ran past its deadline and was killed.
    TimedOut {
        program: &'static str,
        after: Duration,
    },
    /// It ended with a status other than 0 (-1: killed by a signal).
    Exited { code: i32 },
    /// The Docker Engine at `connector.docker_host` could not be asked:
    /// no socket, a socket the agent may not use, a daemon that does not
    /// answer.
    EngineUnreachable { host: String, source: ProbeError },
    /// The Engine answered with an error status (its own message kept).
    EngineRefused {
        call: &'static str,
        status: u16,
        message: String,
    },
    /// The Engine answered 200 with something that is not what it
    /// documents (a proxy's page, a truncated body).
    EngineAnswer { call: &'static str, detail: String },
    /// No container of that name (`connector.container`).
    NoContainer { name: String },
    /// A stop whose answer was lost (the daemon restarted mid-stop) and
    /// whose outcome no look could settle before the deadline.
    StopUnsettled { name: String, after: Duration },
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlError::Spawn { program, source } => write!(f, "cannot run {program}: {source}"),
            ControlError::Wait { program, source } => write!(f, "{program}: {source}"),
            ControlError::TimedOut { program, after } => {
                write!(f, "{program} timed out after {} ms", after.as_millis())
            }
            ControlError::Exited { code } => write!(f, "exited with status {code}"),
            ControlError::EngineUnreachable { host, source } => {
                write!(f, "connector.docker_host {host}: ")?;
                unreachable_why(f, host, source)
            }
            ControlError::EngineRefused {
                call,
                status,
                message,
            } => write!(
                f,
                "the Docker Engine refused {call}: HTTP {status}: {}",
                crate::log::quoted(message)
            ),
            ControlError::EngineAnswer { call, detail } => write!(
                f,
                "the Docker Engine's answer to {call} is not one it documents: {detail} (is \
                 connector.docker_host a Docker Engine or a socket proxy in front of one?)"
            ),
            ControlError::NoContainer { name } => write!(
                f,
                "connector.container: no container named {name:?} (removed, renamed, or not \
                 created yet: `docker compose up --no-start` creates it without starting it)"
            ),
            ControlError::StopUnsettled { name, after } => write!(
                f,
                "the stop of container {name:?} lost its answer (the Docker daemon restarting?) \
                 and no look settled whether it stopped within {} ms; deciding nothing on a \
                 guess",
                after.as_millis()
            ),
        }
    }
}

/// What an unreachable Engine means for the operator, by the error's kind
/// (never its text).
fn unreachable_why(f: &mut fmt::Formatter<'_>, host: &str, source: &ProbeError) -> fmt::Result {
    let ProbeError::Connect(io) = source else {
        return write!(f, "{source}");
    };
    let path = host.strip_prefix("unix://");
    match (io.kind(), path) {
        (ErrorKind::NotFound, Some(_)) => write!(
            f,
            "no such socket (is dockerd running, and is its socket mounted into the agent's \
             container?)"
        ),
        (ErrorKind::PermissionDenied, Some(_)) => write!(
            f,
            "permission denied: the agent's user may not use the socket (run it as root or in \
             the socket's group, usually `docker`, or put a socket proxy in front and point \
             docker_host at it)"
        ),
        (ErrorKind::ConnectionRefused, Some(path)) if !is_socket(path) => {
            write!(f, "{path} is not a socket")
        }
        (ErrorKind::ConnectionRefused, Some(_)) => write!(
            f,
            "connection refused: the socket exists but no daemon listens (dockerd stopped or \
             restarting)"
        ),
        (ErrorKind::ConnectionRefused, None) => write!(
            f,
            "connection refused: nothing listens there (the socket proxy down?)"
        ),
        _ => write!(f, "{source}"),
    }
}

fn is_socket(path: &str) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

impl std::error::Error for ControlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ControlError::Spawn { source, .. } | ControlError::Wait { source, .. } => Some(source),
            ControlError::EngineUnreachable { source, .. } => Some(source),
            ControlError::TimedOut { .. }
            | ControlError::Exited { .. }
            | ControlError::EngineRefused { .. }
            | ControlError::EngineAnswer { .. }
            | ControlError::NoContainer { .. }
            | ControlError::StopUnsettled { .. } => None,
        }
    }
}
