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
    Streamed(web_sys::ReadableStream),
}

impl RequestBody {
    /// Reads a small body into a buffer, or keeps the stream of a large one.
    /// Err when the client's body cannot be read (it went away mid-upload).
    pub async fn prepare(req: &web_sys::Request, cap: u64) -> Result<RequestBody, ()> {
        let Some(stream) = req.body() else {
            return Ok(RequestBody::Empty);
        };
        let length = req.headers().get("content-length").ok().flatten();
        match BodyPlan::choose(true, length.as_deref(), cap) {
            BodyPlan::Empty => Ok(RequestBody::Empty),
            BodyPlan::Streamed => Ok(RequestBody::Streamed(stream)),
            BodyPlan::Buffered => {
                let promise = req.array_buffer().map_err(|_| ())?;
                let buffer = JsFuture::from(promise).await.map_err(|_| ())?;
                Ok(RequestBody::Buffered(buffer))
            }
        }
    }

    pub fn plan(&self) -> BodyPlan {
        match self {
            RequestBody::Empty => BodyPlan::Empty,
            RequestBody::Buffered(_) => BodyPlan::Buffered,
            RequestBody::Streamed(_) => BodyPlan::Streamed,
        }
    }

    /// The value to hand to `fetch` as the body, if any.
    pub fn as_js(&self) -> Option<&JsValue> {
        match self {
            RequestBody::Empty => None,
            RequestBody::Buffered(buffer) => Some(buffer),
            RequestBody::Streamed(stream) => Some(stream.as_ref()),
        }
    }
}
