//! Background probes of down origins. They run in `ctx.wait_until`, after
//! the client has its response, never on its critical path; a probe is an
//! attempt like any other, judged by the same classification.

use std::rc::Rc;

use failover_core::edge::classify::Failure;
use futures_util::future::join_all;

use crate::isolate::Isolate;
use crate::runtime::{Context, Env};
use crate::{checker, clock, colo, forward};

/// Starts the probes that are due, if any. Costs one pass over the map when
/// none is.
pub fn start_due(ctx: &Context, isolate: &Rc<Isolate>, now_ms: u64) {
    if !isolate.health().probe_due(now_ms) {
        return;
    }
    let due = isolate.change_health(|h| h.take_due_probes(now_ms));
    let isolate = Rc::clone(isolate);
    ctx.wait_until(async move {
        join_all(
            due.into_iter()
                .map(|origin| probe(Rc::clone(&isolate), origin)),
        )
        .await;
    });
}

/// An app answered a client with a 5xx of its own, or did not answer in
/// time (`app_error`, `Failure::needs_confirmation`): probe the
/// origin's health path now, in the background, and mark it down only if
/// the probe agrees (`HealthMap::take_confirmation` limits this to one
/// probe per origin at a time and per second). A probe that agrees is
/// evidence on live traffic: the global checker hears of it at once.
pub fn confirm(
    ctx: &Context,
    env: &Env,
    isolate: &Rc<Isolate>,
    origin: usize,
    app_error: Failure,
    url: &str,
) {
    if !isolate.change_health(|h| h.take_confirmation(origin, clock::now_ms())) {
        return;
    }
    let isolate = Rc::clone(isolate);
    let env = env.clone();
    let url = url.to_owned();
    ctx.wait_until(async move {
        let result = match isolate.config.origins.get(origin) {
            Some(target) => forward::probe(target, isolate.config.attempt_timeout_ms).await,
            None => None,
        };
        let change = isolate
            .change_health(|h| h.record_confirmation(origin, app_error, result, clock::now_ms()));
        if let Some(change) = &change {
            isolate.flipped(change);
            colo::write(&isolate, origin).await;
            if let Some(report) = checker::report(&env, &isolate, origin, &url) {
                report.await;
            }
        }
    });
}

async fn probe(isolate: Rc<Isolate>, origin: usize) {
    let Some(target) = isolate.config.origins.get(origin) else {
        return;
    };
    let result = forward::probe(target, isolate.config.attempt_timeout_ms).await;
    let change = isolate.change_health(|h| h.record_probe(origin, result, clock::now_ms()));
    if let Some(change) = &change {
        isolate.flipped(change);
    }
    // Share a flip, and keep re-confirming a "down" so isolates that start
    // later in this location skip the dead origin too.
    if change.is_some() || result.is_some() {
        colo::write(&isolate, origin).await;
    }
}
