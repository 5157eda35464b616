//! `GET STATUS_PATH` with the token, as `Authorization: Bearer <STATUS_TOKEN>`
//! or as the password of Basic credentials (what a browser sends, after
//! asking its user once): the health map as JSON, as an HTML page for a
//! client that prefers `text/html` (a browser), or as plain text for one
//! that prefers `text/plain` (scripts/status.mjs). Without a configured
//! token the path is proxied like any other. Never a token in the URL: it
//! would end up in logs and browser history.

use failover_core::edge::overrides::api::{ANSWERED_BY_HEADER, ANSWERED_BY_STATUS};
use failover_core::edge::report::negotiate::{self, Representation};
use failover_core::edge::report::{self, BuildInfo, EventsView};
use failover_core::secret::{bearer_or_basic_matches, carries_any};

use crate::isolate::Isolate;
use crate::respond::plain;
use crate::runtime::Env;
use crate::{checker, checker_call, guesses, js_bridge};

const BUILD: BuildInfo<'static> = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    revision: env!("FAILOVER_REVISION"),
};

/// The headers of the HTML page or the text.
fn for_a_person(representation: Representation, res: web_sys::Response) -> web_sys::Response {
    let headers = res.headers();
    let _ = headers.set("x-content-type-options", "nosniff");
    if representation != Representation::Html {
        let _ = headers.set("content-type", "text/plain; charset=utf-8");
        return res;
    }
    let _ = headers.set("content-type", "text/html; charset=utf-8");
    // Belt and braces over the escaping: nothing on the page may run,
    // load or be framed, whatever a string in it says.
    let _ = headers.set(
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    let _ = headers.set("referrer-policy", "no-referrer");
    res
}

/// A request for `STATUS_PATH` the status page does not serve: any method
/// but GET and HEAD (405), or either of those with the page off (no
/// `STATUS_TOKEN`, only the admin API on: 404). Never the origin's.
pub fn not_served(method: &str) -> web_sys::Response {
    if matches!(method, "GET" | "HEAD") {
        return marked(plain(
            404,
            "not found: the status page is off (STATUS_TOKEN is not set)",
        ));
    }
    let res = plain(405, "method not allowed; use GET, HEAD");
    let _ = res.headers().set("allow", "GET, HEAD");
    marked(res)
}

/// Marks an answer as the status endpoint's (`ANSWERED_BY_HEADER`).
fn marked(res: web_sys::Response) -> web_sys::Response {
    let _ = res.headers().set(ANSWERED_BY_HEADER, ANSWERED_BY_STATUS);
    res
}

/// The answer to a request `target::is_status_request` matched (the fast
/// path's copy of that test is `upstreamUrl` in src/js/lease.mjs): 401
/// without the right token, else the document in the representation the
/// client's `Accept` prefers, never cached. Its `events` are the global
/// checker's when it can be asked, else this isolate's own; the page says
/// whether the global checker's binding exists.
pub async fn answer(req: &web_sys::Request, isolate: &Isolate, env: &Env) -> web_sys::Response {
    marked(unmarked(req, isolate, env).await)
}

async fn unmarked(req: &web_sys::Request, isolate: &Isolate, env: &Env) -> web_sys::Response {
    let client = guesses::client(req);
    if let Some(braked) = guesses::refused(&client, isolate) {
        return braked;
    }
    let token = isolate.config.status_token.as_deref().unwrap_or("");
    let presented = req.headers().get("authorization").ok().flatten();
    let accept = req.headers().get("accept").ok().flatten();
    let representation = negotiate::representation(accept.as_deref());
    if !bearer_or_basic_matches(presented.as_deref(), token) {
        // The admin token here is a wrong key, not a guess.
        let ours = [
            isolate.config.status_token.as_deref(),
            isolate.config.admin_token.as_deref(),
        ];
        if presented.is_some() && !carries_any(presented.as_deref(), &ours) {
            guesses::missed(&client, isolate, env).await;
        }
        let res = plain(
            401,
            "the status token is required: Authorization: Bearer <STATUS_TOKEN>, \
             or Basic credentials with STATUS_TOKEN as the password (any user name)",
        );
        let headers = res.headers();
        let _ = headers.set("www-authenticate", negotiate::challenge(representation));
        // The challenge depends on Accept: no cache may hand a browser's
        // to a script.
        let _ = headers.set("vary", "accept");
        return res;
    }
    let mut doc = report::status_document(
        &isolate.config,
        &isolate.health(),
        BUILD,
        crate::clock::now_ms(),
    );
    report::add_replay_buffer(&mut doc, &isolate.budget());
    report::add_global_health(&mut doc, checker_call::configured(env));
    report::add_overrides(
        &mut doc,
        &isolate.config,
        &isolate.overrides(),
        crate::clock::now_ms(),
    );
    // Asked only once the token matched: no stranger makes us call the
    // checker.
    match checker::recent_events(env).await {
        Some(events) => report::add_events(&mut doc, EventsView::Global, &events),
        None => report::add_events(&mut doc, EventsView::Isolate, &isolate.recent_changes()),
    }
    let res = match representation {
        Representation::Json => {
            let res = plain(200, &doc.to_string());
            let _ = res.headers().set("content-type", "application/json");
            res
        }
        // A person's representations are rendered in the operator module:
        // their markup is no weight on the module every request runs in.
        person => match js_bridge::render_status_js(person.name(), &doc.to_string()) {
            Ok(body) => for_a_person(person, plain(200, &body)),
            Err(_) => plain(
                500,
                "the status page could not be rendered; the JSON is still served",
            ),
        },
    };
    // One URL, three bodies: no cache in between may hand one to the other.
    let _ = res.headers().set("vary", "accept");
    res
}
