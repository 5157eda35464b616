//! What the client gets: the origin's response with `X-Served-By` (and
//! `x-failover` when it is not the primary), or a one-line error of ours
//! that never names an origin URL or address.

use failover_core::edge::config::Origin;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

// One crossing instead of five (body getter, constructor, headers getter,
// one or two header sets); shared with the fast path in entry.mjs.
#[wasm_bindgen(module = "/src/js/attempt.mjs")]
extern "C" {
    #[wasm_bindgen(catch)]
    fn served_by_js(
        res: &web_sys::Response,
        origin: &str,
        failed_over: bool,
        request_url: &str,
        origin_url: &str,
    ) -> Result<web_sys::Response, JsValue>;
}

/// Re-wraps the origin's response so its headers can be changed. The body
/// stream is handed over as is (never read into Wasm), and passing the
/// response itself as the init keeps status, status text, headers and a
/// WebSocket (101) attached. A redirect to the origin's own host becomes
/// one to the site the client asked (`request_url`; attempt.mjs
/// `publicLocation`).
pub fn served_by(
    res: web_sys::Response,
    origin: &Origin,
    failed_over: bool,
    request_url: &str,
) -> web_sys::Response {
    served_by_js(&res, &origin.name, failed_over, request_url, &origin.base)
        .unwrap_or_else(|_| plain(502, "the origin's response could not be forwarded"))
}

/// The answer to a request for a host no site claims (`SITES`' `hosts`):
/// 421 Misdirected Request, the status RFC 9110 gives a server that is
/// not configured for the request's host; never proxied to any origin.
pub fn unclaimed_host() -> web_sys::Response {
    plain(
        421,
        "no site behind this Worker answers for this host (SITES: hosts)",
    )
}

/// A plain-text answer of our own: one line, no caching.
pub fn plain(status: u16, message: &str) -> web_sys::Response {
    let init = web_sys::ResponseInit::new();
    init.set_status(status);
    if let Ok(headers) = web_sys::Headers::new() {
        let _ = headers.set("content-type", "text/plain; charset=utf-8");
        let _ = headers.set("cache-control", "no-store");
        // The JSON views and every error of ours: never sniffed as HTML.
        let _ = headers.set("x-content-type-options", "nosniff");
        init.set_headers(headers.as_ref());
    }
    let body = format!("{message}\n");
    // Only a status outside 200-599 makes this throw, and ours never are. The
    // fallback is not a Response, so the runtime answers a bare 500: worse
    // than ours, but no panic, so the health map survives.
    web_sys::Response::new_with_opt_str_and_init(Some(&body), &init)
        .unwrap_or_else(|_| wasm_bindgen::JsValue::UNDEFINED.unchecked_into())
}
