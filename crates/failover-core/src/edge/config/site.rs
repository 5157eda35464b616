//! A site: the origins that serve one service, and the policy that routes
//! among them (steering, hash key, affinity, slow start, the fallback
//! page). `ORIGINS` with the top-level policy settings is one site that
//! answers every host.
//!
//! A site holds its own origins, so routing ([`crate::edge::route`])
//! works in the site's indices (0 is its primary); the config's global
//! list ([`super::WorkerConfig::origins`]) is every site's origins one
//! after another, and [`Site::first`] is where this site's begin in it:
//! health, overrides and the fast path's lease are kept by global index.

use crate::edge::affinity::Affinity;
use crate::edge::slow_start::SlowStart;
use crate::edge::steering::{Candidate, HashKey, Policy};

use super::fallback::Fallback;
use super::hosts::HostPattern;
use super::origins::Origin;

/// One service behind the Worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The site's name, in events and the status page.
    pub name: String,
    /// `hosts`: the hosts it answers (`ORIGINS`: every host, `*`).
    pub hosts: Vec<HostPattern>,
    /// Its origins in priority order; never empty.
    pub origins: Vec<Origin>,
    /// The global index of `origins[0]` in the config's list.
    pub first: usize,
    /// `STEERING`.
    pub steering: Policy,
    /// `HASH_KEY`: what `hash` steering reads from a request.
    pub hash_key: HashKey,
    /// `AFFINITY`, `AFFINITY_TTL_S` and `AFFINITY_FAILOVER`.
    pub affinity: Affinity,
    /// `SLOW_START_S` and `SLOW_START_MIN_PCT`.
    pub slow_start: SlowStart,
    /// `FALLBACK`: the page a GET or HEAD gets once every origin failed.
    pub fallback: Option<Fallback>,
}

impl Site {
    /// The site's origins as [`crate::edge::steering::attempt_order`] takes
    /// them, with the health map's verdicts by the site's own index.
    pub fn candidates(&self, is_up: impl Fn(usize) -> bool) -> Vec<Candidate<'_>> {
        self.origins
            .iter()
            .enumerate()
            .map(|(i, o)| Candidate {
                name: &o.name,
                weight: o.weight,
                healthy: is_up(i),
            })
            .collect()
    }

    /// The global indices of this site's origins.
    pub fn global(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.origins.len()
    }
}
