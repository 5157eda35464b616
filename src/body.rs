//! The request body, held for replay or streamed once (see
//! `failover_core::edge::replay::BodyPlan`). A buffered body stays a JS
//! `ArrayBuffer`: it never crosses into Wasm memory. Held bodies count
//! against the isolate's replay budget (`failover_core::edge::budget`) until the
//! request ends, whichever way it ends.

use std::rc::Rc;

use failover_core::edge::replay::BodyPlan;
use failover_core::edge::report;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use crate::isolate::Isolate;
use crate::{clock, log};

pub enum RequestBody {
    Empty,
    /// The bytes, and their hold on the replay budget (read by no one: its
    /// drop gives the bytes back). None when the fast path read the body
    /// and holds its bytes itself (src/js/entry.mjs gives them back).
    Buffered(JsValue, #[allow(dead_code)] Option<Held>),
    /// The client's stream, and its declared length if it has one.
    Streamed(web_sys::ReadableStream, Option<u64>),
}

/// Why a request's body cannot be forwarded.
pub enum BodyError {
    /// The client went away mid-upload.
    Unreadable,
    /// GET and HEAD cannot carry a body through `fetch`; sending the request
    /// without it would change what it means.
    NotAllowed,
}

/// Bytes taken from the isolate's replay budget, given back when dropped:
/// when the request's full path ends, an upload breaks, or the client goes.
pub struct Held {
    isolate: Rc<Isolate>,
    bytes: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.isolate.budget_mut().release(self.bytes);
    }
}

impl RequestBody {
    /// Reads a small body into a buffer, or keeps the stream of a large one
    /// (or of one the isolate's replay budget cannot take now). `buffered`:
    /// the bytes the fast path already read (src/js/entry.mjs, which only
    /// reads what `BodyPlan::choose` calls Buffered, and holds them on the
    /// budget itself); the request's own body is spent then.
    pub async fn prepare(
        req: &web_sys::Request,
        method: &str,
        isolate: &Rc<Isolate>,
        buffered: Option<JsValue>,
    ) -> Result<RequestBody, BodyError> {
        if let Some(buffer) = buffered {
            return Ok(RequestBody::Buffered(buffer, None));
        }
        let cap = isolate.config.replay_body_max_bytes;
        let Some(stream) = req.body() else {
            return Ok(RequestBody::Empty);
        };
        let length = req.headers().get("content-length").ok().flatten();
        let plan = BodyPlan::choose(true, length.as_deref(), cap);
        if plan != BodyPlan::Empty && matches!(method, "GET" | "HEAD") {
            return Err(BodyError::NotAllowed);
        }
        match plan {
            BodyPlan::Empty => Ok(RequestBody::Empty),
            BodyPlan::Streamed => {
                let length = length.and_then(|l| l.trim().parse().ok());
                Ok(RequestBody::Streamed(stream, length))
            }
            BodyPlan::Buffered => {
                // Buffered means a known length within the cap.
                let bytes = length.and_then(|l| l.trim().parse().ok()).unwrap_or(cap);
                let Some(held) = hold(isolate, bytes) else {
                    return Ok(RequestBody::Streamed(stream, Some(bytes)));
                };
                let promise = req.array_buffer().map_err(|_| BodyError::Unreadable)?;
                // A failed read drops `held`: the bytes go back at once.
                let buffer = JsFuture::from(promise)
                    .await
                    .map_err(|_| BodyError::Unreadable)?;
                Ok(RequestBody::Buffered(buffer, Some(held)))
            }
        }
    }

    pub fn plan(&self) -> BodyPlan {
        match self {
            RequestBody::Empty => BodyPlan::Empty,
            RequestBody::Buffered(..) => BodyPlan::Buffered,
            RequestBody::Streamed(..) => BodyPlan::Streamed,
        }
    }

    /// The value to hand to `fetch` as the body, if any.
    pub fn as_js(&self) -> Option<&JsValue> {
        match self {
            RequestBody::Empty => None,
            RequestBody::Buffered(buffer, _) => Some(buffer),
            RequestBody::Streamed(stream, _) => Some(stream.as_ref()),
        }
    }

    /// For a streamed body: its length, or -1 when unknown. None otherwise.
    pub fn streamed_length(&self) -> Option<f64> {
        match self {
            RequestBody::Streamed(_, length) => Some(length.map_or(-1.0, |l| l as f64)),
            _ => None,
        }
    }
}

/// Takes `bytes` from the budget, or reports (at most once a minute) that
/// the body is streamed instead.
fn hold(isolate: &Rc<Isolate>, bytes: u64) -> Option<Held> {
    let mut budget = isolate.budget_mut();
    if budget.try_hold(bytes) {
        return Some(Held {
            isolate: Rc::clone(isolate),
            bytes,
        });
    }
    if let Some(over) = budget.streamed_for_budget(clock::now_ms(), bytes) {
        log::line(&report::replay_budget(&over));
    }
    None
}
