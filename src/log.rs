//! Structured log lines (one JSON object per line, for `wrangler tail` and
//! Logpush). Nothing is logged for a successful request.

use failover_core::edge::attempts::AfterFailure;
use failover_core::edge::classify::Failure;
use failover_core::edge::config::WorkerConfig;
use failover_core::edge::report;

pub fn line(json: &str) {
    worker::console_log!("{}", json);
}

pub fn attempt_failed(
    config: &WorkerConfig,
    origin: usize,
    method: &str,
    failure: Failure,
    next: &AfterFailure,
) {
    let next = match next {
        AfterFailure::TryOrigin(i) => {
            let name = config.origins.get(*i).map_or("?", |o| o.name.as_str());
            format!("try {name}")
        }
        AfterFailure::PassThrough => "pass the response through".to_string(),
        AfterFailure::GiveUp { status, .. } => format!("answer {status}"),
        AfterFailure::AppAnswer(i) => {
            let name = config.origins.get(*i).map_or("?", |o| o.name.as_str());
            format!("pass {name}'s own answer through")
        }
    };
    line(&report::attempt_failed(
        config, origin, method, failure, &next,
    ));
}
