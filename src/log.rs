//! Structured log lines (one JSON object per line, for `wrangler tail` and
//! Logpush). Nothing is logged for a successful request.

pub fn line(json: &str) {
    web_sys::console::log_1(&wasm_bindgen::JsValue::from_str(json));
}
