//! The isolate's periodic work: the global checker's consultation, probes
//! of down origins and the colo's shared verdicts, each at most as often as
//! its cadence (`failover_core::edge::Isolate::next_due_ms`), the colo
//! read only when it can change where a request goes (some origin down, or
//! an attempt kept waiting: `Isolate::colo_read_wanted`). None of it is
//! on a request's path while the isolate's own map has a healthy origin: it
//! runs beside the request, in `ctx.waitUntil`. Only a request that finds
//! every origin down waits for the colo read, which may say one is back.

use std::rc::Rc;

use worker::{Context, Env};

use crate::isolate::Isolate;
use crate::{clock, colo, global, probe};

/// Starts whatever work is due for a request on the full path: in the
/// background, unless no origin is up (then the colo read is awaited).
pub async fn start(isolate: &Rc<Isolate>, env: &Env, ctx: &Context) {
    isolate.reconsider_shared_downs();
    let now = clock::now_ms();
    global::consult_if_due(ctx, env, isolate, now);
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
/// `periodic_work`).
pub async fn run(isolate: &Rc<Isolate>, env: &Env, ctx: &Context) {
    let now = clock::now_ms();
    global::consult_if_due(ctx, env, isolate, now);
    probe::start_due(ctx, isolate, now);
    colo::refresh(isolate, now).await;
}
