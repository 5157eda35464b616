//! One delivery attempt: the core renders the body for the destination's
//! format, a json destination with a secret gets the signature header
//! (HMAC-SHA256 of exactly the body, the GitHub/Stripe convention) and the
//! attempt's timestamp, and the answer's status (with its `Retry-After`,
//! for a throttled receiver) is all that is read. A redirect is never
//! followed (`client` never does): it is the receiver's answer.

use std::time::Duration;

use hyper::body::Bytes;
use ring::hmac;

use failover_core::notify::format::{self, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use failover_core::notify::retry::Answer;
use failover_core::notify::Event;

use crate::client::{Client, Outbound, ProbeError};

use super::destination::Destination;

/// One attempt's deadline: connect, TLS, the POST and the answer's head.
/// The task is in the background, so this bounds only how long one bad
/// receiver holds its own queue.
pub(super) const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// POSTs `event` to `destination`; the answer, or why there was none.
/// The error never names the URL (`ProbeError` carries no address).
pub(super) async fn attempt(
    client: &Client,
    destination: &Destination,
    event: &Event,
    unix_s: u64,
) -> Result<Answer, ProbeError> {
    let message = format::render(destination.format, event);
    let mut headers = vec![("content-type", message.content_type.to_string())];
    for (name, value) in &message.headers {
        headers.push((*name, value.clone()));
    }
    if let Some(secret) = destination
        .secret
        .as_ref()
        .filter(|_| destination.format.signs())
    {
        let key = hmac::Key::new(hmac::HMAC_SHA256, secret.0.as_bytes());
        let tag = hmac::sign(&key, message.body.as_bytes());
        headers.push((SIGNATURE_HEADER, format::signature_value(tag.as_ref())));
        headers.push((TIMESTAMP_HEADER, unix_s.to_string()));
    }
    let request = Outbound {
        method: "POST",
        url: &destination.url,
        headers,
        body: Bytes::from(message.body),
        read_at_most: None,
    };
    client
        .request(request, ATTEMPT_TIMEOUT)
        .await
        .map(|response| Answer::new(Some(response.status), response.retry_after.as_deref()))
}
