//! `GET STATUS_PATH` with `Authorization: Bearer <STATUS_TOKEN>`: the health
//! map as JSON, as an HTML page for a client that prefers `text/html` (a
//! browser), or as plain text for one that prefers `text/plain`
//! (scripts/status.mjs). Without a configured token the path is proxied like
//! any other.

use failover_core::edge::report::negotiate::{self, Representation};
use failover_core::edge::report::{self, page, text, BuildInfo, EventsView};
use failover_core::secret::bearer_matches;
use worker::{web_sys, Env};

use crate::checker;
use crate::isolate::Isolate;
use crate::respond::plain;

const BUILD: BuildInfo<'static> = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    revision: env!("FAILOVER_REVISION"),
};

/// The answer to a request `target::is_status_request` matched (the fast
/// path's copy of that test is `upstreamUrl` in src/js/lease.mjs): 401
/// without the right token, else the document in the representation the
/// client's `Accept` prefers, never cached. Its `events` are the global
/// checker's when it can be asked, else this isolate's own.
pub async fn answer(req: &web_sys::Request, isolate: &Isolate, env: &Env) -> web_sys::Response {
    let token = isolate.config.status_token.as_deref().unwrap_or("");
    let presented = req.headers().get("authorization").ok().flatten();
    if !bearer_matches(presented.as_deref(), token) {
        let res = plain(401, "a valid bearer token is required");
        let _ = res.headers().set("www-authenticate", "Bearer");
        return res;
    }
    let mut doc = report::status_document(
        &isolate.config,
        &isolate.health(),
        BUILD,
        crate::clock::now_ms(),
    );
    report::add_replay_buffer(&mut doc, &isolate.budget());
    // Asked only once the token matched: no stranger makes us call the
    // checker.
    match checker::recent_events(env).await {
        Some(events) => report::add_events(&mut doc, EventsView::Global, &events),
        None => report::add_events(&mut doc, EventsView::Isolate, &isolate.recent_changes()),
    }
    let accept = req.headers().get("accept").ok().flatten();
    let res = match negotiate::representation(accept.as_deref()) {
        Representation::Html => {
            let res = plain(200, &page::html(&doc));
            let headers = res.headers();
            let _ = headers.set("content-type", "text/html; charset=utf-8");
            // Belt and braces over the escaping: nothing on the page may run,
            // load or be framed, whatever a string in it says.
            let _ = headers.set(
                "content-security-policy",
                "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            );
            let _ = headers.set("x-content-type-options", "nosniff");
            let _ = headers.set("referrer-policy", "no-referrer");
            res
        }
        Representation::Text => {
            let res = plain(200, &text::render(&doc));
            let headers = res.headers();
            let _ = headers.set("content-type", "text/plain; charset=utf-8");
            let _ = headers.set("x-content-type-options", "nosniff");
            res
        }
        Representation::Json => {
            let res = plain(200, &doc.to_string());
            let _ = res.headers().set("content-type", "application/json");
            res
        }
    };
    // One URL, three bodies: no cache in between may hand one to the other.
    let _ = res.headers().set("vary", "accept");
    res
}
