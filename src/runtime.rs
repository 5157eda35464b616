//! What the request path takes from the runtime: the Worker's bindings
//! (`Env`), the request's context (`Context`, for `ctx.waitUntil`), and
//! the Wasm instance's start. The operator module has these from the
//! workers-rs `worker` crate; the request path does not link that crate,
//! because every instance runs its start function: it chains std's default
//! panic hook (2.6 KB of the gzipped Wasm, and it prints to a stderr that
//! wasm32 does not have) and brings the `#[event]` glue's error plumbing
//! (issue #20). Everything else the request path used of it is the five
//! lines below.
//!
//! The start function does what the worker crate's does
//! (worker/src/init.rs, 0.8), which src/js/entry.mjs's panic recovery
//! relies on: the init state's `criticalError` set by a Rust panic, its
//! `instanceId` counted up by each start, and a trap scheduling a fresh
//! instance (wasm-bindgen's abort handler, which scripts/build-worker.sh
//! enables). tests/panic.test.mjs holds it to that.

use std::future::Future;

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::future_to_promise;

#[wasm_bindgen(inline_js = "
export const state = globalThis.__worker_init_state = { criticalError: false, instanceId: 0 };
")]
extern "C" {
    /// The Worker's bindings: vars, secrets, the checker's namespace.
    #[derive(Clone)]
    pub type Env;

    /// The request's context, as the runtime passes it to `fetch`.
    pub type RawContext;
    #[wasm_bindgen(method, catch, js_name = waitUntil)]
    fn wait_until(this: &RawContext, promise: &js_sys::Promise) -> Result<(), JsValue>;

    /// The panic-recovery state src/js/entry.mjs reads (same shape as the
    /// worker crate's, which the operator module keeps).
    type InitState;
    #[wasm_bindgen(thread_local_v2, js_name = state)]
    static INIT_STATE: InitState;
    #[wasm_bindgen(method, setter, js_name = criticalError)]
    fn set_critical_error(this: &InitState, val: bool);
    #[wasm_bindgen(method, getter, js_name = instanceId)]
    fn instance_id(this: &InitState) -> u32;
    #[wasm_bindgen(method, setter, js_name = instanceId)]
    fn set_instance_id(this: &InitState, val: u32);
}

/// The request's context: work handed to it runs after (or beside) the
/// response, and the runtime keeps the isolate alive for it.
pub struct Context(RawContext);

impl Context {
    pub fn new(raw: RawContext) -> Self {
        Context(raw)
    }

    /// `work` in `ctx.waitUntil`. The runtime refuses only outside a
    /// request (never the case here); the work then still runs, unwaited.
    pub fn wait_until(&self, work: impl Future<Output = ()> + 'static) {
        let promise = future_to_promise(async move {
            work.await;
            Ok(JsValue::UNDEFINED)
        });
        let _ = self.0.wait_until(&promise);
    }
}

/// The instance's start (every instance, the ones a panic recovery creates
/// included): a panic logs itself and marks the init state, so entry.mjs
/// starts a fresh instance on the next call instead of failing forever.
#[wasm_bindgen(start, private)]
fn start() {
    std::panic::set_hook(Box::new(|info| {
        let error = js_sys::Error::new(&format!("Rust panic: {info}"));
        web_sys::console::error_2(&JsValue::from_str("Critical"), &error);
        INIT_STATE.with(|state| state.set_critical_error(true));
    }));
    INIT_STATE.with(|state| state.set_instance_id(state.instance_id() + 1));
    wasm_bindgen::handler::set_on_abort(on_abort);
}

/// A trap (a panic under `panic = "abort"`): the next export call builds a
/// fresh instance.
fn on_abort() {
    wasm_bindgen::handler::schedule_reinit();
}

/// The init state, for src/js/entry.mjs.
#[wasm_bindgen(js_name = "__worker_init_state")]
pub fn worker_init_state() -> JsValue {
    INIT_STATE.with(|state| state.into())
}
