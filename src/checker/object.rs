//! The Durable Object `HealthChecker`: one per Worker (named "global"). Any
//! request answers the current verdicts and overrides (or changes an
//! override: src/overrides.rs) and makes sure the alarm is set;
//! the alarm runs a round of probes, stores the verdicts and re-arms.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use failover_core::edge::config::WorkerConfig;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, State};

use super::probes::Checker;
use crate::isolate::var_text;

const STORAGE_KEY: &str = "verdicts";

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
        checker.round().await;
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
        // Verdicts survive the object being evicted between alarms.
        let stored: Option<String> = self.state.storage().get(STORAGE_KEY).await.ok().flatten();
        let overrides = crate::overrides::load(&self.state, &config).await;
        let checker = Rc::new(Checker::new(config, stored, overrides));
        *self.checker.borrow_mut() = Some(Rc::clone(&checker));
        Ok(checker)
    }
}
