//! Starting, stopping and looking at the local connector. Two controllers
//! behind one trait: `systemd` for production, `command` for tests and for
//! hosts that run cloudflared some other way.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::config::ControlConfig;

pub type Pending<'a, T> = Pin<Box<dyn Future<Output = Result<T, ControlError>> + Send + 'a>>;

/// Why a connector command did not do its job. Read by a person (the log,
/// an API answer's cause), but typed: a caller that needs to tell a timeout
/// from a refusal has the variant.
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
        }
    }
}

impl std::error::Error for ControlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ControlError::Spawn { source, .. } | ControlError::Wait { source, .. } => Some(source),
            ControlError::TimedOut { .. } | ControlError::Exited { .. } => None,
        }
    }
}

pub trait ConnectorControl: Send + Sync {
    fn start(&self) -> Pending<'_, ()>;
    fn stop(&self) -> Pending<'_, ()>;
    /// Process state only; readiness is asked of the connector itself.
    fn is_running(&self) -> Pending<'_, bool>;
    fn describe(&self) -> String;
}

pub(crate) fn from_config(config: &ControlConfig, timeout: Duration) -> Box<dyn ConnectorControl> {
    match config {
        ControlConfig::Systemd { unit } => Box::new(Systemd {
            unit: unit.clone(),
            timeout,
        }),
        ControlConfig::Command {
            start,
            stop,
            status,
        } => Box::new(Commands {
            start: start.clone(),
            stop: stop.clone(),
            status: status.clone(),
            timeout,
        }),
    }
}

pub(crate) struct Systemd {
    unit: String,
    timeout: Duration,
}

impl ConnectorControl for Systemd {
    fn start(&self) -> Pending<'_, ()> {
        Box::pin(
            async move { succeed(run("systemctl", &["start", &self.unit], self.timeout).await?) },
        )
    }

    fn stop(&self) -> Pending<'_, ()> {
        Box::pin(
            async move { succeed(run("systemctl", &["stop", &self.unit], self.timeout).await?) },
        )
    }

    fn is_running(&self) -> Pending<'_, bool> {
        Box::pin(async move {
            let code = run(
                "systemctl",
                &["is-active", "--quiet", &self.unit],
                self.timeout,
            )
            .await?;
            Ok(code == 0)
        })
    }

    fn describe(&self) -> String {
        format!("systemd unit {}", self.unit)
    }
}

pub(crate) struct Commands {
    start: String,
    stop: String,
    status: String,
    timeout: Duration,
}

impl ConnectorControl for Commands {
    fn start(&self) -> Pending<'_, ()> {
        Box::pin(async move { succeed(run("sh", &["-c", &self.start], self.timeout).await?) })
    }

    fn stop(&self) -> Pending<'_, ()> {
        Box::pin(async move { succeed(run("sh", &["-c", &self.stop], self.timeout).await?) })
    }

    fn is_running(&self) -> Pending<'_, bool> {
        Box::pin(async move { Ok(run("sh", &["-c", &self.status], self.timeout).await? == 0) })
    }

    fn describe(&self) -> String {
        "start/stop/status commands".into()
    }
}

fn succeed(code: i32) -> Result<(), ControlError> {
    if code == 0 {
        Ok(())
    } else {
        Err(ControlError::Exited { code })
    }
}

/// Runs a command with a deadline; its stderr goes to ours (and so to the
/// journal), stdout is dropped. Returns the exit code.
async fn run(program: &'static str, args: &[&str], timeout: Duration) -> Result<i32, ControlError> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| ControlError::Spawn { program, source })?;
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) => Ok(status.code().unwrap_or(-1)),
        Ok(Err(source)) => Err(ControlError::Wait { program, source }),
        Err(_) => {
            let _ = child.kill().await;
            Err(ControlError::TimedOut {
                program,
                after: timeout,
            })
        }
    }
}
