//! The Durable Object `HealthChecker`: one per Worker (named "global").
//! Isolates ask it for its verdicts (`/verdicts`, also the cron's poke,
//! which makes sure the alarm is set), tell it an origin failed on live
//! traffic (`/suspect?origin=`: it probes that origin at once) and read its
//! events (`/events`); an operator's override changes and the list of
//! them arrive under `/overrides` (src/overrides.rs). Each request may name
//! the public hostname (`site=`). The alarm probes what is due, stores what changed, starts
//! the deliveries that are due beside itself, and re-arms for whatever the
//! machine says comes next.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use failover_core::edge::checker::{events_text, query_param};
use failover_core::edge::events::site_of;
use failover_core::edge::report::{self, STATUS_EVENTS};
use worker::wasm_bindgen::JsValue;
use worker::wasm_bindgen_futures::spawn_local;
use worker::{
    durable_object, js_sys, DurableObject, Env, Request, Response, Result, ScheduledTime, State,
    Storage,
};

use super::probes::Checker;
use super::{deliver, storage};
use crate::config::read_config;
use crate::{clock, log};

#[durable_object(alarm)]
pub struct HealthChecker {
    state: State,
    env: Env,
    /// Built on first use; None until then.
    checker: RefCell<Option<Rc<Checker>>>,
}

impl DurableObject for HealthChecker {
    fn new(state: State, env: Env) -> Self {
        HealthChecker {
            state,
            env,
            checker: RefCell::new(None),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let checker = match self.checker().await {
            Ok(checker) => checker,
            Err(problem) => return Response::error(problem, 500),
        };
        let url = req.inner().url();
        let param = |name: &str| query_param(&url, name);
        // Only our own isolates reach the object; the hostname is still
        // checked, since it ends up in chat messages.
        if let Some(site) = param("site").and_then(|s| site_of(&format!("https://{s}/"))) {
            checker.machine.borrow_mut().set_site(&site);
        }
        match req.path().as_str() {
            "/suspect" => {
                let origin = param("origin").unwrap_or_default();
                let now = clock::now_ms();
                if checker.machine.borrow_mut().suspect(origin, now) {
                    // The alarm probes it now; its end re-arms for the rest.
                    self.state.storage().set_alarm(Duration::ZERO).await?;
                }
                Ok(Response::empty()?.with_status(202))
            }
            path if path.starts_with("/overrides") => {
                let snapshot = |now_ms| checker.snapshot(now_ms);
                let (res, changed) = super::overrides::checker_fetch(
                    &self.state,
                    &checker.config,
                    &checker.overrides,
                    snapshot,
                    req,
                )
                .await?;
                if let Some(origin) = changed {
                    // The override is stored already: a failure to keep
                    // its event is logged, and the operator still hears 200.
                    record_overrides(&checker, &[origin]);
                    let storage = self.state.storage();
                    let kept = async {
                        flush(&storage, &checker).await?;
                        arm(&storage, &checker).await
                    };
                    if let Err(e) = kept.await {
                        log::line(&report::shared_error("checker storage", &e.to_string()));
                    }
                }
                Ok(res)
            }
            "/events" => {
                let text = events_text(checker.machine.borrow().recent(STATUS_EVENTS));
                let res = Response::ok(text)?;
                res.headers().set("content-type", "application/json")?;
                Ok(res)
            }
            _ => {
                if self.state.storage().get_alarm().await?.is_none() {
                    // The first round runs at once; the alarm then re-arms itself.
                    self.state.storage().set_alarm(Duration::ZERO).await?;
                }
                Response::ok(checker.snapshot(clock::now_ms()))
            }
        }
    }

    async fn alarm(&self) -> Result<Response> {
        let checker = match self.checker().await {
            Ok(checker) => checker,
            // A broken config stops the chain; the next request or cron
            // tick after a fixed deploy starts it again.
            Err(problem) => return Response::error(problem, 500),
        };
        checker.probe_due().await;
        let expired =
            super::overrides::expire(&self.state, &checker.config, &checker.overrides).await;
        record_overrides(&checker, &expired);
        let due = deliver::take_due(&checker);
        flush(&self.state.storage(), &checker).await?;
        if !due.is_empty() {
            // Beside the alarm, not in it: a receiver that hangs must not
            // hold up the next probes. Pending I/O keeps the object alive.
            let checker = Rc::clone(&checker);
            let storage = self.state.storage();
            spawn_local(async move {
                deliver::deliver(&checker, due).await;
                let done = async {
                    flush(&storage, &checker).await?;
                    arm(&storage, &checker).await
                };
                if let Err(e) = done.await {
                    log::line(&report::shared_error("checker storage", &e.to_string()));
                }
            });
        }
        arm(&self.state.storage(), &checker).await?;
        Response::ok("")
    }
}

/// Overrides that changed become events of the history (and messages).
fn record_overrides(checker: &Checker, origins: &[usize]) {
    let now = clock::now_ms();
    let overrides = checker.overrides.borrow();
    for &origin in origins {
        let (Some(o), Some(target)) = (overrides.get(origin), checker.config.origins.get(origin))
        else {
            continue;
        };
        checker
            .machine
            .borrow_mut()
            .record_override(&target.name, o.describe(), now);
    }
}

/// Writes what the machine asks for.
async fn flush(storage: &Storage, checker: &Checker) -> Result<()> {
    let writes = checker.machine.borrow_mut().take_writes();
    if writes.is_empty() {
        return Ok(());
    }
    storage::flush(storage, writes).await
}

/// Sets the alarm for whatever the machine says comes next (a probe, a
/// delivery, the end of a flap guard's interval), and never later than a
/// round from now.
async fn arm(storage: &Storage, checker: &Checker) -> Result<()> {
    let next = checker.machine.borrow().next_wake_ms();
    let now = clock::now_ms();
    // Never before now: a machine just built may say "due at 0", which
    // setAlarm refuses.
    let at = next.clamp(now, now.saturating_add(checker.config.health_interval_ms));
    let date = js_sys::Date::new(&JsValue::from_f64(at as f64));
    storage.set_alarm(ScheduledTime::new(date)).await
}

impl HealthChecker {
    async fn checker(&self) -> std::result::Result<Rc<Checker>, String> {
        if let Some(checker) = self.checker.borrow().as_ref() {
            return Ok(Rc::clone(checker));
        }
        let config = read_config(self.env.as_ref()).map_err(|e| e.to_string())?;
        // Storage reads hold the object's input gate: no other event runs
        // until they are done, so two requests cannot both build it.
        let restored = storage::load(&self.state.storage()).await;
        let overrides = super::overrides::load(&self.state, &config).await;
        if let Some(checker) = self.checker.borrow().as_ref() {
            return Ok(Rc::clone(checker));
        }
        let checker = Rc::new(Checker::new(config, restored, overrides));
        *self.checker.borrow_mut() = Some(Rc::clone(&checker));
        Ok(checker)
    }
}
