//! The request path's entry points: src/js/entry.mjs calls `fetch` (the
//! full path, when the fast path cannot serve a request) and `scheduled`.

use worker::{event, web_sys, Context, Env, ScheduleContext, ScheduledEvent};

use crate::isolate::{self, Loaded};
use crate::proxy::proxy;
use crate::{checker, respond};

#[event(fetch)]
async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> worker::Result<web_sys::Response> {
    let isolate = match isolate::load(&env) {
        Loaded::Ready(isolate) => isolate,
        Loaded::Broken(problem) => return Ok(respond::plain(500, &problem)),
    };
    #[cfg(feature = "panic-test")]
    panic_on_request(&req);
    Ok(proxy(req, &isolate, &env, &ctx, None, None, None).await)
}

/// Test builds only: the panic a bug would cause, on demand.
#[cfg(feature = "panic-test")]
#[allow(clippy::panic)]
fn panic_on_request(req: &web_sys::Request) {
    if req.url().ends_with("/__test/panic") {
        panic!("panic-test: /__test/panic");
    }
}

/// The Cron Trigger keeps the global checker's alarm chain alive.
#[event(scheduled)]
async fn scheduled(_event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    checker::keep_alive(&env).await;
}
