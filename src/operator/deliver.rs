//! Delivering the outbox: each due delivery POSTed to its receiver (the
//! body in the receiver's format, signed for `json` with a `secret_var`),
//! with a deadline, and its answer handed back to the machine, which
//! decides on retries. Receivers are served side by side; one receiver's
//! deliveries go one after the other, oldest first, and stop at the first
//! that fails (the machine holds the rest back until its retry). The
//! object runs this beside its alarm, not inside it: a receiver that hangs
//! must not hold up the probes (src/checker/object.rs).

use std::time::Duration;

use failover_core::edge::checker::outbox::{Delivery, Settled};
use failover_core::edge::report;
use failover_core::notify::format::{render, signature_value, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use failover_core::notify::retry::Answer;
use failover_core::notify::{Event, Webhook};
use futures_util::future::join_all;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{js_sys, web_sys};

use super::probes::Checker;
use crate::js_bridge::{hmac_sha256, post_js};
use crate::{clock, log};

/// One try's deadline for the receiver's response headers.
const TIMEOUT_MS: u32 = 5_000;

/// How long a delivery handed out is the try's alone: longer than the
/// try's deadline, signing included. A try lost with the object is tried
/// again after it.
const LEASE: Duration = Duration::from_secs(15);

/// The deliveries due now, handed out to [`deliver`].
pub fn take_due(checker: &Checker) -> Vec<Delivery> {
    checker
        .machine
        .borrow_mut()
        .take_deliveries(clock::now_ms(), LEASE)
}

/// Tries `due` (from [`take_due`]), each answer settled in the machine.
pub async fn deliver(checker: &Checker, due: Vec<Delivery>) {
    let mut by_receiver: Vec<(String, Vec<Delivery>)> = Vec::new();
    for row in due {
        match by_receiver
            .iter_mut()
            .find(|(name, _)| *name == row.webhook)
        {
            Some((_, rows)) => rows.push(row),
            None => by_receiver.push((row.webhook.clone(), vec![row])),
        }
    }
    join_all(
        by_receiver
            .iter()
            .map(|(name, rows)| deliver_to(checker, name, rows)),
    )
    .await;
}

async fn deliver_to(checker: &Checker, name: &str, rows: &[Delivery]) {
    // The machine drops deliveries to receivers no longer configured when
    // it starts, and the config does not change while the object lives.
    let Some(hook) = checker.config.notify.iter().find(|w| w.name == name) else {
        return;
    };
    for (n, row) in rows.iter().enumerate() {
        let answer = send(hook, &row.event).await.unwrap_or_default();
        let settled = checker
            .machine
            .borrow_mut()
            .settle(&row.key, answer, clock::now_ms());
        log::line(&report::delivery(hook, &row.event, answer.status, settled));
        if matches!(settled, Some(Settled::Retry { .. })) {
            // The rest wait behind it, untried.
            let mut machine = checker.machine.borrow_mut();
            for later in rows.iter().skip(n + 1) {
                machine.release(&later.key);
            }
            break;
        }
    }
}

/// One POST of `event` to `hook`: the answer's status and `Retry-After`,
/// or None when there was none (or the request could not be made).
async fn send(hook: &Webhook, event: &Event) -> Option<Answer> {
    let message = render(hook.format, event);
    let headers = web_sys::Headers::new().ok()?;
    headers.set("content-type", message.content_type).ok()?;
    headers.set("user-agent", "tunnel-failover").ok()?;
    for (name, value) in &message.headers {
        headers.set(name, value).ok()?;
    }
    if let (true, Some(secret)) = (hook.format.signs(), &hook.secret) {
        let mac = JsFuture::from(hmac_sha256(secret, &message.body))
            .await
            .ok()?;
        let mac = js_sys::Uint8Array::new(&mac).to_vec();
        headers.set(SIGNATURE_HEADER, &signature_value(&mac)).ok()?;
        let seconds = clock::now_ms() / 1000;
        headers.set(TIMESTAMP_HEADER, &seconds.to_string()).ok()?;
    }
    let answer = JsFuture::from(post_js(&hook.url, &message.body, &headers, TIMEOUT_MS))
        .await
        .ok()?;
    let field = |name: &str| js_sys::Reflect::get(&answer, &name.into()).ok();
    let status = field("status")?.as_f64()?;
    let retry_after = field("retry_after").and_then(|v| v.as_string());
    let status = (1.0..=599.0).contains(&status).then_some(status as u16);
    Some(Answer::new(status, retry_after.as_deref()))
}
