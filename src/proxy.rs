//! The full path: the whole request, the slow and complete way. Bodies, the
//! status endpoint, due probes and shared-health reads, the walk over the
//! origins after a failed attempt (the fast path, src/js/entry.mjs, hands
//! its failures here through `fast::fetch_after`), and the fallback page
//! when that walk finds no answer.

use std::rc::Rc;

use failover_core::edge::affinity;
use failover_core::edge::affinity::AffinityMode;
use failover_core::edge::attempts::{AfterFailure, Attempts};
use failover_core::edge::classify::Failure;
use failover_core::edge::config::Site;
use failover_core::edge::overrides::{last_resort, Standing};
use failover_core::edge::replay::BodyPlan;
use failover_core::edge::report;
use failover_core::edge::route::{route_ramped, Route};
use failover_core::edge::target::{
    is_status_path, is_status_request, reserved_subpath, upstream_url,
};
use failover_core::secret::carries_any;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use crate::body::{self, BodyError};
use crate::forward::{self, Outcome};
use crate::isolate::Isolate;
use crate::runtime::{Context, Env};
use crate::{
    access, admin, checker, clock, colo, fallback, js_bridge, log, periodic, probe, respond, status,
};

/// The whole request, the slow and complete way. `first` is an attempt the
/// fast path (src/js/entry.mjs) already made and that did not succeed: the
/// walk over the origins picks up from there; `buffered`, the body it read
/// for that attempt (see `RequestBody::prepare`).
pub async fn proxy(
    req: web_sys::Request,
    isolate: &Rc<Isolate>,
    env: &Env,
    ctx: &Context,
    mut first: Option<(usize, Outcome)>,
    random: Option<f64>,
    buffered: Option<JsValue>,
) -> web_sys::Response {
    let config = &isolate.config;
    let url = req.url();
    let now = clock::now_ms();
    periodic::start(isolate, env, ctx, &url).await;
    let status_path = config
        .status_token
        .as_ref()
        .map(|_| config.status_path.as_str());
    if is_status_request(&url, &req.method(), status_path) {
        return status::answer(&req, isolate, env).await;
    }
    if req.method() == "TRACE" {
        // TRACE asks the origin to echo the request back, headers and all,
        // and the attempt carries headers the client must never see (an
        // Access service token, `cf-access-client-secret`): never sent.
        let res = respond::plain(405, "TRACE is not forwarded");
        let _ = res
            .headers()
            .set("allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS");
        return res;
    }
    if is_status_path(&url, config.reserved_path()) {
        // Ours for every method; a GET or HEAD came here only with the
        // status page off (no STATUS_TOKEN, the admin API on).
        return status::not_served(&req.method());
    }
    if let Some(subpath) = reserved_subpath(&url, config.reserved_path()) {
        // Boxed: the admin API's state stays out of every request's future.
        return Box::pin(admin::answer(&req, subpath, isolate, env, ctx)).await;
    }
    // The site this host belongs to; a host no site claims is never
    // proxied anywhere.
    let Some(site) = config.site_for_url(&url).and_then(|s| config.sites.get(s)) else {
        return respond::unclaimed_host();
    };
    let method = req.method();
    let body = match body::RequestBody::prepare(&req, &method, isolate, buffered).await {
        Ok(body) => body,
        Err(BodyError::Unreadable) => {
            return respond::plain(400, "the request body could not be read")
        }
        Err(BodyError::NotAllowed) => {
            return respond::plain(
                400,
                "a GET or HEAD request cannot carry a body through this proxy",
            )
        }
    };
    let headers = req.headers();
    // The Worker's own credentials never reach an app: a browser given the
    // status page's Basic credentials sends them to the whole folder, and a
    // client with a mistyped status path sends its token to the app
    // (src/js/entry.mjs hands every request with Authorization here while
    // a token is set). Decided once; no header, no comparison.
    let workers_token = config.reserved_path().is_some()
        && headers
            .get("authorization")
            .ok()
            .flatten()
            .is_some_and(|presented| {
                carries_any(
                    Some(&presented),
                    &[
                        config.status_token.as_deref(),
                        config.admin_token.as_deref(),
                    ],
                )
            });
    // The fast path hands over the random number its route used, so the
    // walk goes on from where it left off.
    let random = random.unwrap_or_else(js_sys::Math::random);
    let first_tried = first.as_ref().map(|(tried, _)| *tried);
    let (route, mut attempts) = plan(
        isolate,
        site,
        &headers,
        &method,
        body.plan(),
        random,
        first_tried,
    );
    let https = url.starts_with("https:");
    let Some(mut current) = attempts.first() else {
        return respond::plain(502, "no origin is configured");
    };
    // The last HTTP 5xx an app made in this walk, kept unread: the client's
    // answer if no origin does better (`AfterFailure::AppAnswer`).
    let mut app_answer: Option<(usize, web_sys::Response)> = None;
    loop {
        let Some(origin) = config.origins.get(current) else {
            forward::discard(app_answer.map(|(_, res)| res));
            return respond::plain(502, "no origin is available");
        };
        let Some(target) = upstream_url(&origin.base, &url) else {
            forward::discard(app_answer.map(|(_, res)| res));
            return respond::plain(400, "the request path is not allowed");
        };
        let outcome = match first.take() {
            Some((_, outcome)) => outcome,
            None => {
                let headers = access::headers_for(origin, &headers, &url, workers_token);
                forward::attempt(
                    current,
                    &target,
                    &method,
                    &headers,
                    &body,
                    config.attempt_timeout_ms,
                )
                .await
            }
        };
        let (failure, mut failed_response) = match outcome {
            Outcome::Answer(res) => {
                forward::discard(app_answer.map(|(_, res)| res));
                // Evidence too: an older shared "down" must not override it.
                isolate.answered(current, now);
                let res = respond::served_by(res, origin, current != route.intended, &url);
                if route.sets_cookie_for(site, current) {
                    let value = affinity::cookie_value(&site.origins, current - site.first);
                    let cookie = affinity::set_cookie(&value, site.affinity.ttl_s, https);
                    let _ = res.headers().append("set-cookie", &cookie);
                }
                return res;
            }
            Outcome::Failed(failure, res) => (failure, res),
            Outcome::Refused => {
                forward::discard(app_answer.map(|(_, res)| res));
                return respond::plain(400, "the request could not be forwarded");
            }
        };
        if Attempts::keeps_answer(failure) {
            if let Some(res) = failed_response.take() {
                forward::discard(app_answer.replace((current, res)).map(|(_, old)| old));
            }
        }
        // A broken upload stream may be the client's doing (it went away):
        // no reason to call the origin down.
        let origin_at_fault = !(body.plan() == BodyPlan::Streamed && failure == Failure::Network);
        if origin_at_fault && failure.needs_confirmation() {
            // One page's 5xx or timeout is not a verdict: a probe of the
            // health path decides (in the background, at most one per
            // origin at a time).
            probe::confirm(ctx, env, isolate, current, failure, &url);
        } else if origin_at_fault {
            // A Tunnel without a connector (530) is its node's: every origin
            // on that node goes down with it, in every site, so no other
            // site's request pays a failed attempt to learn it again.
            // Only the edge's own page says so (error 1033): an app's 530
            // passed through a working tunnel must not take its node's
            // other origins down.
            let no_connector = match failed_response.as_ref() {
                Some(res) if failure.against_the_node() => {
                    JsFuture::from(js_bridge::no_connector_js(res))
                        .await
                        .is_ok_and(|v| v.is_truthy())
                }
                _ => false,
            };
            let mates = if no_connector {
                config.node_mates(current)
            } else {
                Vec::new()
            };
            // Each verdict reaches the location (colo) and the global
            // checker, which probes at once (at most every few seconds per
            // origin from this isolate): the node is left everywhere.
            for origin in std::iter::once(current).chain(mates) {
                let change =
                    isolate.change_health(|h| h.record_failure(origin, failure, clock::now_ms()));
                if let Some(change) = change {
                    isolate.flipped(&change);
                    colo::publish(ctx, isolate, origin);
                }
                checker::report_failure(ctx, env, isolate, origin, &url);
            }
        }
        let next = attempts.after_failure(failure);
        log::line(&report::attempt_failed(
            config, current, &method, failure, &next,
        ));
        // No origin answered this GET or HEAD: the fallback page, if one
        // is configured and can be had, instead of today's error.
        if site.fallback.is_some()
            && failover_core::edge::fallback::serves(&method, &next, isolate.any_serving(site))
        {
            forward::discard(failed_response.take());
            if let Some(res) = fallback::answer(isolate, site, &method).await {
                forward::discard(app_answer.map(|(_, res)| res));
                return res;
            }
        }
        match next {
            AfterFailure::TryOrigin(i) => {
                forward::discard(failed_response);
                current = i;
            }
            AfterFailure::PassThrough => {
                // Only ever for a status, whose response is either kept as
                // the app's answer or still here.
                let res = match failed_response {
                    Some(res) => Some(res),
                    None => app_answer.take().map(|(_, res)| res),
                };
                forward::discard(app_answer.map(|(_, res)| res));
                return match res {
                    Some(res) => respond::served_by(res, origin, current != route.intended, &url),
                    None => respond::plain(502, "the origin could not be reached"),
                };
            }
            AfterFailure::AppAnswer(from) => {
                forward::discard(failed_response);
                return match (app_answer, config.origins.get(from)) {
                    (Some((_, res)), Some(o)) => {
                        respond::served_by(res, o, from != route.intended, &url)
                    }
                    (res, _) => {
                        forward::discard(res.map(|(_, res)| res));
                        respond::plain(502, "no origin is available")
                    }
                };
            }
            AfterFailure::GiveUp { status, message } => {
                forward::discard(failed_response);
                forward::discard(app_answer.map(|(_, res)| res));
                return respond::plain(status, message);
            }
        }
    }
}

