//! The one trait every connector controller implements (a leaf: the
//! controllers and the agent both import it).

use std::future::Future;
use std::pin::Pin;

use super::engine::DockerHost;
use super::error::ControlError;

/// `connector.control` and the keys that go with it, as the config gives
/// them.
#[derive(Clone, Debug)]
pub enum ControlConfig {
    Systemd {
        unit: String,
    },
    Command {
        start: String,
        stop: String,
        status: String,
    },
    /// `connector.container` through the Engine at `connector.docker_host`.
    Docker {
        container: String,
        host: DockerHost,
    },
}

pub type Pending<'a, T> = Pin<Box<dyn Future<Output = Result<T, ControlError>> + Send + 'a>>;

pub trait ConnectorControl: Send + Sync {
    fn start(&self) -> Pending<'_, ()>;
    fn stop(&self) -> Pending<'_, ()>;
    /// Process state only; readiness is asked of the connector itself.
    fn is_running(&self) -> Pending<'_, bool>;
    fn describe(&self) -> String;
}
