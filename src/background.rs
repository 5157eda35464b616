//! Work that runs after (or beside) the response, in `ctx.waitUntil`: the
//! probes, the colo reads and writes, the checker's consultations and
//! reports. All of it goes through `run`, boxed to one future type:
//! workers-rs's `Context::wait_until` is generic over the future, and each
//! caller's own type cost a copy of its promise plumbing, 2 KB of the
//! request path's gzipped Wasm for eight callers (issue #20). The box is
//! one allocation per piece of background work, never on the fast path.

use std::future::Future;
use std::pin::Pin;

use worker::Context;

/// `work` in `ctx.waitUntil`: the runtime keeps the isolate for it after
/// the response is sent.
pub fn run(ctx: &Context, work: impl Future<Output = ()> + 'static) {
    let boxed: Pin<Box<dyn Future<Output = ()>>> = Box::pin(work);
    ctx.wait_until(boxed);
}
