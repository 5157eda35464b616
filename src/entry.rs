//! The request path's entry points: src/js/entry.mjs calls `fetch` (the
//! full path, when the fast path cannot serve a request) and `scheduled`.
//! Neither can fail: every error is a response (src/respond.rs) or a log
//! line.

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use crate::isolate::{self, Loaded};
use crate::proxy::proxy;
use crate::runtime::{Context, Env, RawContext};
use crate::{checker, respond};

#[wasm_bindgen]
pub async fn fetch(req: web_sys::Request, env: Env, ctx: RawContext) -> web_sys::Response {
    let ctx = Context::new(ctx);
    let isolate = match isolate::load(&env) {
        Loaded::Ready(isolate) => isolate,
        Loaded::Broken(problem) => return respond::plain(500, &problem),
    };
    #[cfg(feature = "panic-test")]
    panic_on_request(&req);
    proxy(req, &isolate, &env, &ctx, None, None, None).await
}

/// Test builds only: the panic a bug would cause, on demand.
#[cfg(feature = "panic-test")]
#[allow(clippy::panic)]
fn panic_on_request(req: &web_sys::Request) {
    if req.url().ends_with("/__test/panic") {
        panic!("panic-test: /__test/panic");
    }
}

/// The Cron Trigger keeps the global checker's alarm chain alive. (The
/// event and its context are the runtime's; nothing here needs them.)
#[wasm_bindgen]
pub async fn scheduled(_event: JsValue, env: Env, _ctx: JsValue) {
    checker::keep_alive(&env).await;
}
