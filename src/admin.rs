//! The admin API, the isolate's side: `POST {STATUS_PATH}/origins/{name}`
//! sets an origin's override, `GET {STATUS_PATH}/origins` lists them
//! (`failover_core::edge::overrides::api` has the rules and the JSON). The
//! isolate checks the token, the origin and the body, so a hostile request
//! costs the checker nothing, and forwards a change to the checker (the one
//! writer, src/overrides.rs); it then adopts the checker's new answer and
//! writes it to the location's cache, so the location's other isolates
//! follow within a read (about a second), and every other location within
//! one consultation interval (src/consult.rs). Every path under
//! `{STATUS_PATH}/` is answered here, never by an origin.

use std::rc::Rc;

use failover_core::edge::overrides::api::{
    access, decide, error_json, node_answer, AdminPath, Answer, ANSWERED_BY_ADMIN,
    ANSWERED_BY_HEADER,
};
use failover_core::edge::overrides::request::{
    node_origins, origin_index, parse_change, MAX_BODY_BYTES,
};
use failover_core::edge::overrides::wire::SNAPSHOT_HEADER;
use failover_core::secret::carries_any;
use wasm_bindgen_futures::JsFuture;

use crate::isolate::Isolate;
use crate::respond::plain;
use crate::runtime::{Context, Env};
use crate::{checker_call, consult as location, guesses, js_bridge};

/// The checker's path for overrides (src/operator/overrides.rs).
const OVERRIDES_PATH: &str = "/overrides";

/// The answer to a request under `{STATUS_PATH}/` (`subpath`: what follows
/// it, no query), marked as the admin API's (`ANSWERED_BY_HEADER`), so its
/// clients can tell it from an app's.
pub async fn answer(
    req: &web_sys::Request,
    subpath: &str,
    isolate: &Rc<Isolate>,
    env: &Env,
    ctx: &Context,
) -> web_sys::Response {
    let res = unmarked(req, subpath, isolate, env, ctx).await;
    let _ = res.headers().set(ANSWERED_BY_HEADER, ANSWERED_BY_ADMIN);
    res
}

async fn unmarked(
    req: &web_sys::Request,
    subpath: &str,
    isolate: &Rc<Isolate>,
    env: &Env,
    ctx: &Context,
) -> web_sys::Response {
    let config = &isolate.config;
    let client = guesses::client(req);
    if let Some(braked) = guesses::refused(&client, isolate) {
        return braked;
    }
    let presented = req.headers().get("authorization").ok().flatten();
    let who = access(
        presented.as_deref(),
        config.status_token.as_deref(),
        config.admin_token.as_deref(),
    );
    let method = req.method();
    match decide(
        AdminPath::of(subpath),
        &method,
        who,
        config.admin_token.is_some(),
    ) {
        Answer::NotFound => plain(404, "not found"),
        Answer::MethodNotAllowed(allow) => {
            let res = plain(405, &format!("method not allowed; use {allow}"));
            let _ = res.headers().set("allow", allow);
            res
        }
        Answer::Unauthorized => {
            // A guess is a token that is neither of the Worker's: the status
            // token a browser re-sends to this folder is no miss.
            let ours = [
                config.status_token.as_deref(),
                config.admin_token.as_deref(),
            ];
            if presented.is_some() && !carries_any(presented.as_deref(), &ours) {
                guesses::missed(&client, isolate, env).await;
            }
            let res = plain(401, "a valid bearer token is required");
            let _ = res.headers().set("www-authenticate", "Bearer");
            res
        }
        Answer::List => list(env).await,
        Answer::Set(name) => set(req, name, isolate, env, ctx).await,
        Answer::SetNode(node) => set_node(req, node, isolate, env, ctx).await,
    }
}

/// Every origin's override, as the checker has them.
async fn list(env: &Env) -> web_sys::Response {
    if !checker_call::configured(env) {
        return no_checker();
    }
    match checker_call::get_text(env, OVERRIDES_PATH).await {
        Ok(body) => json(200, &body),
        Err(_) => unreachable_checker(),
    }
}

