//! Every JS function the Rust shell imports, in one leaf module: the lease
//! (src/js/lease.mjs), silence (src/js/silence.mjs), the attempt
//! (src/js/attempt.mjs), the colo read and a timer (src/js/colo.mjs), the
//! admin API's bounded body read (src/js/admin.mjs), the global checker's
//! object as the request path reaches it (src/js/checker.mjs), the checker's
//! deliveries (src/js/notify.mjs), the fallback page
//! (src/js/fallback.mjs) and the operator module's renderers
//! (src/js/operator.mjs). Nothing here depends on the rest of the shell.

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

#[wasm_bindgen(module = "/src/js/lease.mjs")]
extern "C" {
    /// Ends the current lease: the next request asks `fast_lease` again.
    pub fn revoke_lease();
    /// When the fast path last got an answer from `origin` (ms, 0 if never):
    /// evidence that the health map pulls before adopting a shared verdict.
    pub fn fast_evidence(origin: usize) -> f64;
}

#[wasm_bindgen(module = "/src/js/colo.mjs")]
extern "C" {
    /// Every key's colo verdict (text, or null), in one crossing.
    pub fn colo_read_js(keys: &js_sys::Array) -> js_sys::Promise;
    /// Writes one value under `key` for `ttl_s` seconds; resolves to null,
    /// or the error's message.
    pub fn colo_write_js(key: &str, verdict: &str, ttl_s: f64) -> js_sys::Promise;
    /// Resolves after `ms` (a timer, for work already in the background).
    pub fn sleep_js(ms: f64) -> js_sys::Promise;
}

#[wasm_bindgen(module = "/src/js/admin.mjs")]
extern "C" {
    /// The admin API's request body as text, or null past `max` bytes.
    pub fn read_bounded_js(request: &web_sys::Request, max: f64) -> js_sys::Promise;
    /// The Rate Limiting binding `binding`'s verdict on one more wrong
    /// token from `key`: resolves to false when over its limit, true
    /// otherwise (no such binding included); never rejects.
    pub fn guess_allowed_js(env: &JsValue, binding: &str, key: &str) -> js_sys::Promise;
}

#[wasm_bindgen(module = "/src/js/silence.mjs")]
extern "C" {
    /// Whether `origin` is silent now (src/js/silence.mjs: the one
    /// definition both paths use).
    pub fn is_silent(origin: usize, silence_ms: f64, timeout_ms: f64) -> bool;
    /// Whether some origin has had an attempt outstanding for `for_ms` or
    /// longer (src/js/silence.mjs `isWaiting`).
    pub fn is_waiting(for_ms: f64, timeout_ms: f64) -> bool;
}

// The attempt itself is JS (shared with the fast path in entry.mjs): one
// crossing in, one promise out.
#[wasm_bindgen(module = "/src/js/attempt.mjs")]
extern "C" {
    pub fn attempt_js(
        url: &str,
        method: &str,
        headers: Option<&web_sys::Headers>,
        body: Option<&JsValue>,
        streamed_length: Option<f64>,
        timeout_ms: u32,
        origin: u32,
    ) -> js_sys::Promise;
    /// The client's headers for an attempt: hop-by-hop headers dropped,
    /// X-Forwarded-Host/-Proto set, an Access service token in place of
    /// the client's, Authorization dropped when it carries the Worker's
    /// own token (`drop_authorization`).
    pub fn forward_headers(
        client: &web_sys::Headers,
        request_url: &str,
        access_id: Option<&str>,
        access_secret: Option<&str>,
        drop_authorization: bool,
    ) -> web_sys::Headers;
    /// Resolves to whether a failed attempt's answer is Cloudflare's 530
    /// with error 1033 (the Tunnel has no connector); never rejects.
    pub fn no_connector_js(res: &web_sys::Response) -> js_sys::Promise;
    pub fn probe_js(
        url: &str,
        timeout_ms: u32,
        headers: Option<&web_sys::Headers>,
    ) -> js_sys::Promise;
}

// The global checker's deliveries (src/checker/deliver.rs); never on a
// request's path.
#[wasm_bindgen(module = "/src/js/notify.mjs")]
extern "C" {
    /// HMAC-SHA256 of `body` under `secret` (WebCrypto): resolves to the
    /// MAC's bytes (a `Uint8Array`).
    pub fn hmac_sha256(secret: &str, body: &str) -> js_sys::Promise;
    /// POSTs `body` to `url`: resolves to `{ status, retry_after }` (the
    /// answer's status, or 0 when none came within `timeout_ms`; its
    /// `Retry-After` header or null); never rejects, never follows a
    /// redirect, never reads the answer's body.
    pub fn post_js(
        url: &str,
        body: &str,
        headers: &web_sys::Headers,
        timeout_ms: u32,
    ) -> js_sys::Promise;
}

#[wasm_bindgen(module = "/src/js/checker.mjs")]
extern "C" {
    /// Whether `env` has the Durable Object namespace `binding`.
    pub fn checker_bound_js(env: &JsValue, binding: &str) -> bool;
    /// The id of `binding`'s object named `object`, as text; None without
    /// the binding.
    pub fn checker_id_js(env: &JsValue, binding: &str, object: &str) -> Option<String>;
    /// One request to that object: resolves to `[status, text, header]`
    /// (`header`'s value in the answer, or null), or to why there is no
    /// answer (a string); never rejects.
    #[allow(clippy::too_many_arguments)]
    pub fn checker_fetch_js(
        env: &JsValue,
        binding: &str,
        object: &str,
        url: &str,
        method: &str,
        body: Option<&str>,
        header: Option<&str>,
    ) -> js_sys::Promise;
}

#[wasm_bindgen(module = "/src/js/operator.mjs")]
extern "C" {
    /// The status page rendered by the operator module (instantiated on
    /// first use): `representation` is "html" or "text", `doc` the status
    /// document as JSON. Throws only if that module cannot be had.
    #[wasm_bindgen(catch)]
    pub fn render_status_js(representation: &str, doc: &str) -> Result<String, JsValue>;
}

#[wasm_bindgen(module = "/src/js/fallback.mjs")]
extern "C" {
    /// One GET or HEAD of the fallback page's URL, aborted after
    /// `timeout_ms`; resolves like `attempt_js`.
    pub fn fallback_fetch_js(url: &str, method: &str, timeout_ms: u32) -> js_sys::Promise;
    /// The 503 the client gets: `res`'s body streamed (or `page`), with
    /// Retry-After, x-failover: fallback and Cache-Control: no-store.
    pub fn fallback_response_js(
        res: Option<&web_sys::Response>,
        page: Option<&str>,
        retry_after_s: f64,
    ) -> web_sys::Response;
}
