//! Starting, stopping and looking at the local connector. Two controllers
//! behind one trait: `systemd` for production, `command` for tests and for
//! hosts that run cloudflared some other way.

use std::future::Future;
use std::pin::Pin;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::config::ControlConfig;

pub type Pending<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

pub trait ConnectorControl: Send + Sync {
    fn start(&self) -> Pending<'_, ()>;
    fn stop(&self) -> Pending<'_, ()>;
    /// Process state only; readiness is asked of the connector itself.
    fn is_running(&self) -> Pending<'_, bool>;
    fn describe(&self) -> String;
}

pub fn from_config(config: &ControlConfig, timeout: Duration) -> Box<dyn ConnectorControl> {
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

pub struct Systemd {
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

pub struct Commands {
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

fn succeed(code: i32) -> Result<(), String> {
    if code == 0 {
        Ok(())
    } else {
        Err(format!("exited with status {code}"))
    }
}

/// Runs a command with a deadline; its stderr goes to ours (and so to the
/// journal), stdout is dropped. Returns the exit code.
async fn run(program: &str, args: &[&str], timeout: Duration) -> Result<i32, String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) => Ok(status.code().unwrap_or(-1)),
        Ok(Err(e)) => Err(format!("{program}: {e}")),
        Err(_) => {
            let _ = child.kill().await;
            Err(format!(
                "{program} timed out after {} ms",
                timeout.as_millis()
            ))
        }
    }
}
