//! The isolate's side of the global checker: asking for its verdicts (at
//! most once per interval, in the background) and the cron's poke that
//! keeps its alarm chain alive.

use std::rc::Rc;

use failover_core::edge::report;
use worker::{Context, Env};

use crate::isolate::Isolate;
use crate::log;

/// The Durable Object binding's name in wrangler.toml.
const BINDING: &str = failover_core::edge::consult::BINDING;

/// Any URL reaches the one object; the path says what is asked.
const CHECKER_URL: &str = "https://health-checker.internal/verdicts";

/// Whether global health is on: the binding exists.
pub fn configured(env: &Env) -> bool {
    env.durable_object(BINDING).is_ok()
}

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
