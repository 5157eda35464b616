//! Telling a person what happened: the events both halves of the product
//! emit (the Worker's global checker about origins, the agent about its own
//! decisions), the four message formats a webhook receives, and the two
//! rules about sending them (a flap guard, retries with backoff). Pure: the
//! shells own the HTTP, the HMAC (WebCrypto in the Worker, ring in the
//! agent), the clock and the storage.
//!
//! Layout, leaves first:
//! - [`rfc3339`]: `at` in the form receivers parse.
//! - [`event`]: [`Event`], its [`Kind`] (the `type` contract) and its JSON.
//! - [`format`](mod@format): the generic JSON, Slack, Discord and ntfy bodies.
//! - [`flap`]: at most one message per subject per interval, the rest
//!   summarised.
//! - [`retry`]: when a failed delivery is tried again, and when it is given up.
//! - [`agent`]: which of the node agent's decisions make which event.
//! - [`webhook`]: a receiver (format, secret URL, signing secret) and which
//!   URLs may be one.
//! - [`history`]: the last N events, newest first.

pub mod agent;
pub mod event;
pub mod flap;
pub mod format;
pub mod history;
pub mod retry;
pub mod rfc3339;
pub mod webhook;

pub use event::{Event, Kind, Source};
pub use format::Format;
pub use webhook::Webhook;
