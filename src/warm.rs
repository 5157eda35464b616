//! A warm failover path. The first failure in an isolate runs the full
//! path's code for the first time, and the runtime compiles Wasm functions
//! on first use: `make bench` measured that first failover at 8-25 ms to the
//! first good response, against 3-6 ms for the next one. So, once per Wasm
//! instance, right after the first lease is granted and off the client's
//! path (`ctx.waitUntil` in src/js/entry.mjs), this runs the pure parts of
//! that path once (`proxy::plan`, the function the full path itself calls,
//! then the walk over a few failures), harmlessly: no I/O and no state changed. It ends with the
//! instance's one `instance_ready` log line: `make bench` found an isolate's
//! first log line a large part of the first failover's extra cost (a
//! failover logs), so it is written here, off the client's path.

use failover_core::edge::classify::{
    classify_fetch_error, classify_response, Failure, ATTEMPT_TIMED_OUT,
};
use failover_core::edge::replay::BodyPlan;
use failover_core::edge::report;
use failover_core::edge::target::{is_status_request, probe_url, upstream_url};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use crate::isolate::{self, Loaded};
use crate::runtime::Env;
use crate::{forward, respond};

#[wasm_bindgen]
pub async fn warm_full_path(env: Env) {
    let Loaded::Ready(isolate) = isolate::load(&env) else {
        return;
    };
    let config = &isolate.config;
    // The same plan the full path makes, for a request like a client's.
    let Ok(headers) = web_sys::Headers::new() else {
        return;
    };
    let _ = headers.set("cookie", "a=b");
    let _ = headers.set(config.site().hash_key.header(), "warm");
    let (_, mut attempts) = crate::proxy::plan(
        &isolate,
        config.site(),
        &headers,
        "POST",
        BodyPlan::Buffered,
        0.5,
        None,
    );
    let mut current = attempts.first().unwrap_or(0);
    for failure in [
        classify_response(503, None).unwrap_or(Failure::Status(503)),
        classify_response(302, Some("https://warm.cloudflareaccess.com/"))
            .unwrap_or(Failure::Network),
        classify_fetch_error("connection refused"),
        Failure::Timeout,
    ] {
        let next = attempts.after_failure(failure);
        let _ = report::attempt_failed(config, current, "POST", failure, &next);
        if let failover_core::edge::attempts::AfterFailure::TryOrigin(i) = next {
            current = i;
        }
    }
    if let Some(origin) = config.origins.first() {
        let _ = upstream_url(&origin.base, "https://warm.invalid/warm?x=1");
        let _ = probe_url(&origin.base, &origin.health_path);
        let _ = is_status_request("https://warm.invalid/", "GET", Some(&config.status_path));
        let _ = crate::access::probe_headers(origin);
        // The Response work of a failover: our own answer, re-tagged.
        let answer = respond::plain(502, "warm");
        drop(respond::served_by(
            answer,
            origin,
            true,
            "https://warm.invalid/",
        ));
    }
    // The async half: a body read as the fast path hands one over (the
    // replay budget left alone: its peak is clients' bodies only), and an
    // attempt's promise settled (already resolved: nothing is sent).
    if let Some(req) = synthetic_upload() {
        if let Ok(read) = req.array_buffer() {
            if let Ok(buffer) = JsFuture::from(read).await {
                let body = crate::body::RequestBody::prepare(&req, "POST", &isolate, Some(buffer));
                drop(body.await);
            }
        }
    }
    let timed_out = js_sys::Promise::resolve(&JsValue::from_f64(ATTEMPT_TIMED_OUT));
    drop(forward::outcome(forward::settle(timed_out).await));
    crate::log::line(&report::instance_ready(config));
}

/// A POST with a one-byte body that goes nowhere: only its body is read.
fn synthetic_upload() -> Option<web_sys::Request> {
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_body(&JsValue::from_str("w"));
    let req = web_sys::Request::new_with_str_and_init("https://warm.invalid/", &init).ok()?;
    req.headers().set("content-length", "1").ok()?;
    Some(req)
}
