//! The request body, held for replay or streamed once (see
//! `failover_core::replay::BodyPlan`). A buffered body stays a JS
//! `ArrayBuffer`: it never crosses into Wasm memory.

use failover_core::replay::BodyPlan;
use worker::wasm_bindgen::JsValue;
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys;

pub enum RequestBody {
    Empty,
    Buffered(JsValue),
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

impl RequestBody {
    /// Reads a small body into a buffer, or keeps the stream of a large one.
    pub async fn prepare(
        req: &web_sys::Request,
        method: &str,
        cap: u64,
    ) -> Result<RequestBody, BodyError> {
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
                let promise = req.array_buffer().map_err(|_| BodyError::Unreadable)?;
                let buffer = JsFuture::from(promise)
                    .await
                    .map_err(|_| BodyError::Unreadable)?;
                Ok(RequestBody::Buffered(buffer))
            }
        }
    }

    pub fn plan(&self) -> BodyPlan {
        match self {
            RequestBody::Empty => BodyPlan::Empty,
            RequestBody::Buffered(_) => BodyPlan::Buffered,
            RequestBody::Streamed(..) => BodyPlan::Streamed,
        }
    }

    /// The value to hand to `fetch` as the body, if any.
    pub fn as_js(&self) -> Option<&JsValue> {
        match self {
            RequestBody::Empty => None,
            RequestBody::Buffered(buffer) => Some(buffer),
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
