//! The brake on wrong status and admin tokens, the isolate's side
//! (`failover_core::edge::guesses` has the rule): a braked client gets 429
//! before its token is compared; a wrong token is a miss for its client,
//! counted here and, when the `TOKEN_GUESS_LIMITER` Rate Limiting binding
//! exists, across the location.

use wasm_bindgen_futures::JsFuture;

use failover_core::edge::guesses::client_key;

use crate::isolate::Isolate;
use crate::respond::plain;
use crate::runtime::Env;
use crate::{clock, js_bridge};

/// The optional Rate Limiting binding (`[[ratelimits]]` in wrangler.toml).
pub const LIMITER_BINDING: &str = "TOKEN_GUESS_LIMITER";

/// The client a request counts against: `cf-connecting-ip`, which
/// Cloudflare sets (a client's own is replaced at the edge).
pub fn client(req: &web_sys::Request) -> String {
    let address = req.headers().get("cf-connecting-ip").ok().flatten();
    client_key(address.as_deref())
}

/// 429 with `Retry-After` when `client` is braked; None: compare its token.
pub fn refused(client: &str, isolate: &Isolate) -> Option<web_sys::Response> {
    let wait_s = isolate.guesses.borrow().braked(client, clock::now_ms())?;
    let res = plain(
        429,
        "too many wrong tokens from this address; wait before trying again",
    );
    let _ = res.headers().set("retry-after", &wait_s.to_string());
    Some(res)
}

/// Records a wrong token from `client`: here, then with the location's
/// Rate Limiting binding when it is bound (never while a borrow is held).
pub async fn missed(client: &str, isolate: &Isolate, env: &Env) {
    isolate.guesses.borrow_mut().missed(client, clock::now_ms());
    let verdict = JsFuture::from(js_bridge::guess_allowed_js(
        env.as_ref(),
        LIMITER_BINDING,
        client,
    ))
    .await;
    if verdict.is_ok_and(|allowed| allowed.is_falsy()) {
        isolate.guesses.borrow_mut().brake(client, clock::now_ms());
    }
}
