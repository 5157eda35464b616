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
use worker::{web_sys, Context, Env, Stub};

use crate::isolate::Isolate;
use crate::{clock, log};

/// The Durable Object binding's name in wrangler.toml.
const BINDING: &str = failover_core::edge::consult::BINDING;

/// Any URL reaches the one object; the path says what is asked.
const CHECKER: &str = "https://health-checker.internal";

/// Whether global health is on: the binding exists.
pub fn configured(env: &Env) -> bool {
    env.durable_object(BINDING).is_ok()
}

/// The checker's stub; None when the binding is absent (global health is
/// off) or unusable.
fn stub(env: &Env) -> Option<Stub> {
    let namespace = env.durable_object(BINDING).ok()?;
    namespace
        .id_from_name(failover_core::edge::consult::OBJECT_NAME)
        .ok()?
        .get_stub()
        .ok()
}

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
    let Some(stub) = stub(env) else {
        return; // Not configured: global health is off.
    };
    let isolate = Rc::clone(isolate);
    let target = format!("{CHECKER}/verdicts?{}", site_query(url));
    ctx.wait_until(async move {
        let answer = async {
            let mut res = stub.fetch_with_str(&target).await?;
            if res.status_code() != 200 {
                return Err(worker::Error::RustError(format!(
                    "status {}",
                    res.status_code()
                )));
            }
            res.text().await
        };
        match answer.await {
            Ok(text) => {
                crate::consult::adopt(&isolate, &text);
            }
            Err(e) => log::line(&report::shared_error("global checker", &e.to_string())),
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
    let stub = stub(env)?;
    // Origin names are letters, digits and -_. (config): safe in a query.
    let target = format!("{CHECKER}/suspect?origin={name}&{}", site_query(url));
    Some(async move {
        let sent = async {
            // web_sys's request, not worker's builder, whose method and
            // `cf` plumbing cost the Wasm several KB.
            let init = web_sys::RequestInit::new();
            init.set_method("POST");
            let req = web_sys::Request::new_with_str_and_init(&target, &init)?;
            stub.fetch_with_request(req.into()).await
        };
        if let Err(e) = sent.await {
            log::line(&report::shared_error("global checker", &e.to_string()));
        }
    })
}

/// The checker's newest events for the status page; None without a
/// checker or when it cannot be asked (the page then shows the isolate's
/// own).
pub async fn recent_events(env: &Env) -> Option<Vec<Event>> {
    let stub = stub(env)?;
    let answer = async {
        let mut res = stub.fetch_with_str(&format!("{CHECKER}/events")).await?;
        if res.status_code() != 200 {
            return Err(worker::Error::RustError(format!(
                "status {}",
                res.status_code()
            )));
        }
        res.text().await
    };
    let text = match answer.await {
        Ok(text) => text,
        Err(e) => {
            log::line(&report::shared_error("global checker", &e.to_string()));
            return None;
        }
    };
    Some(parse_events(&text))
}

/// The Cron Trigger: make sure the checker's alarm is scheduled.
pub async fn keep_alive(env: &Env) {
    let Some(stub) = stub(env) else {
        return;
    };
    if let Err(e) = stub.fetch_with_str(&format!("{CHECKER}/verdicts")).await {
        log::line(&report::shared_error("global checker", &e.to_string()));
    }
}
