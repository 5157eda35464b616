//! The isolate's side of the global checker: asking for its verdicts (at
//! most once per interval, in the background), telling it at once when an
//! origin fails on live traffic, reading its events for the status page,
//! and the cron's poke that keeps its alarm chain alive. Every request
//! names the public hostname (`site`), which the checker's events carry.

use std::future::Future;
use std::rc::Rc;

use failover_core::edge::checker::parse_events;
use failover_core::edge::events::site_of;
use failover_core::edge::report;
use failover_core::notify::Event;

use crate::checker_call::{call, configured, get_text};
use crate::isolate::Isolate;
use crate::runtime::{Context, Env};
use crate::{clock, log};

/// `?site=<host>` when the request URL names a usable one.
fn site_query(url: &str) -> String {
    site_of(url).map_or_else(String::new, |site| format!("site={site}"))
}

/// Asks the checker for its verdicts and overrides if the consultation is
/// due; never on the request path. Only with colo health off: otherwise the
/// location's copy of its answer stands in (src/consult.rs).
pub fn consult_if_due(ctx: &Context, env: &Env, isolate: &Rc<Isolate>, now_ms: u64, url: &str) {
    if !isolate.take_global_read(now_ms) {
        return;
    }
    if !configured(env) {
        return; // Not configured: global health is off.
    }
    let isolate = Rc::clone(isolate);
    let env = env.clone();
    let path = format!("/verdicts?{}", site_query(url));
    ctx.wait_until(async move {
        match get_text(&env, &path).await {
            Ok(text) => {
                crate::consult::adopt(&isolate, &text);
            }
            Err(e) => log::line(&report::shared_error("global checker", &e)),
        }
    });
}

/// An attempt against `origin` failed in a way that is evidence against
/// it: tell the checker, in the background, so it probes at once instead
/// of at its next round (`edge::checker::schedule`).
pub fn report_failure(ctx: &Context, env: &Env, isolate: &Isolate, origin: usize, url: &str) {
    if let Some(report) = report(env, isolate, origin, url) {
        ctx.wait_until(report);
    }
}

/// The report [`report_failure`] sends, for a caller already in the
/// background; None when none is due (one per origin every few seconds
/// from an isolate) or there is no checker.
pub fn report(
    env: &Env,
    isolate: &Isolate,
    origin: usize,
    url: &str,
) -> Option<impl Future<Output = ()> + 'static> {
    let name = isolate.config.origins.get(origin)?.name.clone();
    if !isolate.take_checker_report(origin, clock::now_ms()) {
        return None;
    }
    if !configured(env) {
        return None;
    }
    let env = env.clone();
    // Origin names are letters, digits and -_. (config): safe in a query.
    let path = format!("/suspect?origin={name}&{}", site_query(url));
    Some(async move {
        if let Err(e) = call(&env, &path, "POST", None, None).await {
            log::line(&report::shared_error("global checker", &e));
        }
    })
}

/// The checker's newest events for the status page; None without a
/// checker or when it cannot be asked (the page then shows the isolate's
/// own).
pub async fn recent_events(env: &Env) -> Option<Vec<Event>> {
    if !configured(env) {
        return None;
    }
    match get_text(env, "/events").await {
        Ok(text) => Some(parse_events(&text)),
        Err(e) => {
            log::line(&report::shared_error("global checker", &e));
            None
        }
    }
}

/// The Cron Trigger: make sure the checker's alarm is scheduled.
pub async fn keep_alive(env: &Env) {
    if !configured(env) {
        return;
    }
    if let Err(e) = call(env, "/verdicts", "GET", None, None).await {
        log::line(&report::shared_error("global checker", &e));
    }
}
