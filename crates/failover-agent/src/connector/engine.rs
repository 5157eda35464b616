//! The Docker Engine API, the three calls the `docker` controller makes
//! and nothing else: `POST /containers/{name}/start`, `POST
//! /containers/{name}/stop?t=N` and `GET /containers/{name}/json`, over
//! the Unix socket or plain TCP (a socket proxy), never the docker CLI.
//!
//! The API version is pinned in the path: `v1.41`, the newest that
//! Debian 12's `docker.io` (Engine 20.10) speaks, so the agent works with
//! the oldest Engine a supported host ships. Engine 29 and later refuse
//! versions below 1.44: the first call asks `GET /version` (unversioned)
//! once and speaks the Engine's minimum when 1.41 is below it. The three
//! calls and the four fields read have not changed between them.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::OnceCell;

use super::error::ControlError;
use crate::client::{self, Endpoint, Response};
use crate::url::Url;

/// The API version spoken unless the Engine's minimum is newer.
pub(crate) const PINNED: ApiVersion = ApiVersion(1, 41);

pub(crate) const DEFAULT_HOST: &str = "unix:///var/run/docker.sock";

/// An inspect answer is a few KiB (a container with a long environment,
/// tens); a megabyte is not one.
const MAX_ANSWER: usize = 1024 * 1024;

/// `connector.docker_host`: `unix:///path` or `tcp://host:port`, as
/// `DOCKER_HOST` writes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DockerHost {
    text: String,
    endpoint: Endpoint,
}

impl DockerHost {
    pub(crate) fn parse(text: &str) -> Result<DockerHost, String> {
        const ACCEPTED: &str = "use \"unix:///var/run/docker.sock\" (an absolute socket path) \
                                or \"tcp://host:port\" (a socket proxy; no TLS, so only on the \
                                host or a private network)";
        let endpoint = if let Some(path) = text.strip_prefix("unix://") {
            if !path.starts_with('/') || path.contains(char::is_control) {
                return Err(format!("{text:?} has no absolute socket path; {ACCEPTED}"));
            }
            Endpoint::Unix(PathBuf::from(path))
        } else if let Some(rest) = text.strip_prefix("tcp://") {
            let url = Url::parse(&format!("http://{rest}"))
                .map_err(|_| format!("{text:?} is not tcp://host:port; {ACCEPTED}"))?;
            if url.path != "/" || rest.ends_with('/') || !rest.contains(':') {
                return Err(format!(
                    "{text:?} is not tcp://host:port (a port, no path); {ACCEPTED}"
                ));
            }
            Endpoint::Tcp(url)
        } else {
            return Err(format!("{text:?} is not a Docker host; {ACCEPTED}"));
        };
        Ok(DockerHost {
            text: text.to_string(),
            endpoint,
        })
    }
}

