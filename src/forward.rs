//! One attempt: send the request to one origin and wait at most the attempt
//! timeout for its response headers. The body is not timed: once the origin
//! has answered, a slow body streams through to the client.

use failover_core::edge::classify::{
    classify_fetch_error, classify_response, Failure, ATTEMPT_REFUSED, ATTEMPT_TIMED_OUT,
};
use failover_core::edge::config::Origin;
use failover_core::edge::target::probe_url;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

#[cfg(not(feature = "operator"))]
use crate::body::RequestBody;
#[cfg(not(feature = "operator"))]
use crate::js_bridge::attempt_js;
use crate::js_bridge::probe_js;

#[cfg(not(feature = "operator"))]
pub enum Outcome {
    /// The origin answered with something the client should get.
    Answer(web_sys::Response),
    /// The attempt failed; a 5xx response is kept in case the client must
    /// get it after all (a POST that may not be replayed).
    Failed(Failure, Option<web_sys::Response>),
    /// The runtime refused to send the request at all (a `TypeError` from
    /// `fetch`): the request's fault, not the origin's.
    Refused,
}

/// One attempt against origin number `origin` (recorded for silence).
#[cfg(not(feature = "operator"))]
pub async fn attempt(
    origin: usize,
    url: &str,
    method: &str,
    headers: &web_sys::Headers,
    body: &RequestBody,
    timeout_ms: u64,
) -> Outcome {
    let streamed_length = body.streamed_length();
    let sent = send(
        origin,
        url,
        method,
        Some(headers),
        body.as_js(),
        streamed_length,
        timeout_ms,
    )
    .await;
    outcome(sent)
}

/// What `send` got back.
pub enum Sent {
    Response(web_sys::Response),
    Failed(Failure),
    Refused,
}

#[cfg(not(feature = "operator"))]
/// `fetch` with the timeout. A request that times out is abandoned, not
/// aborted: the runtime closes its connection when the client's request
/// ends (see attempt.mjs).
pub async fn send(
    origin: usize,
    url: &str,
    method: &str,
    headers: Option<&web_sys::Headers>,
    body: Option<&JsValue>,
    streamed_length: Option<f64>,
    timeout_ms: u64,
) -> Sent {
    let timeout = u32::try_from(timeout_ms).unwrap_or(u32::MAX);
    let origin = u32::try_from(origin).unwrap_or(u32::MAX);
    settle(attempt_js(
        url,
        method,
        headers,
        body,
        streamed_length,
        timeout,
        origin,
    ))
    .await
}

pub async fn settle(promise: js_sys::Promise) -> Sent {
    match JsFuture::from(promise).await {
        Ok(value) => sent_from_js(value),
        Err(_) => Sent::Failed(Failure::Network),
    }
}

/// Reads what `attempt_js` resolved to.
pub fn sent_from_js(value: JsValue) -> Sent {
    if let Some(message) = value.as_string() {
        return Sent::Failed(classify_fetch_error(&message));
    }
    match value.as_f64() {
        Some(n) if n == ATTEMPT_TIMED_OUT => Sent::Failed(Failure::Timeout),
        Some(n) if n == ATTEMPT_REFUSED => Sent::Refused,
        Some(_) => Sent::Failed(Failure::Network),
        None => value
            .dyn_into::<web_sys::Response>()
            .map_or(Sent::Failed(Failure::Network), Sent::Response),
    }
}

#[cfg(not(feature = "operator"))]
/// The outcome of an attempt, from what `send` got back.
pub fn outcome(sent: Sent) -> Outcome {
    match sent {
        Sent::Response(res) => match judge(&res) {
            None => Outcome::Answer(res),
            Some(failure) => Outcome::Failed(failure, Some(res)),
        },
        Sent::Failed(failure) => Outcome::Failed(failure, None),
        Sent::Refused => Outcome::Refused,
    }
}

/// A response judged like the fast path judges it: 5xx, and a redirect to
/// an Access login (our service token is missing or wrong), are failures;
/// so is a 101 without the WebSocket it switched to, which no Response can
/// carry on (entry.mjs `answers`).
fn judge(res: &web_sys::Response) -> Option<Failure> {
    let status = res.status();
    if status == 101 && !has_web_socket(res) {
        return Some(Failure::Status(101));
    }
    let location = res.headers().get("location").ok().flatten();
    classify_response(status, location.as_deref())
}

/// Whether the runtime attached a WebSocket to the response (workerd's
/// `Response.webSocket`, which web-sys does not bind).
fn has_web_socket(res: &web_sys::Response) -> bool {
    js_sys::Reflect::get(res, &JsValue::from_str("webSocket"))
        .is_ok_and(|ws| !ws.is_null() && !ws.is_undefined())
}

/// Probes give up well before the ~30 s the runtime allows work after a
/// response, so a probe always reports back.
const PROBE_TIMEOUT_CAP_MS: u64 = 25_000;

/// One health probe: GET the origin's health path (with its Access service
/// token, if any), aborted on timeout. Judged like any attempt, unless the
/// origin names the statuses that mean healthy (`health_expect`): None when
/// it is healthy.
pub async fn probe(origin: &Origin, timeout_ms: u64) -> Option<Failure> {
    let Some(url) = probe_url(&origin.base, &origin.health_path) else {
        return Some(Failure::Refused);
    };
    let timeout_ms = u32::try_from(timeout_ms.min(PROBE_TIMEOUT_CAP_MS)).unwrap_or(u32::MAX);
    let headers = crate::access::probe_headers(origin);
    match settle(probe_js(&url, timeout_ms, headers.as_ref())).await {
        Sent::Response(res) => {
            let failure = origin.health_expect.judge_probe(res.status(), judge(&res));
            discard(Some(res));
            failure
        }
        Sent::Failed(failure) => Some(failure),
        // A plain GET is never refused; if it were, the origin is unusable.
        Sent::Refused => Some(Failure::Network),
    }
}

/// Releases a response we will not forward, so its connection is freed.
pub fn discard(res: Option<web_sys::Response>) {
    if let Some(stream) = res.and_then(|r| r.body()) {
        // The promise settles on its own; nobody needs its result.
        let _ = stream.cancel();
    }
}
