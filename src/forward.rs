//! One attempt: send the request to one origin and wait at most the attempt
//! timeout for its response headers. The body is not timed: once the origin
//! has answered, a slow body streams through to the client.

use std::time::Duration;

use failover_core::classify::{classify_fetch_error, classify_status, Failure};
use failover_core::config::Origin;
use futures_util::future::{select, Either};
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::{js_sys, web_sys, Delay};

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

/// `fetch` raced against the timeout; the loser is aborted so the
/// connection does not linger.
pub async fn send(
    url: &str,
    method: &str,
    headers: Option<&web_sys::Headers>,
    body: Option<&JsValue>,
    timeout_ms: u64,
) -> Result<web_sys::Response, Failure> {
    let controller = web_sys::AbortController::new().map_err(|_| Failure::Network)?;
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    if let Some(headers) = headers {
        init.set_headers(headers.as_ref());
    }
    if let Some(body) = body {
        init.set_body(body);
    }
    // Redirects go to the client as they are: following one here could
    // leave the configured origin.
    init.set_redirect(web_sys::RequestRedirect::Manual);
    init.set_signal(Some(&controller.signal()));

    let global: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
    let fetch = JsFuture::from(global.fetch_with_str_and_init(url, &init));
    let timeout = Delay::from(Duration::from_millis(timeout_ms));
    match select(fetch, timeout).await {
        Either::Left((Ok(value), _)) => value
            .dyn_into::<web_sys::Response>()
            .map_err(|_| Failure::Network),
        Either::Left((Err(error), _)) => Err(classify_fetch_error(&error_message(&error))),
        Either::Right(((), _)) => {
            controller.abort();
            Err(Failure::Timeout)
        }
    }
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

fn error_message(error: &JsValue) -> String {
    if let Some(e) = error.dyn_ref::<js_sys::Error>() {
        return String::from(e.message());
    }
    error.as_string().unwrap_or_default()
}