/// Checks a change and forwards it to the checker.
async fn set(
    req: &web_sys::Request,
    name: &str,
    isolate: &Rc<Isolate>,
    env: &Env,
    ctx: &Context,
) -> web_sys::Response {
    if !checker_call::configured(env) {
        return no_checker();
    }
    if let Err(bad) = origin_index(&isolate.config, name) {
        return bad_input(bad.field, &bad.problem);
    }
    let body = match change_body(req).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let path = format!("{OVERRIDES_PATH}/{name}");
    let Ok(answer) =
        checker_call::call(env, &path, "POST", Some(&body), Some(SNAPSHOT_HEADER)).await
    else {
        return unreachable_checker();
    };
    if let Some(snapshot) = answer.header.filter(|_| answer.status == 200) {
        adopt(isolate, ctx, snapshot);
    }
    json(answer.status, &answer.text)
}

/// A change's body, read and checked; the 400 that says why not.
async fn change_body(req: &web_sys::Request) -> Result<String, web_sys::Response> {
    let Some(body) = read_body(req).await else {
        let problem = format!("is over {MAX_BODY_BYTES} bytes, or could not be read");
        return Err(bad_input("body", &problem));
    };
    match parse_change(&body) {
        Ok(_) => Ok(body),
        Err(bad) => Err(bad_input(bad.field, &bad.problem)),
    }
}

/// The checker's new snapshot: this isolate routes by it now; the
/// location's copy follows in the background.
fn adopt(isolate: &Rc<Isolate>, ctx: &Context, snapshot: String) {
    location::adopt(isolate, &snapshot);
    let isolate = Rc::clone(isolate);
    ctx.wait_until(async move { location::share(&isolate, &snapshot).await });
}

fn bad_input(field: &str, problem: &str) -> web_sys::Response {
    json(400, &error_json(field, problem).to_string())
}

/// The same change for every origin on `node`, one checker call each, in
/// priority order (`api::node_answer` says what the client is told). A
/// call the checker refuses stops there.
async fn set_node(
    req: &web_sys::Request,
    node: &str,
    isolate: &Rc<Isolate>,
    env: &Env,
    ctx: &Context,
) -> web_sys::Response {
    if !checker_call::configured(env) {
        return no_checker();
    }
    let names: Vec<String> = match node_origins(&isolate.config, node) {
        Ok(names) => names.into_iter().map(str::to_string).collect(),
        Err(bad) => return bad_input(bad.field, &bad.problem),
    };
    let body = match change_body(req).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let mut answers: Vec<(String, u16, String)> = Vec::with_capacity(names.len());
    let mut snapshot = None;
    for name in names {
        let path = format!("{OVERRIDES_PATH}/{name}");
        let Ok(answer) =
            checker_call::call(env, &path, "POST", Some(&body), Some(SNAPSHOT_HEADER)).await
        else {
            return unreachable_checker();
        };
        let refused = answer.status != 200;
        if !refused {
            snapshot = answer.header.or(snapshot);
        }
        answers.push((name, answer.status, answer.text));
        if refused {
            // The rest are not tried: the answer says which took it.
            break;
        }
    }
    if let Some(snapshot) = snapshot {
        adopt(isolate, ctx, snapshot);
    }
    let (status, text) = node_answer(node, &answers);
    json(status, &text)
}

fn no_checker() -> web_sys::Response {
    plain(
        503,
        "the admin API needs the global checker: the HEALTH_CHECKER Durable Object binding is not configured",
    )
}

fn unreachable_checker() -> web_sys::Response {
    plain(503, "the global checker could not be reached; try again")
}

/// The body as text, at most MAX_BODY_BYTES; None for a longer or broken one.
async fn read_body(req: &web_sys::Request) -> Option<String> {
    let declared = req.headers().get("content-length").ok().flatten();
    if declared
        .and_then(|l| l.trim().parse::<usize>().ok())
        .is_some_and(|l| l > MAX_BODY_BYTES)
    {
        return None;
    }
    let read = JsFuture::from(js_bridge::read_bounded_js(req, MAX_BODY_BYTES as f64)).await;
    read.ok()?.as_string()
}

/// A JSON answer of ours, never cached.
fn json(status: u16, body: &str) -> web_sys::Response {
    let res = plain(status, body.trim_end());
    let _ = res.headers().set("content-type", "application/json");
    res
}