/// The pure half of a request's walk: its route (steering, slow start,
/// affinity, silent origins routed around as if down) and the attempts over it, with
/// `first_tried` (the fast path's failed attempt) first. What src/warm.rs
/// runs once per instance, so the first failover is not its first run.
pub fn plan(
    isolate: &Isolate,
    site: &Site,
    headers: &web_sys::Headers,
    method: &str,
    body: BodyPlan,
    random: f64,
    first_tried: Option<usize>,
) -> (Route, Attempts) {
    let config = &isolate.config;
    let health = isolate.health();
    let key_header = header(headers, site.hash_key.header());
    let cookies = match site.affinity.mode {
        AffinityMode::Cookie => header(headers, "cookie"),
        AffinityMode::Off => None,
    };
    // Silent origins (src/js/silence.mjs) are routed around as if down;
    // the health map is not told.
    let silence_ms = config.silence_ms as f64;
    let timeout_ms = config.attempt_timeout_ms as f64;
    let silent: Vec<bool> = (0..config.origins.len())
        .map(|i| config.silence_ms > 0 && js_bridge::is_silent(i, silence_ms, timeout_ms))
        .collect();
    let standings = isolate.standings();
    let is_up = |i: usize| health.is_up(i) && !silent.get(i).copied().unwrap_or(false);
    // Origins back up lately get part of their requests (slow start), unless
    // an override says otherwise (`route_ramped`). The route is the site's,
    // in its own indices, then global like everything else.
    let now = clock::now_ms();
    let first = site.first;
    let site_standings = standings.get(site.global()).unwrap_or(&[]);
    let route = route_ramped(
        site,
        |i| is_up(first + i),
        site_standings,
        |i| site.slow_start.share(health.up_since_ms(first + i), now),
        site.hash_key.key_in(key_header.as_deref()),
        cookies.as_deref(),
        random,
    )
    .in_global(site);
    // Held origins (disabled, drained) that are up go before the down ones:
    // with every other origin down, one serves at once.
    let pinned = route.pinned;
    let standing = |i: usize| standings.get(i).copied().unwrap_or(Standing::Auto);
    let mut order = last_resort(
        &route.order,
        |i| standing(i).routable(is_up(i), pinned == Some(i)),
        |i| !standing(i).intendable() && health.is_up(i),
    );
    if let Some(tried) = first_tried {
        order.retain(|&o| o != tried);
        order.insert(0, tried);
    }
    let attempts = Attempts::new(order, method, body);
    (route, attempts)
}

fn header(headers: &web_sys::Headers, name: &str) -> Option<String> {
    headers.get(name).ok().flatten()
}
