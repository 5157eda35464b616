//! Starting, stopping and looking at the local connector. Three
//! controllers behind one trait: `systemd` for a packaged cloudflared,
//! `docker` for one in a container, `command` for tests and for hosts that
//! run cloudflared some other way.
//!
//! - `control`: [`ConnectorControl`], the trait every controller is.
//! - `error`: [`ControlError`], what every controller's failure is.
//! - `engine`: the Docker Engine API (`connector.docker_host`): its
//!   address, the API version spoken, the calls and their answers read.
//! - `docker`: the `docker` controller on top of it: the container's
//!   start, stop and state, and what a recreate, a daemon restart or a
//!   restart policy mean for them.

mod control;
mod docker;
mod engine;
mod error;

pub use control::{ConnectorControl, ControlConfig, Pending};
pub(crate) use docker::{check as check_docker, Docker};
pub use engine::DockerHost;
pub(crate) use engine::{check_container, DEFAULT_HOST as DEFAULT_DOCKER_HOST};
pub use error::ControlError;

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

/// The configured controller; `timeout` bounds each start, stop and look
/// (`connector.command_timeout`), `probe_timeout` the Engine's answer to a
/// stop once its grace has run out.
pub(crate) fn from_config(
    config: &ControlConfig,
    timeout: Duration,
    probe_timeout: Duration,
) -> Box<dyn ConnectorControl> {
    match config {
        ControlConfig::Docker { container, host } => Box::new(Docker::new(
            container.clone(),
            host.clone(),
            timeout,
            probe_timeout,
        )),
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
