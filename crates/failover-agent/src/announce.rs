//! A carried-out decision told: the core says which notices an outcome is
//! worth (`failover_core::notify::agent`) and builds each event; here it
//! gets its id and time and goes to the history and the outbox. Called by the monitor
//! after a decision was carried out, and for a hold only when the
//! maintenance flag changed with it.

use std::time::{SystemTime, UNIX_EPOCH};

use failover_core::node::Outcome;
use failover_core::notify::agent::notices;

use crate::state::Shared;

/// Tells what `outcome` is worth telling; `flag_changed_to` is the
/// maintenance flag's new value when the same look changed it.
pub(crate) fn tell(shared: &Shared, outcome: &Outcome, flag_changed_to: Option<bool>) {
    let topology = shared.config.role.topology();
    for notice in notices(outcome.decision, topology, flag_changed_to) {
        let event =
            shared
                .teller
                .event(&notice, event_id(), unix_ms(), outcome.evidence.to_string());
        shared.outbox.push(&event);
        shared.history().record(event);
    }
}

/// Unique per event and stable across its retries (made once, here): the
/// time in hex, for a reader's eye, and 64 random bits.
fn event_id() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 8];
    let random = match ring::rand::SystemRandom::new().fill(&mut bytes) {
        Ok(()) => bytes.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        // No randomness: the time and a counter still make it unique here.
        Err(_) => {
            use std::sync::atomic::{AtomicU64, Ordering};
            static NEXT: AtomicU64 = AtomicU64::new(0);
            format!("{:016x}", NEXT.fetch_add(1, Ordering::Relaxed))
        }
    };
    format!("{:x}-{random}", unix_ms())
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
