//! Structured log lines (one JSON object per line, for `wrangler tail` and
//! Logpush). Nothing is logged for a successful request.

pub fn line(json: &str) {
    worker::console_log!("{}", json);
}
