//! The isolate's periodic work: the global checker's consultation, probes
//! of down origins and the colo's shared verdicts, each at most as often as
//! its cadence (`failover_core::edge::Isolate::next_due_ms`). None of it is
//! on a request's path while the isolate's own map has a healthy origin: it
//! runs beside the request, in `ctx.waitUntil`. Only a request that finds
//! every origin down waits for the colo read, which may say one is back.

use std::rc::Rc;

use worker::{Context, Env};

use crate::isolate::Isolate;
use crate::{checker, clock, colo, probe};

/// Starts whatever work is due for a request on the full path: in the
/// background, unless no origin is up (then the colo read is awaited).
/// `url` is the request's (the checker learns the public hostname from it).
pub async fn start(isolate: &Rc<Isolate>, env: &Env, ctx: &Context, url: &str) {
    isolate.reconsider_shared_downs();
    let now = clock::now_ms();
    checker::consult_if_due(ctx, env, isolate, now, url);
    probe::start_due(ctx, isolate, now);
    if !isolate.colo_read_due(now) {
        return;
    }
    if isolate.any_up() {
        let isolate = Rc::clone(isolate);
        ctx.wait_until(async move { colo::refresh(&isolate, now).await });
    } else {
        colo::refresh(isolate, now).await;
    }
}

/// All of it, for a caller already in the background (the fast path's
/// `periodic_work`, with its request's `url`).
pub async fn run(isolate: &Rc<Isolate>, env: &Env, ctx: &Context, url: &str) {
    let now = clock::now_ms();
    checker::consult_if_due(ctx, env, isolate, now, url);
    probe::start_due(ctx, isolate, now);
    colo::refresh(isolate, now).await;
}
