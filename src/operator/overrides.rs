//! The checker's side of overrides: it is their one writer. It keeps them
//! in its storage (they outlive the object's eviction and every deploy),
//! applies an operator's change that an isolate forwarded (src/admin.rs),
//! turns an expired one into `auto` at its next alarm, and hands them out
//! with its verdicts (src/checker/probes.rs `Checker::snapshot`).
//!
//! Paths on the checker (only the Worker's own isolates reach it, through
//! the binding):
//! - `POST /overrides/{name}`: the operator's body, parsed again here with
//!   the same function the isolate used; 200 with the stored override, and
//!   the new answer for the isolates in `x-tunnel-failover-snapshot`.
//! - `GET /overrides`: every origin's, as the admin API shows them.
//!
//! The checker answers every other path itself (src/checker/object.rs).

use std::cell::RefCell;

use failover_core::edge::config::WorkerConfig;
use failover_core::edge::overrides::api::{document, error_json, stored_json};
use failover_core::edge::overrides::request::{origin_index, parse_change, BadInput};
use failover_core::edge::overrides::wire::{decode_overrides, encode_overrides, SNAPSHOT_HEADER};
use failover_core::edge::overrides::{Override, Overrides};
use failover_core::edge::report;
use worker::{Headers, Request, Response, Result, State};

use crate::{clock, log};

const STORAGE_KEY: &str = "overrides";

/// The stored overrides, for `config`'s origins (none if unreadable: a
/// lost override is `auto`, which is where an operator starts from).
pub async fn load(state: &State, config: &WorkerConfig) -> Overrides {
    let stored: Option<String> = state.storage().get(STORAGE_KEY).await.ok().flatten();
    stored.map_or_else(
        || Overrides::none(config.origins.len()),
        |text| decode_overrides(config, &text),
    )
}

async fn save(state: &State, config: &WorkerConfig, overrides: &Overrides) -> Result<()> {
    state
        .storage()
        .put(STORAGE_KEY, encode_overrides(config, overrides))
        .await
}

/// A request to the checker under `/overrides`; `snapshot` makes its
/// answer as of an instant. With the answer, the origin whose override
/// changed, if one did (the caller records the event).
pub async fn checker_fetch(
    state: &State,
    config: &WorkerConfig,
    overrides: &RefCell<Overrides>,
    snapshot: impl Fn(u64) -> String,
    mut req: Request,
) -> Result<(Response, Option<usize>)> {
    let now = clock::now_ms();
    let path = req.path();
    let Some(name) = path.strip_prefix("/overrides/") else {
        let list = document(config, &overrides.borrow(), now).to_string();
        return Ok((json(200, &list)?, None));
    };
    if req.inner().method() != "POST" {
        return Ok((Response::error("POST only", 405)?, None));
    }
    let change = match req.text().await {
        Ok(body) => origin_index(config, name).and_then(|i| Ok((i, parse_change(&body)?))),
        Err(_) => Err(BadInput {
            field: "body",
            problem: "could not be read".to_string(),
        }),
    };
    let (origin, change) = match change {
        Ok(found) => found,
        Err(bad) => {
            let body = error_json(bad.field, &bad.problem).to_string();
            return Ok((json(400, &body)?, None));
        }
    };
    let stored = change.at(now);
    overrides.borrow_mut().set(origin, stored);
    // Stored before the answer: an override the operator was told about
    // survives the object's eviction.
    let table = overrides.borrow().clone();
    save(state, config, &table).await?;
    changed(config, origin, &stored, "set");
    let res = json(200, &stored_json(name, &stored, now, config).to_string())?;
    res.headers().set(SNAPSHOT_HEADER, &snapshot(now))?;
    Ok((res, Some(origin)))
}

/// At each alarm: overrides whose TTL ran out become `auto`, stored and
/// said once; the origins whose override ran out, for the caller to
/// record. (Isolates stop obeying them at the instant on their own
/// clocks; this is for the record.)
pub async fn expire(
    state: &State,
    config: &WorkerConfig,
    overrides: &RefCell<Overrides>,
) -> Vec<usize> {
    let now = clock::now_ms();
    let expired = overrides.borrow_mut().expire(now);
    if expired.is_empty() {
        return expired;
    }
    let table = overrides.borrow().clone();
    if let Err(e) = save(state, config, &table).await {
        log::line(&report::shared_error("override storage", &e.to_string()));
    }
    for &origin in &expired {
        if let Some(o) = table.get(origin) {
            changed(config, origin, o, "expired");
        }
    }
    expired
}

/// An override changed (`reason`: "set" by an operator, or "expired"): the
/// log line. (The event of the history and the notification are the
/// checker's: src/checker/object.rs records them.)
fn changed(config: &WorkerConfig, origin: usize, o: &Override, reason: &str) {
    let name = config.origins.get(origin).map_or("?", |c| c.name.as_str());
    log::line(&report::override_change(name, o, reason));
}

fn json(status: u16, body: &str) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    Ok(Response::ok(body)?
        .with_status(status)
        .with_headers(headers))
}
