//! Cloudflare Access service tokens: an origin behind Access gets
//! `CF-Access-Client-Id` / `CF-Access-Client-Secret` on every attempt and
//! probe, replacing any a client sent. The secret comes from a Worker secret
//! (`access_client_secret_var`); it is never logged, shown in the status
//! endpoint or put in a response.

use failover_core::config::Origin;
use worker::web_sys;

pub const CLIENT_ID: &str = "cf-access-client-id";
pub const CLIENT_SECRET: &str = "cf-access-client-secret";

/// The headers an attempt to `origin` carries: the client's as they are, or
/// a copy with the origin's service token in place of the client's.
pub fn headers_for(origin: &Origin, client: &web_sys::Headers) -> web_sys::Headers {
    let Some(token) = &origin.access else {
        return client.clone();
    };
    let Ok(headers) = web_sys::Headers::new_with_headers(client) else {
        return client.clone();
    };
    // `set` replaces what the client sent; it fails only on values a
    // config check already refused (not visible ASCII).
    let _ = headers.set(CLIENT_ID, &token.client_id);
    let _ = headers.set(CLIENT_SECRET, &token.client_secret);
    headers
}

/// A probe's headers: the service token alone, or none.
pub fn probe_headers(origin: &Origin) -> Option<web_sys::Headers> {
    let token = origin.access.as_ref()?;
    let headers = web_sys::Headers::new().ok()?;
    headers.set(CLIENT_ID, &token.client_id).ok()?;
    headers.set(CLIENT_SECRET, &token.client_secret).ok()?;
    Some(headers)
}
