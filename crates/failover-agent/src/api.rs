//! The HTTP API. `/health` and `/metrics` answer from memory and never call
//! the peer: two agents asking each other "how are you" must not stall.
//! `/connector/ready` ends at the local connector, never at another checker.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpSocket};

use failover_core::node::{HandoverRefused, Order};

use crate::actions::{self, Disobeyed};
use crate::connection_slots::{Slot, Slots, MAX_CONNECTIONS};
use crate::log;
use crate::protocol;
use crate::refusals::RefusalLog;
use crate::signed_order::{Caller, Received, Refusal, Verifier};
use crate::state::Shared;

/// How long a connection may take to send its request head. The agents'
/// own requests are one packet on a LAN; a client that opens a connection
/// and says nothing frees its slot after this.
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(2);

/// What the order endpoints remember between requests.
#[derive(Default)]
struct Orders {
    verifier: Mutex<Verifier>,
    refusals: Mutex<RefusalLog>,
}

/// SO_REUSEADDR: a restarted agent must not crash-loop on EADDRINUSE while
/// the previous socket sits in TIME_WAIT.
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(256)
}

pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let peer = peer_addresses(&shared).await;
    let slots = Arc::new(Mutex::new(Slots::new(&peer)));
    let orders = Arc::new(Orders::default());
    let mut over_cap = RefusalLog::default();
    loop {
        let (stream, remote) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                log::warn(&format!("accept failed: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Closed at once, unread: a slot is freed by an answer or by
        // HEADER_READ_TIMEOUT, whichever comes first.
        let slot = match Slot::take(&slots, remote.ip()) {
            Ok(slot) => slot,
            Err(refused) => {
                drop(stream);
                if let Some(n) = over_cap.record(shared.now_ms()) {
                    log::warn(&format!(
                        "{n} connection(s) closed unserved (at most {MAX_CONNECTIONS} at once, \
                         a few of them kept for the peer); the latest from {}: {}; at most \
                         one such line a minute",
                        remote.ip(),
                        refused.as_str()
                    ));
                }
                continue;
            }
        };
        let shared = Arc::clone(&shared);
        let orders = Arc::clone(&orders);
        tokio::spawn(async move {
            let _slot = slot;
            let service = service_fn(move |request| {
                let shared = Arc::clone(&shared);
                let orders = Arc::clone(&orders);
                async move { Ok::<_, Infallible>(route(&shared, &orders, request, remote).await) }
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The peer agent's addresses, whose connections get the slots kept for
/// them: `[peer] agent_url`'s host, an IP literal or a name resolved once,
/// now. None without a peer, or when the name does not resolve (logged:
/// a flood from elsewhere can then delay the peer's looks).
async fn peer_addresses(shared: &Shared) -> Vec<IpAddr> {
    let Some(peer) = &shared.config.peer_agent_url else {
        return Vec::new();
    };
    if let Ok(ip) = peer.host.parse::<IpAddr>() {
        return vec![ip];
    }
    let lookup = tokio::net::lookup_host((peer.host.as_str(), peer.port));
    match tokio::time::timeout(shared.config.probe_timeout, lookup).await {
        Ok(Ok(found)) => {
            let mut addresses: Vec<IpAddr> = found.map(|a| a.ip()).collect();
            addresses.sort_unstable();
            addresses.dedup();
            addresses
        }
        Ok(Err(e)) => {
            warn_no_reserve(&peer.host, &e.to_string());
            Vec::new()
        }
        Err(_) => {
            warn_no_reserve(&peer.host, "no answer within probe_timeout");
            Vec::new()
        }
    }
}

fn warn_no_reserve(host: &str, why: &str) {
    log::warn(&format!(
        "peer.agent_url's host {host} did not resolve at start ({why}): no API connections \
         are kept for the peer, so a connection flood from elsewhere can delay its looks \
         until the agent restarts"
    ));
}

type Answer = Response<Full<Bytes>>;

fn answer(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Answer {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    if let Ok(value) = content_type.parse() {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    response
}

fn json(status: StatusCode, value: serde_json::Value) -> Answer {
    answer(status, "application/json", value.to_string())
}

async fn route(
    shared: &Arc<Shared>,
    orders: &Orders,
    request: Request<Incoming>,
    remote: SocketAddr,
) -> Answer {
    let path = request.uri().path().to_string();
    let method = request.method();
    if let Some(order) = protocol::order_at(&path).filter(|_| method == Method::POST) {
        let header = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let request = Received {
            method: method.as_str(),
            path: &path,
            from: remote.ip(),
        };
        let checked = lock(&orders.verifier).check(
            header,
            &request,
            shared.token.as_str(),
            shared.config.role,
            unix_ms(),
        );
        return match checked {
            Ok(caller) => failover(shared, order, remote, caller).await,
            Err(refusal) => {
                // Counted, and logged at most once a minute: anyone who
                // reaches `listen` can send these as fast as they like.
                if let Some(n) = lock(&orders.refusals).record(shared.now_ms()) {
                    log::warn(&format!(
                        "POST {path} from {} refused: {}; {n} order(s) refused since the last \
                         such line (at most one a minute)",
                        remote.ip(),
                        refusal.as_str()
                    ));
                }
                unauthorized(refusal)
            }
        };
    }
    match (method, path.as_str()) {
        (&Method::GET, protocol::HEALTH) => health(shared),
        (&Method::GET, protocol::METRICS) => answer(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            crate::metrics::render(shared),
        ),
        (&Method::GET, protocol::CONNECTOR_READY) => relay_ready(shared).await,
        (_, known) if protocol::is_known_path(known) => json(
            StatusCode::METHOD_NOT_ALLOWED,
            serde_json::json!({"error": "method not allowed"}),
        ),
        _ => json(
            StatusCode::NOT_FOUND,
            serde_json::json!({"error": "not found"}),
        ),
    }
}

/// The 401 of a refused order. Which credential failed stays unsaid (no
/// help to a guesser), but for a bearer token from elsewhere than loopback:
/// whoever sent it is told the rule, since no token, right or wrong, will
/// ever pass from there.
fn unauthorized(refusal: Refusal) -> Answer {
    let error = match refusal {
        Refusal::BearerNotOnLoopback => refusal.as_str(),
        _ => "unauthorized",
    };
    json(
        StatusCode::UNAUTHORIZED,
        serde_json::json!({ "error": error }),
    )
}

fn health(shared: &Shared) -> Answer {
    let s = shared.node().snapshot();
    let connector = match s.local_running {
        Some(true) => "running",
        Some(false) => "stopped",
        None => "unknown",
    };
    json(
        StatusCode::OK,
        serde_json::json!({
            "status": "ok",
            "version": crate::build::VERSION,
            "revision": crate::build::REVISION,
            "topology": s.role.topology().as_str(),
            "role": s.role.as_str(),
            "connector": connector,
            "connector_ready": s.local_ready,
            "app": s.app.map(|a| a.as_str()),
            "app_last_check": s.app_last,
            "maintenance": s.maintenance,
            // The flag as this process sees it now, not at the last poll:
            // `failover-agent maintenance on|off` asks it, so a flag the
            // daemon looks for elsewhere fails the command, not the node.
            "maintenance_flag_set": shared.maintenance_flag.is_set(),
            "decision": s.last_decision.as_str(),
            "why": s.last_evidence.to_string(),
            "takeovers": s.takeovers,
            "standdowns": s.standdowns,
            "failbacks": s.failbacks,
            "drains": s.drains,
            "withdrawals": s.withdrawals,
            "reasons": failover_core::node::Reason::ALL
                .iter()
                .filter(|r| s.reasons.get(**r) > 0)
                .map(|r| (r.as_str().to_string(), serde_json::json!(s.reasons.get(*r))))
                .collect::<serde_json::Map<_, _>>(),
            "peer_misses_in_a_row": s.peer_misses_in_a_row,
            "peer_misses_total": s.peer_misses_total,
            "egress_good_in_a_row": s.egress_good_in_a_row,
            "failback_required": s.failback_required,
            // Shared tunnel: the pair's roles clash (`peer_role`); null
            // while they do not, or before the peer answered.
            "peer_role_problem": shared.peer_role_problem(),
            "uptime_seconds": shared.uptime_seconds().floor(),
            // The last decisions, newest first, each as its notification.
            "history": shared.history().to_json(),
        }),
    )
}

/// The local cloudflared's own `/ready`, status and body as they are.
async fn relay_ready(shared: &Shared) -> Answer {
    let started = Instant::now();
    let result = shared
        .client
        .get(
            &shared.config.connector_ready_url,
            shared.config.probe_timeout,
        )
        .await;
    shared.probes().relay_seconds = Some(started.elapsed().as_secs_f64());
    match result {
        Ok(r) => {
            let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_GATEWAY);
            answer(status, "application/json", r.body)
        }
        // The local address stays out of the answer; the asking peer logs
        // the miss.
        Err(_) => json(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({"status": 503, "readyConnections": 0, "error": "local connector not answering"}),
        ),
    }
}

async fn failover(
    shared: &Arc<Shared>,
    order: Order,
    remote: SocketAddr,
    caller: Caller,
) -> Answer {
    let verb = order.as_str();
    // Refused before waiting for the turn: a peer handing over to a node
    // that cannot serve hears so at once. The machine asks again under the
    // turn (`actions::obey`).
    if order == Order::Handover {
        if let Err(refused) = shared.node().accepts_handover() {
            return handover_refused(remote, refused);
        }
    }
    let doing = if order.leaves_running() {
        "starting"
    } else {
        "stopping"
    };
    let who = match caller {
        Caller::Peer => "the peer agent (signed)",
        Caller::Operator => "an operator (bearer token)",
    };
    log::notice(&format!(
        "POST /failover/{verb} from {}, {who}: {doing} the local connector",
        remote.ip()
    ));
    // In a task of its own: hyper drops this handler when the client hangs
    // up, and a stop half done (its command killed, the stop unrecorded) is
    // worse than one finished after nobody waits for the answer.
    // Both agents of a pair can be in a turn that asks the other at once
    // (a take-over's stop crossing a fail-back's stop): each holds its own
    // lock while it waits for the peer's answer. An order that cannot get
    // the lock soon is answered "busy" instead of waiting out the caller's
    // deadline; the caller asks again or decides again at its next poll.
    let Ok(turn) = tokio::time::timeout(
        shared.config.probe_timeout,
        Arc::clone(&shared.actions).lock_owned(),
    )
    .await
    else {
        log::warn(&format!(
            "POST /failover/{verb} from {}: busy carrying out a decision; answered 409",
            remote.ip()
        ));
        return json(StatusCode::CONFLICT, protocol::busy_body());
    };
    let task = {
        let shared = Arc::clone(shared);
        tokio::spawn(async move { actions::obey(&shared, order, turn).await })
    };
    match task.await {
        Ok(Ok(())) => {
            let state = if order.leaves_running() {
                "running"
            } else {
                "stopped"
            };
            log::info(&format!("local connector {state} on request ({verb})"));
            json(StatusCode::OK, serde_json::json!({"connector": state}))
        }
        Ok(Err(Disobeyed::Refused(refused))) => handover_refused(remote, refused),
        Ok(Err(Disobeyed::Control(e))) => failed(verb, &e),
        Err(e) => failed(verb, &format!("the {verb} task ended abnormally: {e}")),
    }
}

fn handover_refused(remote: SocketAddr, refused: HandoverRefused) -> Answer {
    log::warn(&format!(
        "POST /failover/handover from {} refused: {}",
        remote.ip(),
        refused.as_str()
    ));
    json(
        StatusCode::CONFLICT,
        serde_json::json!({"error": format!("handover refused: {}", refused.as_str())}),
    )
}

/// The cause goes to the log; the caller learns only what failed.
fn failed(verb: &str, cause: &dyn std::fmt::Display) -> Answer {
    log::error(&format!("POST /failover/{verb}: {cause}"));
    json(
        StatusCode::INTERNAL_SERVER_ERROR,
        serde_json::json!({"error": format!("{verb} failed")}),
    )
}

/// A poisoned lock only means a task panicked mid-update; what it guards is
/// still the best there is.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The wall clock in unix milliseconds: signed orders carry the sender's.
fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
