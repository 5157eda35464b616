//! Global health (opt-in): a Durable Object, `HealthChecker`, probes every
//! origin on an alarm every HEALTH_INTERVAL_MS with HEALTH_RISE / HEALTH_FALL
//! thresholds, from one place for the whole world. Isolates consult it at
//! most once per interval, in the background (`ctx.wait_until`), so no
//! request ever waits on it; if it is unreachable they go on with their own
//! map. A Cron Trigger pokes it so the alarm chain never dies.
//!
//! On when the `HEALTH_CHECKER` Durable Object binding exists. The checker
//! also stores operators' overrides (src/overrides.rs) and hands them out
//! with its verdicts.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use failover_core::edge::config::WorkerConfig;
use failover_core::edge::health::HealthMap;
use failover_core::edge::overrides::wire::Snapshot;
use failover_core::edge::overrides::Overrides;
use failover_core::edge::report;
use failover_core::edge::shared::{decode_map, encode_map, Source};
use futures_util::future::join_all;
use worker::{durable_object, Context, DurableObject, Env, Request, Response, Result, State};

use crate::isolate::{var_text, Isolate};
use crate::{clock, forward, log};

pub const BINDING: &str = failover_core::edge::consult::BINDING;
const STORAGE_KEY: &str = "verdicts";
const CHECKER_URL: &str = "https://health-checker.internal/verdicts";

/// Asks the checker for its verdicts if the consultation is due; never on
/// the request path. Only with colo health off: otherwise the location's
/// copy of its answer stands in (src/consult.rs).
pub fn consult_if_due(ctx: &Context, env: &Env, isolate: &Rc<Isolate>, now_ms: u64) {
    if !isolate.take_global_read(now_ms) {
        return;
    }
    let Ok(namespace) = env.durable_object(BINDING) else {
        return; // Not configured: global health is off.
    };
    let isolate = Rc::clone(isolate);
    ctx.wait_until(async move {
        let answer = async {
            let stub = namespace
                .id_from_name(failover_core::edge::consult::OBJECT_NAME)?
                .get_stub()?;
            let mut res = stub.fetch_with_str(CHECKER_URL).await?;
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

/// The Cron Trigger: make sure the checker's alarm is scheduled.
pub async fn keep_alive(env: &Env) {
    let Ok(namespace) = env.durable_object(BINDING) else {
        return;
    };
    let poke = async {
        let stub = namespace
            .id_from_name(failover_core::edge::consult::OBJECT_NAME)?
            .get_stub()?;
        stub.fetch_with_str(CHECKER_URL).await
    };
    if let Err(e) = poke.await {
        log::line(&report::shared_error("global checker", &e.to_string()));
    }
}

#[durable_object(alarm)]
pub struct HealthChecker {
    state: State,
    env: Env,
    /// Built on first use; None until then.
    checker: RefCell<Option<Rc<Checker>>>,
}

struct Checker {
    config: WorkerConfig,
    health: RefCell<HealthMap>,
    /// When the last round of probes finished.
    confirmed_ms: Cell<u64>,
    /// Operators' overrides (src/overrides.rs); the checker is their one
    /// writer.
    overrides: RefCell<Overrides>,
}

impl Checker {
    fn verdicts(&self) -> String {
        let health = self.health.borrow();
        let confirmed = self.confirmed_ms.get();
        encode_map(
            self.config.origins.iter().enumerate().filter_map(|(i, o)| {
                Some((o.name.as_str(), health.verdict_to_share(i, confirmed)?))
            }),
        )
    }

    /// What isolates are told: the verdicts and the overrides, as of now.
    fn snapshot(&self, now_ms: u64) -> String {
        let health = self.health.borrow();
        let confirmed = self.confirmed_ms.get();
        let verdicts = (0..self.config.origins.len())
            .filter_map(|i| Some((i, health.verdict_to_share(i, confirmed)?)));
        Snapshot::of(&self.config, now_ms, verdicts, &self.overrides.borrow()).encode()
    }
}

impl DurableObject for HealthChecker {
    fn new(state: State, env: Env) -> Self {
        HealthChecker {
            state,
            env,
            checker: RefCell::new(None),
        }
    }

    /// Any request: make sure the alarm that refreshes the verdicts is set;
    /// an override's change or list (src/overrides.rs), or else the current
    /// verdicts and overrides.
    async fn fetch(&self, req: Request) -> Result<Response> {
        let checker = match self.checker().await {
            Ok(checker) => checker,
            Err(problem) => return Response::error(problem, 500),
        };
        if self.state.storage().get_alarm().await?.is_none() {
            // The first round runs at once; the alarm then re-arms itself.
            self.state.storage().set_alarm(Duration::ZERO).await?;
        }
        let snapshot = |now_ms| checker.snapshot(now_ms);
        crate::overrides::checker_fetch(
            &self.state,
            &checker.config,
            &checker.overrides,
            snapshot,
            req,
        )
        .await
    }

    async fn alarm(&self) -> Result<Response> {
        let checker = match self.checker().await {
            Ok(checker) => checker,
            // A broken config stops the chain; the next request or cron
            // tick after a fixed deploy starts it again.
            Err(problem) => return Response::error(problem, 500),
        };
        join_all((0..checker.config.origins.len()).map(|i| probe(&checker, i))).await;
        checker.confirmed_ms.set(clock::now_ms());
        crate::overrides::expire(&self.state, &checker.config, &checker.overrides).await;
        self.state
            .storage()
            .put(STORAGE_KEY, checker.verdicts())
            .await?;
        let interval = Duration::from_millis(checker.config.health_interval_ms);
        self.state.storage().set_alarm(interval).await?;
        Response::ok("")
    }
}

impl HealthChecker {
    async fn checker(&self) -> std::result::Result<Rc<Checker>, String> {
        if let Some(checker) = self.checker.borrow().as_ref() {
            return Ok(Rc::clone(checker));
        }
        let config =
            WorkerConfig::from_vars(|name| var_text(&self.env, name)).map_err(|e| e.to_string())?;
        let mut health = HealthMap::new(
            config.origins.len(),
            config.health_rise,
            config.health_fall,
            Duration::from_millis(config.health_interval_ms),
        );
        // Verdicts survive the object being evicted between alarms.
        let stored: Option<String> = self.state.storage().get(STORAGE_KEY).await.ok().flatten();
        let mut confirmed_ms = 0;
        if let Some(stored) = stored {
            for (name, verdict) in decode_map(&stored) {
                if let Some(i) = config.origins.iter().position(|o| o.name == name) {
                    health.adopt(
                        i,
                        verdict,
                        Source::Global,
                        verdict.confirmed_ms,
                        Duration::MAX,
                    );
                    confirmed_ms = confirmed_ms.max(verdict.confirmed_ms);
                }
            }
        }
        let overrides = crate::overrides::load(&self.state, &config).await;
        let checker = Rc::new(Checker {
            config,
            health: RefCell::new(health),
            confirmed_ms: Cell::new(confirmed_ms),
            overrides: RefCell::new(overrides),
        });
        *self.checker.borrow_mut() = Some(Rc::clone(&checker));
        Ok(checker)
    }
}

async fn probe(checker: &Checker, origin: usize) {
    let Some(target) = checker.config.origins.get(origin) else {
        return;
    };
    let result = forward::probe(target, checker.config.attempt_timeout_ms).await;
    let change = checker
        .health
        .borrow_mut()
        .record_probe(origin, result, clock::now_ms());
    if let Some(change) = change {
        log::line(&report::health_change(&checker.config, &change));
    }
}
