//! One attempt: send the request to one origin and wait at most the attempt
//! timeout for its response headers. The body is not timed: once the origin
//! has answered, a slow body streams through to the client.

use failover_core::classify::{classify_fetch_error, classify_status, Failure};
use failover_core::config::Origin;
use wasm_bindgen::prelude::wasm_bindgen;
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::{js_sys, web_sys};

use crate::body::RequestBody;

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

pub async fn attempt(
    url: &str,
    method: &str,
    headers: &web_sys::Headers,
    body: &RequestBody,
    timeout_ms: u64,
) -> Outcome {
    let sent = send(
        url,
        method,
        Some(headers),
        body.as_js(),
        body.streamed_length(),
        timeout_ms,
    )
    .await;
    match sent {
        Sent::Response(res) => match classify_status(res.status()) {
            None => Outcome::Answer(res),
            Some(failure) => Outcome::Failed(failure, Some(res)),
        },
        Sent::Failed(failure) => Outcome::Failed(failure, None),
        Sent::Refused => Outcome::Refused,
    }
}

/// What `send` got back.
pub enum Sent {
    Response(web_sys::Response),
    Failed(Failure),
    Refused,
}

// The whole attempt happens in JS: one crossing in, one promise out. Built
// from Rust it costs ~10 crossings (AbortController, RequestInit setters,
// global lookup) plus two wasm-bindgen closures (the Delay timer and the
// select), each registered with a FinalizationRegistry.
//
// The timer times the wait for the response headers only, and for a
// streamed upload it starts once the whole body has been handed over: a
// slow client uploading a large file must not look like a dead origin.
// The stream is re-piped through a FixedLengthStream when its length is
// known, so the origin still gets a Content-Length and not chunks.
//
// Resolves to the Response, 0 for our own timeout, 1 when fetch refused the
// request (TypeError), or the error's message; it never rejects. Redirects
// go to the client as they are: following one could leave the origin.
#[wasm_bindgen(inline_js = r#"
export function attempt_js(url, method, headers, body, streamedLength, timeoutMs) {
  const ctl = new AbortController();
  let timer;
  const arm = () => { timer = setTimeout(() => ctl.abort(), timeoutMs); };
  const init = { method, redirect: "manual", signal: ctl.signal };
  if (headers !== undefined) {
    // The origin must see its own hostname: never pass the client's Host on.
    if (headers.has("host")) {
      headers = new Headers(headers);
      headers.delete("host");
    }
    init.headers = headers;
  }
  if (streamedLength !== undefined) {
    const pipe = streamedLength >= 0 ? new FixedLengthStream(streamedLength) : new TransformStream();
    body.pipeTo(pipe.writable).then(arm, () => {});
    init.body = pipe.readable;
  } else {
    if (body !== undefined) init.body = body;
    arm();
  }
  return fetch(url, init).then(
    (res) => { clearTimeout(timer); return res; },
    (err) => {
      clearTimeout(timer);
      if (ctl.signal.aborted) return 0;
      if (err instanceof TypeError) return 1;
      return String(err && err.message !== undefined ? err.message : err);
    },
  );
}
"#)]
extern "C" {
    fn attempt_js(
        url: &str,
        method: &str,
        headers: Option<&web_sys::Headers>,
        body: Option<&JsValue>,
        streamed_length: Option<f64>,
        timeout_ms: u32,
    ) -> js_sys::Promise;
}

/// `fetch` with the timeout; on timeout the request is aborted so the
/// connection does not linger.
pub async fn send(
    url: &str,
    method: &str,
    headers: Option<&web_sys::Headers>,
    body: Option<&JsValue>,
    streamed_length: Option<f64>,
    timeout_ms: u64,
) -> Sent {
    let timeout = u32::try_from(timeout_ms).unwrap_or(u32::MAX);
    let Ok(value) = JsFuture::from(attempt_js(
        url,
        method,
        headers,
        body,
        streamed_length,
        timeout,
    ))
    .await
    else {
        return Sent::Failed(Failure::Network);
    };
    if let Some(message) = value.as_string() {
        return Sent::Failed(classify_fetch_error(&message));
    }
    match value.as_f64() {
        Some(0.0) => Sent::Failed(Failure::Timeout),
        Some(_) => Sent::Refused,
        None => value
            .dyn_into::<web_sys::Response>()
            .map_or(Sent::Failed(Failure::Network), Sent::Response),
    }
}

/// Probes give up well before the ~30 s the runtime allows work after a
/// response, so a probe always reports back.
const PROBE_TIMEOUT_CAP_MS: u64 = 25_000;

/// One health probe: GET the origin's health path. Judged like any
/// attempt: None when the origin answered with something a client could use.
pub async fn probe(origin: &Origin, timeout_ms: u64) -> Option<Failure> {
    let url = format!("{}{}", origin.base, origin.health_path);
    let timeout_ms = timeout_ms.min(PROBE_TIMEOUT_CAP_MS);
    match send(&url, "GET", None, None, None, timeout_ms).await {
        Sent::Response(res) => {
            let failure = classify_status(res.status());
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
