//! The edge Worker: a thin workers-rs shell around `failover-core`.
//!
//! Layout, in the order a request meets it:
//! - [`isolate`]: the config (read once from `[vars]`) and the health map,
//!   which live as long as the isolate does.
//! - [`status`]: the token-protected status endpoint.
//! - [`body`]: whether the request body is buffered for a replay or streamed once.
//! - [`forward`]: one attempt against one origin, with its timeout.
//! - [`respond`]: the headers added to a proxied response, and our own errors.
//! - [`fast`]: the lease src/js/entry.mjs's fast path runs on (which origin,
//!   until when; revoked by any change to the health map), and the way back
//!   into [`proxy`] when that attempt fails.
//! - [`probe`]: background health probes of down origins (`ctx.wait_until`).
//! - [`colo`]: verdicts shared with the location's other isolates (Cache API).
//! - [`global`]: the opt-in global checker (a Durable Object) and its cron.
//!
//! Nothing here may panic: a panic re-initialises the Wasm instance and wipes
//! the health map, so every fallible call is handled.
#![cfg(target_arch = "wasm32")]

mod body;
mod clock;
mod colo;
mod fast;
mod forward;
mod global;
mod isolate;
mod log;
mod probe;
mod respond;
mod status;

use std::rc::Rc;

use failover_core::attempts::{AfterFailure, Attempts};
use failover_core::classify::Failure;
use failover_core::replay::BodyPlan;
use failover_core::target::upstream_url;
use worker::{event, web_sys, Context, Env, ScheduleContext, ScheduledEvent};

use crate::body::BodyError;
use crate::forward::Outcome;
use crate::isolate::{Isolate, Loaded};

#[event(fetch)]
async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> worker::Result<web_sys::Response> {
    let isolate = match isolate::load(&env) {
        Loaded::Ready(isolate) => isolate,
        Loaded::Broken(problem) => return Ok(respond::plain(500, &problem)),
    };
    Ok(proxy(req, &isolate, &env, &ctx, None).await)
}

/// The Cron Trigger keeps the global checker's alarm chain alive.
#[event(scheduled)]
async fn scheduled(_event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    global::keep_alive(&env).await;
}

/// The whole request, the slow and complete way. `first` is an attempt the
/// fast path (src/js/entry.mjs) already made and that did not succeed: the
/// walk over the origins picks up from there.
async fn proxy(
    req: web_sys::Request,
    isolate: &Rc<Isolate>,
    env: &Env,
    ctx: &Context,
    mut first: Option<(usize, Outcome)>,
) -> web_sys::Response {
    let config = &isolate.config;
    let url = req.url();
    let now = clock::now_ms();
    colo::refresh(isolate, now).await;
    global::consult_if_due(ctx, env, isolate, now);
    if status::is_status_request(&req, &url, config) {
        return status::answer(&req, isolate);
    }
    probe::start_due(ctx, isolate, now);

    let method = req.method();
    let body = match body::RequestBody::prepare(&req, &method, config.replay_body_max_bytes).await {
        Ok(body) => body,
        Err(BodyError::Unreadable) => {
            return respond::plain(400, "the request body could not be read")
        }
        Err(BodyError::NotAllowed) => {
            return respond::plain(
                400,
                "a GET or HEAD request cannot carry a body through this proxy",
            )
        }
    };
    let headers = req.headers();
    let mut order = isolate.health().attempt_order();
    if let Some((tried, _)) = &first {
        order.retain(|o| o != tried);
        order.insert(0, *tried);
    }
    let mut attempts = Attempts::new(order, &method, body.plan());
    let Some(mut current) = attempts.first() else {
        return respond::plain(502, "no origin is configured");
    };
    loop {
        let Some(origin) = config.origins.get(current) else {
            return respond::plain(502, "no origin is available");
        };
        let Some(target) = upstream_url(&origin.base, &url) else {
            return respond::plain(400, "the request path is not allowed");
        };
        let outcome = match first.take() {
            Some((_, outcome)) => outcome,
            None => {
                forward::attempt(&target, &method, &headers, &body, config.attempt_timeout_ms).await
            }
        };
        let (failure, failed_response) = match outcome {
            Outcome::Answer(res) => {
                // Evidence too: an older shared "down" must not override it.
                isolate.answered(current, now);
                return respond::served_by(res, &origin.name, current != 0);
            }
            Outcome::Failed(failure, res) => (failure, res),
            Outcome::Refused => return respond::plain(400, "the request could not be forwarded"),
        };
        // A broken upload stream may be the client's doing (it went away):
        // no reason to call the origin down.
        let origin_at_fault = !(body.plan() == BodyPlan::Streamed && failure == Failure::Network);
        let change = if origin_at_fault {
            isolate
                .health_mut()
                .record_failure(current, failure, clock::now_ms())
        } else {
            None
        };
        if let Some(change) = change {
            log::line(&failover_core::report::health_change(config, &change));
            colo::publish(ctx, isolate, current);
        }
        let next = attempts.after_failure(failure);
        log::attempt_failed(config, current, &method, failure, &next);
        match next {
            AfterFailure::TryOrigin(i) => {
                forward::discard(failed_response);
                current = i;
            }
            AfterFailure::PassThrough => {
                return match failed_response {
                    Some(res) => respond::served_by(res, &origin.name, current != 0),
                    None => respond::plain(502, "the origin could not be reached"),
                };
            }
            AfterFailure::GiveUp { status, message } => {
                forward::discard(failed_response);
                return respond::plain(status, message);
            }
        }
    }
}
