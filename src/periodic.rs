//! The isolate's periodic work: the global checker's consultation (directly,
//! or through the location's copy of its answer, src/consult.rs), probes of
//! down origins, the colo's shared verdicts and overrides coming into or out
//! of force by themselves, each at most as often as its cadence
//! (`failover_core::edge::Isolate::next_due_ms`); the origins' verdicts only
//! when they can change where a request goes (some origin down, or an
//! attempt kept waiting: `Isolate::colo_read_wanted`), the location's copy
//! of the checker's answer on its own cadence (overrides ride in it). None
//! of it is on a request's path while the isolate's own map has a healthy
//! origin: it runs beside the request, in `ctx.waitUntil`. Only a request
//! that finds every origin down waits for the colo read, which may say one
//! is back (never for a consultation of the checker).

use std::rc::Rc;

use crate::colo::SnapshotRead;
use crate::isolate::Isolate;
use crate::runtime::{Context, Env};
use crate::{checker, clock, colo, consult, probe};

/// Starts whatever work is due for a request on the full path: in the
/// background, unless no origin is up (then the colo read is awaited).
/// `url` is the request's (the checker learns the public hostname from it).
pub async fn start(isolate: &Rc<Isolate>, env: &Env, ctx: &Context, url: &str) {
    isolate.reconsider_shared_downs();
    let now = clock::now_ms();
    isolate.tick_overrides(now);
    checker::consult_if_due(ctx, env, isolate, now, url);
    probe::start_due(ctx, isolate, now);
    // The location's copy of the checker's answer keeps its cadence when
    // the origins' verdicts are not wanted: overrides ride in it.
    if !isolate.snapshot_read_due(now) && !isolate.colo_read_due(now) {
        return;
    }
    if isolate.any_up() {
        let isolate = Rc::clone(isolate);
        let env = env.clone();
        ctx.wait_until(async move { read_colo(&isolate, &env, now).await });
    } else {
        let read = colo::refresh(isolate, now).await;
        if stale(isolate, read, now) {
            let (isolate, env) = (Rc::clone(isolate), env.clone());
            ctx.wait_until(async move { consult::claim_and_ask(&env, &isolate, now).await });
        }
    }
}

/// All of it, for a caller already in the background (the fast path's
/// `periodic_work`, with its request's `url`).
pub async fn run(isolate: &Rc<Isolate>, env: &Env, ctx: &Context, url: &str) {
    let now = clock::now_ms();
    isolate.tick_overrides(now);
    checker::consult_if_due(ctx, env, isolate, now, url);
    probe::start_due(ctx, isolate, now);
    read_colo(isolate, env, now).await;
}

/// The colo read, and the consultation it may find due (in the background).
async fn read_colo(isolate: &Rc<Isolate>, env: &Env, now: u64) {
    let read = colo::refresh(isolate, now).await;
    if stale(isolate, read, now) {
        consult::claim_and_ask(env, isolate, now).await;
    }
}

/// Adopts the location's copy if it was read; whether it is due for a
/// fresh one.
fn stale(isolate: &Isolate, read: SnapshotRead, now: u64) -> bool {
    match read {
        SnapshotRead::Read(entry) => consult::after_read(isolate, entry.as_deref(), now),
        SnapshotRead::NotRead => false,
    }
}
