//! Cloudflare Access service tokens: an origin behind Access gets
//! `CF-Access-Client-Id` / `CF-Access-Client-Secret` on every attempt and
//! probe, replacing any a client sent. The secret comes from a Worker secret
//! (`access_client_secret_var`); it is never logged, shown in the status
//! endpoint or put in a response.

use failover_core::edge::config::Origin;

#[cfg(not(feature = "operator"))]
use crate::js_bridge;

pub const CLIENT_ID: &str = "cf-access-client-id";
pub const CLIENT_SECRET: &str = "cf-access-client-secret";

#[cfg(not(feature = "operator"))]
/// The headers an attempt to `origin` carries, the same on both paths
/// (`forward_headers` in src/js/attempt.mjs): the client's without its
/// hop-by-hop headers, with `X-Forwarded-Host`/`-Proto` from `request_url`
/// and the origin's service token in place of any the client sent; without
/// `Authorization` when `workers_token` (it carries the Worker's own
/// token: `failover_core::secret::carries_any`).
pub fn headers_for(
    origin: &Origin,
    client: &web_sys::Headers,
    request_url: &str,
    workers_token: bool,
) -> web_sys::Headers {
    let token = origin.access.as_ref();
    js_bridge::forward_headers(
        client,
        request_url,
        token.map(|t| t.client_id.as_str()),
        token.map(|t| t.client_secret.as_str()),
        workers_token,
    )
}

/// A probe's headers: the service token alone, or none.
pub fn probe_headers(origin: &Origin) -> Option<web_sys::Headers> {
    let token = origin.access.as_ref()?;
    let headers = web_sys::Headers::new().ok()?;
    headers.set(CLIENT_ID, &token.client_id).ok()?;
    headers.set(CLIENT_SECRET, &token.client_secret).ok()?;
    Some(headers)
}
