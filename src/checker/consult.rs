//! The isolate's side of the global checker: asking for its verdicts (at
//! most once per interval, in the background) and the cron's poke that
//! keeps its alarm chain alive.

use std::rc::Rc;
use std::time::Duration;

use failover_core::edge::config::WorkerConfig;
use failover_core::edge::report;
use failover_core::edge::shared::{decode_map, Source};
use worker::{Context, Env};

use crate::isolate::Isolate;
use crate::log;

/// The Durable Object binding's name in wrangler.toml.
const BINDING: &str = "HEALTH_CHECKER";

/// Any URL reaches the one object; the path says what is asked.
const CHECKER_URL: &str = "https://health-checker.internal/verdicts";

/// How long the checker's verdicts are trusted: three missed alarms.
fn max_age(config: &WorkerConfig) -> Duration {
    Duration::from_millis(config.health_interval_ms.saturating_mul(3))
}

/// Whether global health is on: the binding exists.
pub fn configured(env: &Env) -> bool {
    env.durable_object(BINDING).is_ok()
}

/// Asks the checker for its verdicts if the consultation is due; never on
/// the request path.
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
            let stub = namespace.id_from_name("global")?.get_stub()?;
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
            Ok(text) => adopt_all(&isolate, &text),
            Err(e) => log::line(&report::shared_error("global checker", &e.to_string())),
        }
    });
}

fn adopt_all(isolate: &Isolate, text: &str) {
    let max_age = max_age(&isolate.config);
    for (name, verdict) in decode_map(text) {
        if let Some(origin) = isolate.config.origins.iter().position(|o| o.name == name) {
            isolate.adopt(origin, verdict, Source::Global, max_age);
        }
    }
}

/// The Cron Trigger: make sure the checker's alarm is scheduled.
pub async fn keep_alive(env: &Env) {
    let Ok(namespace) = env.durable_object(BINDING) else {
        return;
    };
    let poke = async {
        let stub = namespace.id_from_name("global")?.get_stub()?;
        stub.fetch_with_str(CHECKER_URL).await
    };
    if let Err(e) = poke.await {
        log::line(&report::shared_error("global checker", &e.to_string()));
    }
}
