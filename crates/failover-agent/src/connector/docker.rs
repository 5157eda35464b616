//! `connector.control = "docker"`: cloudflared in a container, started,
//! stopped and looked at through the Engine API ([`super::engine`]).
//!
//! What the controller settles, and how:
//! 1. A start or stop answered 304 (so already) is success.
//! 2. A stop gives cloudflared its grace: `t` = `command_timeout` in
//!    seconds (30 s, cloudflared's own `--grace-period` default), as
//!    `systemctl stop` waits out the unit's stop; Docker's default (10 s)
//!    would kill it mid-drain. The answer is awaited `probe_timeout`
//!    longer.
//! 3. A stop whose answer is lost (refused, cut, timed out: dockerd
//!    restarting mid-stop) has an unknown outcome: the container is looked
//!    at again until one look answers, then stopped again if it runs; no
//!    answer before the stop's deadline is an error, never a guess.
//! 4. A new `Id` under the same name (compose recreated it) is logged and
//!    the name followed; a restart policy that fights the agent (`always`,
//!    `unless-stopped`) or a container stuck `restarting` is warned of once
//!    per container.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::control::{ConnectorControl, Pending};
use super::engine::DockerHost;
use super::engine::{Engine, Inspected, Status};
use super::error::ControlError;
use crate::log;

/// Between two looks at a container whose stop lost its answer.
const SETTLE_POLL: Duration = Duration::from_millis(500);

pub(crate) struct Docker {
    name: String,
    engine: Engine,
    timeout: Duration,
    probe_timeout: Duration,
    seen: Mutex<Seen>,
}

/// What the last look found, to log changes once.
#[derive(Default)]
struct Seen {
    id: Option<String>,
    status: Option<Status>,
}

impl Docker {
    pub(crate) fn new(
        name: String,
        host: DockerHost,
        timeout: Duration,
        probe_timeout: Duration,
    ) -> Docker {
        Docker {
            name,
            engine: Engine::new(host),
            timeout,
            probe_timeout,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// The seconds a stop gives cloudflared before SIGKILL.
    fn grace_secs(&self) -> u64 {
        self.timeout.as_secs().max(1)
    }

    async fn look(&self, timeout: Duration) -> Result<Inspected, ControlError> {
        let inspected = self.engine.inspect(&self.name, timeout).await?;
        self.note(&inspected);
        Ok(inspected)
    }

    /// Logs what changed since the last look: a new id, a container that
    /// started restarting (with what its policy means).
    fn note(&self, now: &Inspected) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        if let Some(before) = seen.id.as_deref().filter(|before| *before != now.id) {
            log::notice(&format!(
                "container {:?} was recreated (id {} is now {}): following the name \
                 (connector.container)",
                self.name,
                short(before),
                short(&now.id)
            ));
        }
        let new_container = seen.id.as_deref() != Some(now.id.as_str());
        if new_container && now.policy_fights_the_agent() {
            log::warn(&policy_warning(&self.name, &now.restart_policy));
        }
        if now.status == Status::Restarting && seen.status != Some(Status::Restarting) {
            log::warn(&restarting_warning(&self.name, &now.restart_policy));
        }
        seen.id = Some(now.id.clone());
        seen.status = Some(now.status);
    }

    /// After a stop whose answer was lost: looks until one answer says
    /// where the container is, stops it again if it runs, and gives up
    /// only at `until` (step 3 of the module doc).
    async fn settle_stop(&self, lost: ControlError, until: Instant) -> Result<(), ControlError> {
        log::warn(&format!(
            "the stop of container {:?} lost its answer ({lost}); looking at it again before \
             deciding",
            self.name
        ));
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self
                .look(self.probe_timeout.min(left.max(SETTLE_POLL)))
                .await
            {
                Ok(i) if !i.status.is_running() => {
                    log::info(&format!(
                        "container {:?} is {} (looked again after the lost answer): stopped",
                        self.name,
                        i.status.as_str()
                    ));
                    return Ok(());
                }
                Ok(i) if !left.is_zero() => {
                    log::info(&format!(
                        "container {:?} is {} (looked again after the lost answer): stopping it \
                         again",
                        self.name,
                        i.status.as_str()
                    ));
                    match self.engine.stop(&self.name, self.grace_secs(), left).await {
                        Ok(_) => return Ok(()),
                        Err(ControlError::EngineUnreachable { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(_) | Err(ControlError::EngineUnreachable { .. }) => {}
                Err(e) => return Err(e),
            }
            if Instant::now() >= until {
                return Err(ControlError::StopUnsettled {
                    name: self.name.clone(),
                    after: self.timeout + self.probe_timeout,
                });
            }
            tokio::time::sleep(SETTLE_POLL).await;
        }
    }
}

impl ConnectorControl for Docker {
    fn start(&self) -> Pending<'_, ()> {
        Box::pin(async move {
            self.engine.start(&self.name, self.timeout).await?;
            Ok(())
        })
    }

    fn stop(&self) -> Pending<'_, ()> {
        Box::pin(async move {
            let deadline = self.timeout + self.probe_timeout;
            let until = Instant::now() + deadline;
            match self
                .engine
                .stop(&self.name, self.grace_secs(), deadline)
                .await
            {
                Ok(_) => Ok(()),
                Err(lost @ ControlError::EngineUnreachable { .. }) => {
                    self.settle_stop(lost, until).await
                }
                Err(e) => Err(e),
            }
        })
    }

    fn is_running(&self) -> Pending<'_, bool> {
        Box::pin(async move { Ok(self.look(self.probe_timeout).await?.status.is_running()) })
    }

    fn describe(&self) -> String {
        format!("docker container {} at {}", self.name, self.engine.host)
    }
}

/// An id as `docker ps` shows it.
fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

fn policy_warning(name: &str, policy: &str) -> String {
    format!(
        "connector.container {name:?} has restart policy {policy:?}: the Docker daemon starts it \
         by itself (at boot, and {} whenever dockerd restarts), whatever the agent decided, so \
         a node in maintenance or with its app down serves again until the agent's next look \
         (and in a shared tunnel two connectors serve); give it `restart: \"no\"` (or \
         \"on-failure\", which restarts a crashed cloudflared, never one the agent stopped)",
        if policy == "always" {
            "even after the agent stopped it,"
        } else {
            "if it ran when the host went down,"
        }
    )
}

fn restarting_warning(name: &str, policy: &str) -> String {
    format!(
        "connector.container {name:?} is restarting: its restart policy ({policy:?}) starts it \
         again each time cloudflared exits, so cloudflared keeps failing (`docker logs \
         {name}`); the agent counts it as running and stops it when this node must not serve"
    )
}

/// `check-config`'s look at the container: one line a finding, warnings
/// starting with `warning: `; never fatal (dockerd may start after the
/// agent at boot).
pub(crate) async fn check(name: &str, host: &DockerHost, timeout: Duration) -> Vec<String> {
    let engine = Engine::new(host.clone());
    match engine.inspect(name, timeout).await {
        Ok(i) => {
            let mut lines = vec![format!(
                "connector.container {name:?} at {host}: id {}, {}, restart policy {:?}",
                short(&i.id),
                i.status.as_str(),
                i.restart_policy
            )];
            if i.policy_fights_the_agent() {
                lines.push(format!(
                    "warning: {}",
                    policy_warning(name, &i.restart_policy)
                ));
            }
            if i.status == Status::Restarting {
                lines.push(format!(
                    "warning: {}",
                    restarting_warning(name, &i.restart_policy)
                ));
            }
            lines
        }
        Err(e) => vec![format!(
            "warning: {e}; the agent cannot control the connector until it can"
        )],
    }
}
