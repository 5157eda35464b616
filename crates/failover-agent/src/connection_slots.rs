//! Who gets one of the API's connection slots. Every connection holds a
//! file descriptor, and the agent's own app checks, peer looks and
//! `systemctl` calls need some too, so the API serves a bounded number at
//! once. Bounded alone, the slots go to whoever opens connections fastest:
//! ~32 idle connections a second from any host that reaches `listen` held
//! all 64, the standby's looks at the primary failed, and after
//! `takeover_after` misses both connectors served. So:
//!
//! - one source holds at most [`PER_SOURCE`] slots (an IPv6 source is its
//!   /64: one host is handed a whole /64 and can pick any address in it);
//! - [`PEER_RESERVED`] of the slots are the peer's alone: a flood from
//!   several sources fills the rest, never those.
//!
//! The peer's address is its `[peer] agent_url` host (an IP literal, or
//! the addresses the name resolved to at start); it holds at most
//! [`PER_SOURCE`] slots like anyone, anywhere among the [`MAX_CONNECTIONS`].
//! Pure counting: the caller accepts, asks, and gives the slot back.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};

/// Connections served at once. A pair's agents and an operator use a
/// handful; with `LimitNOFILE=65536` in the unit the cap, not the limit, is
/// what a flood meets.
pub(crate) const MAX_CONNECTIONS: usize = 64;

/// Connections one source may hold at once. The peer's looks and orders
/// use one or two at a time, an operator's CLI one.
pub(crate) const PER_SOURCE: usize = 8;

/// Slots only the peer may take: as many as it may hold.
pub(crate) const PEER_RESERVED: usize = PER_SOURCE;

/// Whom a slot is counted against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Source {
    /// Any of the peer's addresses.
    Peer,
    /// An IPv4 address, or an IPv6 /64.
    Other(IpAddr),
}

/// Why a connection gets no slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Its source already holds [`PER_SOURCE`].
    SourceFull,
    /// Every slot it may take is taken.
    AllTaken,
}

impl Refused {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Refused::SourceFull => "its address already holds the most one address may",
            Refused::AllTaken => "every slot open to it is taken",
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Slots {
    /// The peer's addresses, canonical (an IPv4-mapped IPv6 as IPv4).
    peer: Vec<IpAddr>,
    open: usize,
    by_source: HashMap<Source, usize>,
}

impl Slots {
    pub(crate) fn new(peer: &[IpAddr]) -> Slots {
        Slots {
            peer: peer.iter().map(IpAddr::to_canonical).collect(),
            ..Slots::default()
        }
    }

    /// Whom a connection from `remote` is counted against.
    pub(crate) fn source_of(&self, remote: IpAddr) -> Source {
        let remote = remote.to_canonical();
        if self.peer.contains(&remote) {
            return Source::Peer;
        }
        match remote {
            IpAddr::V4(_) => Source::Other(remote),
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                Source::Other(IpAddr::V6(Ipv6Addr::from(prefix)))
            }
        }
    }

    /// Takes a slot for a connection from `remote`, or says why not.
    pub(crate) fn take(&mut self, remote: IpAddr) -> Result<Source, Refused> {
        let source = self.source_of(remote);
        let held = self.by_source.get(&source).copied().unwrap_or(0);
        if held >= PER_SOURCE {
            return Err(Refused::SourceFull);
        }
        let open_to_it = match source {
            Source::Peer => MAX_CONNECTIONS,
            Source::Other(_) => MAX_CONNECTIONS - PEER_RESERVED,
        };
        if self.open >= open_to_it {
            return Err(Refused::AllTaken);
        }
        self.open += 1;
        self.by_source.insert(source, held + 1);
        Ok(source)
    }

    /// Gives back a slot [`Slots::take`] handed to `source`.
    pub(crate) fn give_back(&mut self, source: Source) {
        self.open = self.open.saturating_sub(1);
        if let Some(held) = self.by_source.get_mut(&source) {
            *held -= 1;
            if *held == 0 {
                // A flood from many addresses must not grow the map for good.
                self.by_source.remove(&source);
            }
        }
    }
}

/// A slot held for one connection; given back on drop, however the
/// connection ends.
pub(crate) struct Slot {
    slots: Arc<Mutex<Slots>>,
    source: Source,
}

impl Slot {
    pub(crate) fn take(slots: &Arc<Mutex<Slots>>, remote: IpAddr) -> Result<Slot, Refused> {
        let source = lock(slots).take(remote)?;
        Ok(Slot {
            slots: Arc::clone(slots),
            source,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.slots).give_back(self.source);
    }
}

/// A poisoned lock only means a task panicked mid-count; the count is
/// still the best there is.
fn lock(slots: &Mutex<Slots>) -> std::sync::MutexGuard<'_, Slots> {
    slots.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn fill(slots: &mut Slots, remote: &str, n: usize) -> usize {
        (0..n).filter(|_| slots.take(ip(remote)).is_ok()).count()
    }

    #[test]
    fn one_address_holds_at_most_per_source() {
        let mut slots = Slots::new(&[ip("10.0.0.2")]);
        assert_eq!(fill(&mut slots, "192.0.2.7", 100), PER_SOURCE);
        assert_eq!(slots.take(ip("192.0.2.7")), Err(Refused::SourceFull));
        assert!(slots.take(ip("192.0.2.8")).is_ok());
    }

    #[test]
    fn many_addresses_fill_the_shared_slots_never_the_peers() {
        let mut slots = Slots::new(&[ip("10.0.0.2")]);
        let flooded: usize = (1..=20)
            .map(|i| fill(&mut slots, &format!("192.0.2.{i}"), PER_SOURCE))
            .sum();
        assert_eq!(flooded, MAX_CONNECTIONS - PEER_RESERVED);
        assert_eq!(slots.take(ip("192.0.2.99")), Err(Refused::AllTaken));
        assert_eq!(fill(&mut slots, "10.0.0.2", 100), PEER_RESERVED);
        assert_eq!(slots.take(ip("10.0.0.2")), Err(Refused::SourceFull));
    }

    #[test]
    fn the_peer_seen_through_an_ipv4_mapped_address_is_the_peer() {
        let slots = Slots::new(&[ip("10.0.0.2")]);
        assert_eq!(slots.source_of(ip("::ffff:10.0.0.2")), Source::Peer);
        let slots = Slots::new(&[ip("::ffff:10.0.0.2")]);
        assert_eq!(slots.source_of(ip("10.0.0.2")), Source::Peer);
    }

    #[test]
    fn an_ipv6_slash_64_is_one_source() {
        let mut slots = Slots::new(&[]);
        let taken = (1..=20)
            .filter(|i| slots.take(ip(&format!("2001:db8:1:2::{i:x}"))).is_ok())
            .count();
        assert_eq!(taken, PER_SOURCE);
        assert!(slots.take(ip("2001:db8:1:3::1")).is_ok());
    }

    #[test]
    fn a_slot_given_back_can_be_taken_again_and_the_map_empties() {
        let slots = Arc::new(Mutex::new(Slots::new(&[])));
        let held: Vec<Slot> = (0..PER_SOURCE)
            .filter_map(|_| Slot::take(&slots, ip("192.0.2.7")).ok())
            .collect();
        assert_eq!(held.len(), PER_SOURCE);
        assert!(Slot::take(&slots, ip("192.0.2.7")).is_err());
        drop(held);
        assert!(lock(&slots).by_source.is_empty());
        assert_eq!(lock(&slots).open, 0);
        assert!(Slot::take(&slots, ip("192.0.2.7")).is_ok());
    }
}
