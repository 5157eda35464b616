//! The peer's role, checked against ours (shared tunnel). Two nodes
//! configured with the same role pass every check of their own: two
//! primaries both serve on their own clocks, two standbys both take over
//! once they miss each other, and every order between them is refused
//! (the recipient's role is part of the signature), which the log blamed
//! on the token files or the clocks. So, once the agent runs, it asks the
//! peer's `/health` for its role until it gets an answer, and says in an
//! error line, and in `/health` (`peer_role`), when the roles clash.

use std::time::Duration;

use failover_core::node::Role;

use crate::log;
use crate::protocol;
use crate::state::Shared;
use crate::url::Url;

/// How often the peer is asked until it answers: it may boot later.
const RETRY: Duration = Duration::from_secs(30);

/// What the peer's `/health` says of its role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PeerRole {
    /// The other role of a pair: as it should be.
    Complements,
    /// The same role as ours.
    Clashes(&'static str),
    /// A `/health` that names no role a peer can have (another program on
    /// that port, a tunnel-per-node agent).
    Unexpected(String),
}

/// Reads a peer's `/health` body against our `role`. `None` when the body
/// is not the agent's JSON at all.
pub(crate) fn judge(role: Role, body: &[u8]) -> Option<PeerRole> {
    let health: serde_json::Value = serde_json::from_slice(body).ok()?;
    let theirs = health.get("role")?.as_str()?;
    Some(if theirs == role.as_str() {
        PeerRole::Clashes(role.as_str())
    } else if (role, theirs) == (Role::Primary, "standby")
        || (role, theirs) == (Role::Standby, "primary")
    {
        PeerRole::Complements
    } else {
        PeerRole::Unexpected(theirs.chars().take(40).collect())
    })
}

/// Asks the peer's `/health` until it answers, then logs what its role
/// means for the pair and stops.
pub(crate) async fn check(shared: &Shared, peer_agent: &Url) {
    let url = peer_agent.with_path(protocol::HEALTH);
    loop {
        let answer = shared.client.get(&url, shared.config.probe_timeout).await;
        let judged = answer
            .ok()
            .filter(|r| r.status == 200)
            .and_then(|r| judge(shared.config.role, &r.body));
        match judged {
            Some(PeerRole::Complements) => {
                shared.set_peer_role_problem(None);
                return;
            }
            Some(PeerRole::Clashes(role)) => {
                let problem = format!(
                    "the peer agent at {peer_agent} is configured as {role} too: a shared tunnel \
                     needs one primary and one standby (two primaries both serve, two standbys \
                     both take over, and every order between them is refused); set `role` on \
                     one of them"
                );
                log::error(&problem);
                shared.set_peer_role_problem(Some(problem));
                return;
            }
            Some(PeerRole::Unexpected(theirs)) => {
                let problem = format!(
                    "the peer agent at {peer_agent} reports role {theirs:?}: a shared tunnel's \
                     peer is a primary or a standby; check [peer] agent_url"
                );
                log::error(&problem);
                shared.set_peer_role_problem(Some(problem));
                return;
            }
            None => tokio::time::sleep(RETRY).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_is_one_primary_and_one_standby() {
        let health = |role: &str| format!(r#"{{"role":"{role}","connector":"running"}}"#);
        let table = [
            (
                Role::Primary,
                health("standby"),
                Some(PeerRole::Complements),
            ),
            (
                Role::Standby,
                health("primary"),
                Some(PeerRole::Complements),
            ),
            (
                Role::Primary,
                health("primary"),
                Some(PeerRole::Clashes("primary")),
            ),
            (
                Role::Standby,
                health("standby"),
                Some(PeerRole::Clashes("standby")),
            ),
            (
                Role::Standby,
                health("node"),
                Some(PeerRole::Unexpected("node".into())),
            ),
            (Role::Standby, "<html>nginx</html>".into(), None),
            (Role::Standby, r#"{"role":7}"#.into(), None),
            (Role::Standby, r#"{}"#.into(), None),
        ];
        for (ours, body, want) in table {
            assert_eq!(judge(ours, body.as_bytes()), want, "{ours:?} {body}");
        }
    }

    #[test]
    fn a_hostile_role_is_cut_short_in_the_log() {
        let body = format!(r#"{{"role":"{}"}}"#, "x".repeat(10_000));
        match judge(Role::Primary, body.as_bytes()) {
            Some(PeerRole::Unexpected(role)) => assert_eq!(role.len(), 40),
            other => panic!("{other:?}"),
        }
    }
}
