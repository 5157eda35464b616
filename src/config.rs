//! The config from the Worker's vars and secrets, read alike by the
//! request path (src/isolate.rs, once per isolate) and by the operator
//! module's checker (src/checker/object.rs, once per object).

use failover_core::edge::config::{ConfigError, WorkerConfig, CHECKER_BINDING};
use wasm_bindgen::{JsCast, JsValue};

use crate::js_bridge;

/// The config from `env`'s (the bindings object's) vars and secrets, and whether the global
/// checker's binding exists (`NOTIFY` needs it). The isolates and the
/// checker read it alike.
pub fn read_config(env: &JsValue) -> Result<WorkerConfig, ConfigError> {
    WorkerConfig::from_vars(|name| {
        if name == CHECKER_BINDING {
            return js_bridge::checker_bound_js(env, name).then(|| "bound".to_string());
        }
        var_text(env, name)
    })
}

/// A var's value as text (a setting, or the secret an origin's
/// `access_client_secret_var` names): strings as they are (secrets, `--var`), anything
/// else (TOML arrays, numbers) as JSON.
fn var_text(env: &JsValue, name: &str) -> Option<String> {
    let value = js_sys::Reflect::get(env, &JsValue::from_str(name)).ok()?;
    if value.is_undefined() || value.is_null() {
        return None;
    }
    if let Some(text) = value.as_string() {
        return Some(text);
    }
    if value.is_instance_of::<js_sys::Function>() {
        return None;
    }
    js_sys::JSON::stringify(&value)
        .ok()
        .and_then(|s| s.as_string())
}
