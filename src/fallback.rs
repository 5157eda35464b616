//! The fallback page (`FALLBACK`), once `failover_core::edge::fallback`
//! says a request gets it: the configured page, or a fetch of the
//! configured URL (redirects judged by the core, the whole exchange within
//! one attempt timeout, the body streamed through). None when the fallback
//! itself failed: the caller answers as it would without one.

use failover_core::edge::config::{Fallback, Site};
use failover_core::edge::fallback::{after_fetch, retry_after_s, Step};
use failover_core::edge::report;

use crate::forward::{self, settle, Sent};
use crate::isolate::Isolate;
use crate::js_bridge::{fallback_fetch_js, fallback_response_js};
use crate::{clock, log};

/// `site`'s fallback page for a GET or HEAD (`method`), or None when none
/// is configured or it could not be had.
pub async fn answer(isolate: &Isolate, site: &Site, method: &str) -> Option<web_sys::Response> {
    let config = &isolate.config;
    let retry_after = retry_after_s(config.health_interval_ms) as f64;
    match site.fallback.as_ref()? {
        Fallback::Html(page) => {
            let body = (method != "HEAD").then_some(page.as_str());
            Some(fallback_response_js(None, body, retry_after))
        }
        Fallback::Url(url) => match fetch(url, method, config.attempt_timeout_ms).await {
            Ok(res) => Some(fallback_response_js(Some(&res), None, retry_after)),
            Err(why) => {
                log::line(&report::fallback_failed(&why));
                None
            }
        },
    }
}

/// The page at `url`, following the redirects the core allows, all within
/// `timeout_ms` of the first request; why not, for the log.
async fn fetch(url: &str, method: &str, timeout_ms: u64) -> Result<web_sys::Response, String> {
    let deadline = clock::now_ms().saturating_add(timeout_ms);
    let mut url = url.to_string();
    let mut redirects = 0;
    loop {
        let left = deadline.saturating_sub(clock::now_ms());
        if left == 0 {
            return Err("timeout".to_string());
        }
        let left = u32::try_from(left).unwrap_or(u32::MAX);
        let res = match settle(fallback_fetch_js(&url, method, left)).await {
            Sent::Response(res) => res,
            Sent::Failed(failure) => return Err(failure.label()),
            Sent::Refused => return Err("refused".to_string()),
        };
        let location = res.headers().get("location").ok().flatten();
        match after_fetch(res.status(), location.as_deref(), &url, redirects) {
            Step::Serve => return Ok(res),
            Step::Follow(next) => {
                forward::discard(Some(res));
                url = next;
                redirects += 1;
            }
            Step::Fail(why) => {
                forward::discard(Some(res));
                return Err(why);
            }
        }
    }
}
