//! One request from an isolate to the global checker's Durable Object,
//! through src/js/checker.mjs (workers-rs's stub and its wrappers cost the
//! request path's Wasm more than the three calls are worth), and whether
//! the checker is there at all. The asking, telling and adopting are
//! src/checker.rs's, src/consult.rs's and src/admin.rs's.

use failover_core::edge::consult::{BINDING, OBJECT_NAME};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::js_bridge;
use crate::runtime::Env;

/// Any URL reaches the one object; the path says what is asked.
const CHECKER: &str = "https://health-checker.internal";

/// Whether global health is on: the binding exists.
pub fn configured(env: &Env) -> bool {
    js_bridge::checker_bound_js(env.as_ref(), BINDING)
}

/// The checker's id as text (it names the location's copy of its answer);
/// None without the binding.
pub fn id(env: &Env) -> Option<String> {
    js_bridge::checker_id_js(env.as_ref(), BINDING, OBJECT_NAME)
}

/// What the checker answered one request.
pub struct Answer {
    pub status: u16,
    pub text: String,
    /// The header asked for, if the answer had it.
    pub header: Option<String>,
}

/// One request to the checker (src/js/checker.mjs): `method` to `path`
/// with `body`, and the value of `header` in its answer. Err says why
/// there is no answer: no binding, or the request failed.
pub async fn call(
    env: &Env,
    path: &str,
    method: &str,
    body: Option<&str>,
    header: Option<&str>,
) -> Result<Answer, String> {
    let url = format!("{CHECKER}{path}");
    let promise = js_bridge::checker_fetch_js(
        env.as_ref(),
        BINDING,
        OBJECT_NAME,
        &url,
        method,
        body,
        header,
    );
    let value = JsFuture::from(promise)
        .await
        .map_err(|_| "the request failed".to_string())?;
    if let Some(why) = value.as_string() {
        return Err(why);
    }
    let parts: js_sys::Array = value
        .dyn_into()
        .map_err(|_| "an answer of an unknown shape".to_string())?;
    Ok(Answer {
        status: parts.get(0).as_f64().map_or(0, |s| s as u16),
        text: parts.get(1).as_string().unwrap_or_default(),
        header: parts.get(2).as_string(),
    })
}

/// The text of the checker's 200 answer to `GET path`.
pub async fn get_text(env: &Env, path: &str) -> Result<String, String> {
    let answer = call(env, path, "GET", None, None).await?;
    if answer.status != 200 {
        return Err(format!("status {}", answer.status));
    }
    Ok(answer.text)
}
