//! Webhook notifications of the agent's own decisions (`[notify]`): one
//! message per decision carried out, in the formats the Worker's checker
//! uses too (`failover_core::notify`), delivered in the background so the
//! monitor loop never waits on a receiver.
//!
//! Layout, leaves first:
//! - `destination`: where a message goes (format, URL, signing secret),
//!   as the config names it ([`Target`]) and ready to send
//!   ([`Destination`]); neither ever shows its URL or secret.
//! - `deliver`: one attempt: the core's body, the signature, the POST, and
//!   what its answer means.
//! - `outbox`: a bounded queue per destination and the task that empties
//!   it, with the core's retry pauses; overflow drops the oldest, counted;
//!   a short grace for what is queued when the agent stops.

mod deliver;
mod destination;
mod outbox;

pub(crate) use destination::{Destination, Hidden, Target, UrlFrom};
pub(crate) use outbox::{Outbox, STOP_GRACE};
