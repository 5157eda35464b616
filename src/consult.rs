//! The global checker's answer (its verdicts and the overrides) reaches the
//! isolates through the location's cache: one isolate per location and
//! interval asks the checker and writes the answer there
//! (`failover_core::edge::consult` has the protocol and its reasons); the
//! others read it with their colo reads. With colo health off, or a cache
//! that keeps nothing, each isolate asks the checker itself once per
//! interval (src/global.rs `consult_if_due`), as before.

use std::rc::Rc;
use std::time::Duration;

use failover_core::edge::consult::{self, AfterClaim, Claim, CLAIM_SETTLES};
use failover_core::edge::overrides::wire::Snapshot;
use failover_core::edge::report;
use failover_core::edge::shared::Source;
use failover_core::edge::time::millis;
use wasm_bindgen_futures::JsFuture;

use crate::checker_call;
use crate::isolate::Isolate;
use crate::runtime::Env;
use crate::{clock, colo, js_bridge, log};

/// The checker's own path for its answer (any other path but
/// `/overrides...` answers the same, so an older Worker still reads it).
const ANSWER_PATH: &str = "/verdicts";

/// How long the checker's verdicts are trusted: three missed alarms.
pub fn max_age(isolate: &Isolate) -> Duration {
    Duration::from_millis(isolate.config.health_interval_ms.saturating_mul(3))
}

fn interval(isolate: &Isolate) -> Duration {
    Duration::from_millis(isolate.config.health_interval_ms)
}

/// Adopts a checker's answer (from the checker itself or the location's
/// copy): its verdicts as the global view, its overrides unless this
/// isolate already has a newer answer's. Returns when it was made, None for
/// an unreadable answer.
pub fn adopt(isolate: &Isolate, text: &str) -> Option<u64> {
    let snapshot = Snapshot::decode(text)?;
    if snapshot.as_of_ms == isolate.overrides_as_of_ms() {
        // The copy read a second ago: nothing new in it.
        return Some(snapshot.as_of_ms);
    }
    let max_age = max_age(isolate);
    for (name, verdict) in &snapshot.verdicts {
        if let Some(origin) = isolate.config.origins.iter().position(|o| &o.name == name) {
            isolate.adopt(origin, *verdict, Source::Global, max_age);
        }
    }
    let overrides = snapshot.overrides_for(&isolate.config);
    isolate.set_overrides(overrides, snapshot.as_of_ms, clock::now_ms());
    Some(snapshot.as_of_ms)
}

/// After a colo read that included the location's copy: adopts it, and says
/// whether it is stale (or missing), when this isolate should try to claim
/// the next consultation ([`claim_and_ask`], in the background).
pub fn after_read(isolate: &Isolate, entry: Option<&str>, now_ms: u64) -> bool {
    let as_of = entry.and_then(|text| adopt(isolate, text));
    as_of.is_none_or(|as_of| consult::is_stale(as_of, now_ms, interval(isolate)))
}

/// Steps 2 and 3 of the protocol: claim the consultation unless another
/// isolate holds it, wait for concurrent claims to land, and ask the checker
/// only if this claim is the one the cache kept; then share the answer.
pub async fn claim_and_ask(env: &Env, isolate: &Rc<Isolate>, now_ms: u64) {
    let Some((snapshot_key, claim_key)) = isolate.snapshot_keys() else {
        return;
    };
    let every = interval(isolate);
    let seen = colo::read(&claim_key).await;
    if !consult::may_claim(seen.as_deref().and_then(Claim::decode), now_ms, every) {
        return;
    }
    let mine = Claim {
        nonce: nonce(),
        taken_ms: now_ms,
    };
    colo::put(&claim_key, &mine.encode(), consult::claim_lasts(every)).await;
    sleep(CLAIM_SETTLES).await;
    let seen = colo::read(&claim_key).await;
    match consult::after_claim(seen.as_deref().and_then(Claim::decode), mine) {
        AfterClaim::Consult => {
            if let Some(text) = ask_and_adopt(env, isolate).await {
                colo::put(&snapshot_key, &text, consult::snapshot_ttl(every)).await;
            }
        }
        AfterClaim::Leave => {}
        // A cache that keeps nothing (workers.dev): this isolate is on its
        // own, once per interval.
        AfterClaim::CacheKeepsNothing => {
            if isolate.take_direct_read(now_ms) {
                ask_and_adopt(env, isolate).await;
            }
        }
    }
}

/// Asks the checker for its answer and adopts it; the answer's text, None
/// when the checker could not be asked (logged).
pub async fn ask_and_adopt(env: &Env, isolate: &Isolate) -> Option<String> {
    match checker_call::get_text(env, ANSWER_PATH).await {
        Ok(text) => {
            adopt(isolate, &text)?;
            Some(text)
        }
        Err(e) => {
            log::line(&report::shared_error("global checker", &e));
            None
        }
    }
}

/// Writes an answer the checker gave this isolate (a change it stored) to
/// the location's copy at once, so the location learns it within a read.
pub async fn share(isolate: &Isolate, text: &str) {
    if let Some((snapshot_key, _)) = isolate.snapshot_keys() {
        colo::put(
            &snapshot_key,
            text,
            consult::snapshot_ttl(interval(isolate)),
        )
        .await;
    }
}

/// A claim's random number; not a secret (it only tells claims apart).
fn nonce() -> u64 {
    let high = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    let low = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    (high << 32) | low
}

/// Waits `span` (a timer; the claimer is in the background).
async fn sleep(span: Duration) {
    let _ = JsFuture::from(js_bridge::sleep_js(millis(span) as f64)).await;
}
