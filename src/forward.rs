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
}

pub async fn attempt(
    url: &str,
    method: &str,
    headers: &web_sys::Headers,
    body: &RequestBody,
    timeout_ms: u64,
) -> Outcome {
    match send(url, method, Some(headers), body.as_js(), timeout_ms).await {
        Ok(res) => match classify_status(res.status()) {
            None => Outcome::Answer(res),
            Some(failure) => Outcome::Failed(failure, Some(res)),
        },
        Err(failure) => Outcome::Failed(failure, None),
    }
}

// The whole attempt happens in JS: one crossing in, one promise out. Built
// from Rust it costs ~10 crossings (AbortController, RequestInit setters,
// global lookup) plus two wasm-bindgen closures (the Delay timer and the
// select), each registered with a FinalizationRegistry.
// Resolves to the Response, 0 for our own timeout, or the error's message;
// it never rejects. Redirects go to the client as they are: following one
// here could leave the configured origin.
#[wasm_bindgen(inline_js = r#"
export function attempt_js(url, method, headers, body, timeoutMs) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  const init = { method, redirect: "manual", signal: ctl.signal };
  if (headers !== undefined) init.headers = headers;
  if (body !== undefined) init.body = body;
  return fetch(url, init).then(
    (res) => { clearTimeout(timer); return res; },
    (err) => { clearTimeout(timer); return ctl.signal.aborted ? 0 : String(err && err.message !== undefined ? err.message : err); },
  );
}
"#)]
extern "C" {
    fn attempt_js(
        url: &str,
        method: &str,
        headers: Option<&web_sys::Headers>,
        body: Option<&JsValue>,
        timeout_ms: u32,
    ) -> js_sys::Promise;
}

/// `fetch` with the timeout; on timeout the request is aborted so the
/// connection does not linger. Only the wait for the headers is timed.
pub async fn send(
    url: &str,
    method: &str,
    headers: Option<&web_sys::Headers>,
    body: Option<&JsValue>,
    timeout_ms: u64,
) -> Result<web_sys::Response, Failure> {
    let timeout = u32::try_from(timeout_ms).unwrap_or(u32::MAX);
    let value = JsFuture::from(attempt_js(url, method, headers, body, timeout))
        .await
        .map_err(|_| Failure::Network)?;
    if let Some(message) = value.as_string() {
        return Err(classify_fetch_error(&message));
    }
    if value.as_f64() == Some(0.0) {
        return Err(Failure::Timeout);
    }
    value
        .dyn_into::<web_sys::Response>()
        .map_err(|_| Failure::Network)
}

/// One health probe: GET the origin's health path. Judged like any
/// attempt: None when the origin answered with something a client could use.
pub async fn probe(origin: &Origin, timeout_ms: u64) -> Option<Failure> {
    let url = format!("{}{}", origin.base, origin.health_path);
    match send(&url, "GET", None, None, timeout_ms).await {
        Ok(res) => {
            let failure = classify_status(res.status());
            discard(Some(res));
            failure
        }
        Err(failure) => Some(failure),
    }
}

/// Releases a response we will not forward, so its connection is freed.
pub fn discard(res: Option<web_sys::Response>) {
    if let Some(stream) = res.and_then(|r| r.body()) {
        // The promise settles on its own; nobody needs its result.
        let _ = stream.cancel();
    }
}