impl fmt::Display for DockerHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `connector.container`: a name or id as Docker accepts them (letters,
/// digits, `_.-`, starting with a letter or digit): it goes into the
/// request path, so nothing else is let through.
pub(crate) fn check_container(name: &str) -> Result<String, String> {
    let good = (1..=128).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if good {
        Ok(name.to_string())
    } else {
        Err(format!(
            "{name:?} is not a container name or id: letters, digits, '_', '.' or '-', starting \
             with a letter or digit (the name compose gives it, e.g. \"cloudflared\", without \
             a leading '/')"
        ))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ApiVersion(u32, u32);

impl ApiVersion {
    fn parse(text: &str) -> Option<ApiVersion> {
        let (major, minor) = text.split_once('.')?;
        Some(ApiVersion(major.parse().ok()?, minor.parse().ok()?))
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// The version to speak: the pinned one, unless the Engine's range
/// (`MinAPIVersion` to `ApiVersion` of `GET /version`) excludes it.
pub(crate) fn negotiate(min: Option<ApiVersion>, max: Option<ApiVersion>) -> ApiVersion {
    match (min, max) {
        (Some(min), _) if min > PINNED => min,
        (_, Some(max)) if max < PINNED => max,
        _ => PINNED,
    }
}

/// A container's `State.Status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Created,
    Running,
    Paused,
    /// Its restart policy restarts it: running again in a moment.
    Restarting,
    Removing,
    Exited,
    Dead,
}

impl Status {
    fn parse(text: &str) -> Option<Status> {
        Some(match text {
            "created" => Status::Created,
            "running" => Status::Running,
            "paused" => Status::Paused,
            "restarting" => Status::Restarting,
            "removing" => Status::Removing,
            "exited" => Status::Exited,
            "dead" => Status::Dead,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Created => "created",
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Restarting => "restarting",
            Status::Removing => "removing",
            Status::Exited => "exited",
            Status::Dead => "dead",
        }
    }

    /// Whether cloudflared runs (or will in a moment, by its restart
    /// policy): what a stop must end and a start need not repeat.
    pub(crate) fn is_running(self) -> bool {
        matches!(self, Status::Running | Status::Paused | Status::Restarting)
    }
}

/// What `GET /containers/{name}/json` says, the fields the agent reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Inspected {
    pub(crate) id: String,
    pub(crate) status: Status,
    /// `HostConfig.RestartPolicy.Name`; `""` (none) reads as `"no"`.
    pub(crate) restart_policy: String,
}

impl Inspected {
    pub(crate) fn from_json(body: &[u8]) -> Result<Inspected, String> {
        let value: Value =
            serde_json::from_slice(body).map_err(|_| "200 without a JSON body".to_string())?;
        let text = |pointer: &str| value.pointer(pointer).and_then(Value::as_str);
        let id = text("/Id").ok_or("no Id")?;
        let status_text = text("/State/Status").ok_or("no State.Status")?;
        let mut status = Status::parse(status_text)
            .ok_or_else(|| format!("State.Status {status_text:?} is not a state it documents"))?;
        // Older Engines report a restarting container as "running" with
        // State.Restarting set.
        if value.pointer("/State/Restarting").and_then(Value::as_bool) == Some(true) {
            status = Status::Restarting;
        }
        let policy = text("/HostConfig/RestartPolicy/Name").unwrap_or("");
        Ok(Inspected {
            id: id.to_string(),
            status,
            restart_policy: if policy.is_empty() { "no" } else { policy }.to_string(),
        })
    }

    /// A policy under which the daemon starts the container by itself
    /// (at boot, when dockerd restarts), whatever the agent decided.
    pub(crate) fn policy_fights_the_agent(&self) -> bool {
        matches!(self.restart_policy.as_str(), "always" | "unless-stopped")
    }
}

/// One Engine, its version learnt at the first call that reached it.
pub(crate) struct Engine {
    pub(crate) host: DockerHost,
    version: OnceCell<ApiVersion>,
}

/// What a start or a stop came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Done {
    /// 204: the Engine did it.
    Now,
    /// 304: it was so already.
    Already,
}

impl Engine {
    pub(crate) fn new(host: DockerHost) -> Engine {
        Engine {
            host,
            version: OnceCell::new(),
        }
    }

    fn unreachable(&self, source: client::ProbeError) -> ControlError {
        ControlError::EngineUnreachable {
            host: self.host.text.clone(),
            source,
        }
    }

    async fn version(&self, timeout: Duration) -> Result<ApiVersion, ControlError> {
        let answer = self
            .version
            .get_or_try_init(|| async {
                let r = client::local_request(
                    &self.host.endpoint,
                    "GET",
                    "/version",
                    64 * 1024,
                    timeout,
                )
                .await
                .map_err(|e| self.unreachable(e))?;
                // A proxy that hides /version: the pinned one, as documented.
                let value: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
                let field = |name: &str| {
                    value
                        .get(name)
                        .and_then(Value::as_str)
                        .and_then(ApiVersion::parse)
                };
                Ok::<_, ControlError>(negotiate(field("MinAPIVersion"), field("ApiVersion")))
            })
            .await?;
        Ok(*answer)
    }

    async fn call(
        &self,
        method: &'static str,
        path: &str,
        timeout: Duration,
    ) -> Result<Response, ControlError> {
        let started = tokio::time::Instant::now();
        let version = self.version(timeout).await?;
        let left = timeout.saturating_sub(started.elapsed());
        client::local_request(
            &self.host.endpoint,
            method,
            &format!("/v{version}{path}"),
            MAX_ANSWER,
            left,
        )
        .await
        .map_err(|e| self.unreachable(e))
    }

    pub(crate) async fn start(&self, name: &str, timeout: Duration) -> Result<Done, ControlError> {
        let r = self
            .call("POST", &format!("/containers/{name}/start"), timeout)
            .await?;
        done("start", name, &r)
    }

    /// `grace`: the seconds the Engine gives cloudflared between SIGTERM
    /// and SIGKILL (`t`); the answer comes once it exited.
    pub(crate) async fn stop(
        &self,
        name: &str,
        grace: u64,
        timeout: Duration,
    ) -> Result<Done, ControlError> {
        let r = self
            .call(
                "POST",
                &format!("/containers/{name}/stop?t={grace}"),
                timeout,
            )
            .await?;
        done("stop", name, &r)
    }

    pub(crate) async fn inspect(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<Inspected, ControlError> {
        let r = self
            .call("GET", &format!("/containers/{name}/json"), timeout)
            .await?;
        match r.status {
            200 => Inspected::from_json(&r.body).map_err(|detail| ControlError::EngineAnswer {
                call: "inspect",
                detail,
            }),
            _ => Err(refused("inspect", name, &r)),
        }
    }
}

fn done(call: &'static str, name: &str, r: &Response) -> Result<Done, ControlError> {
    match r.status {
        204 => Ok(Done::Now),
        304 => Ok(Done::Already),
        _ => Err(refused(call, name, r)),
    }
}

/// A status other than the call's success: 404 is the container missing,
/// anything else the Engine's own message.
fn refused(call: &'static str, name: &str, r: &Response) -> ControlError {
    if r.status == 404 {
        return ControlError::NoContainer {
            name: name.to_string(),
        };
    }
    let message = serde_json::from_slice::<Value>(&r.body)
        .ok()
        .and_then(|v| v.get("message")?.as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(&r.body).chars().take(200).collect());
    ControlError::EngineRefused {
        call,
        status: r.status,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_hosts_parse_or_say_what_is_accepted() {
        let unix = DockerHost::parse(DEFAULT_HOST).map(|h| h.endpoint);
        assert_eq!(unix, Ok(Endpoint::Unix("/var/run/docker.sock".into())));
        let tcp = DockerHost::parse("tcp://socket-proxy:2375").map(|h| h.endpoint);
        assert!(matches!(tcp, Ok(Endpoint::Tcp(u)) if u.host == "socket-proxy" && u.port == 2375));
        for bad in [
            "unix://run/docker.sock",
            "unix://",
            "tcp://proxy",
            "tcp://proxy:2375/v1.41",
            "tcp://proxy:2375/",
            "http://proxy:2375",
            "/var/run/docker.sock",
            "npipe:////./pipe/docker_engine",
            "tcp://pro xy:2375",
        ] {
            let e = DockerHost::parse(bad).err().unwrap_or_default();
            assert!(e.contains("unix:///var/run/docker.sock"), "{bad}: {e}");
        }
    }

    #[test]
    fn container_names_go_into_a_path_only_when_plain() {
        for good in ["cloudflared", "stack-cloudflared-1", "a.b_c", "0123abcdef"] {
            assert_eq!(check_container(good).as_deref(), Ok(good));
        }
        let long = "a".repeat(129);
        for bad in [
            "",
            "/cloudflared",
            "../images",
            "a/b",
            "a?b",
            "a b",
            "-a",
            long.as_str(),
        ] {
            assert!(check_container(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_version_is_pinned_unless_the_engine_excludes_it() {
        let v = |s: &str| ApiVersion::parse(s);
        // Debian 12's Engine 20.10: exactly the pinned one.
        assert_eq!(negotiate(v("1.12"), v("1.41")), PINNED);
        // A current Engine that still speaks it.
        assert_eq!(negotiate(v("1.24"), v("1.51")), PINNED);
        // Engine 29: 1.44 at least.
        assert_eq!(negotiate(v("1.44"), v("1.52")), ApiVersion(1, 44));
        // An older Engine: its newest.
        assert_eq!(negotiate(v("1.12"), v("1.40")), ApiVersion(1, 40));
        // /version hidden by a proxy.
        assert_eq!(negotiate(None, None), PINNED);
        assert_eq!(ApiVersion::parse("1.x"), None);
    }

    #[test]
    fn inspect_answers_read_defensively() {
        let answer = |status: &str, restarting: bool, policy: &str| {
            format!(
                r#"{{"Id":"abc","Name":"/cloudflared","State":{{"Status":"{status}","Restarting":{restarting}}},"HostConfig":{{"RestartPolicy":{{"Name":"{policy}","MaximumRetryCount":0}}}}}}"#
            )
        };
        let read = |body: String| Inspected::from_json(body.as_bytes());
        let running = read(answer("running", false, "")).map(|i| (i.status, i.restart_policy));
        assert_eq!(running, Ok((Status::Running, "no".to_string())));
        let restarting = read(answer("running", true, "always")).map(|i| i.status);
        assert_eq!(restarting, Ok(Status::Restarting));
        let exited =
            read(answer("exited", false, "unless-stopped")).map(|i| i.policy_fights_the_agent());
        assert_eq!(exited, Ok(true));
        let on_failure =
            read(answer("exited", false, "on-failure")).map(|i| i.policy_fights_the_agent());
        assert_eq!(on_failure, Ok(false));
        for (body, phrase) in [
            ("<html>".to_string(), "JSON"),
            (r#"{"State":{"Status":"running"}}"#.to_string(), "Id"),
            (r#"{"Id":"abc","State":{}}"#.to_string(), "State.Status"),
            (answer("sleeping", false, "no"), "sleeping"),
        ] {
            let e = read(body).err().unwrap_or_default();
            assert!(e.contains(phrase), "{e}");
        }
        for s in [
            "created",
            "running",
            "paused",
            "restarting",
            "removing",
            "exited",
            "dead",
        ] {
            assert_eq!(Status::parse(s).map(Status::as_str), Some(s));
        }
    }
}
