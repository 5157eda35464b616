//! The edge Worker's decisions, for the wasm shell (the root crate's `src/`)
//! to carry out. Clock-free: every input carries its own timestamp in ms.
//!
//! Layout, in the order a request meets them:
//! - [`time`]: instants are `u64` ms, spans are `Duration`; a leaf every
//!   module with a clock uses.
//! - [`status_path`]: what a `STATUS_PATH` may be (the Worker's config
//!   and the admin API's clients, one grammar).
//! - [`config`]: the `[vars]`, validated once: the settings
//!   ([`config::vars`]), the origins ([`config::origins`]) with their
//!   URLs ([`config::urls`]) and Access tokens ([`config::access`]).
//! - [`target`]: the only way an upstream URL is built; the status-endpoint
//!   match. [`hop_by_hop`]: the headers an attempt never carries.
//!   [`guesses`]: the brake on wrong status and admin tokens.
//! - [`steering`] (`STEERING`: the policy's attempt order, weight and hash
//!   key), [`affinity`] (the `__tf_affinity` cookie), [`slow_start`]
//!   (`SLOW_START_S`: origins back up held back from part of their
//!   requests), [`route`] (the three composed into one request's route,
//!   overrides folded in), with [`cookies`] (the `Cookie` header parser),
//!   [`fnv`] (the hashes) and [`det_math`] (the logarithm JS reproduces bit
//!   for bit) under them.
//! - [`replay`] (whether a request may go to another origin), [`budget`]
//!   (bodies held for replay across the isolate), [`classify`] (what counts
//!   as a failed attempt, and what is evidence against an origin),
//!   [`attempts`] (one request's walk over the origins), [`fallback`] (the
//!   `FALLBACK` page when that walk found no answer).
//! - [`health`] (the isolate's origin health map), [`expect`] (which probe
//!   statuses mean healthy), [`shared`] (verdicts shared through the colo
//!   cache and the global checker).
//! - [`consult`]: how often the global checker is asked, per location, and
//!   how long a change takes to reach every isolate; [`overrides`]: an
//!   operator's drain, disable or force-up of an origin at runtime (the
//!   admin API, its JSON, the wire format), and what each means for
//!   routing at an instant (which [`route`] folds in).
//! - [`events`]: a flip as an event for a person (`origin.down`,
//!   `all.up`, ...), with its id and the site it names.
//! - [`isolate`]: [`Isolate`], everything one isolate keeps between
//!   requests, with when its periodic work is next due and the fast path's
//!   lease.
//! - [`checker`]: the global checker's machine (probe schedule, events,
//!   history, flap guard, outbox), driven by its Durable Object.
//! - [`report`]: log lines, the status document and its HTML page and
//!   plain text.
//!
//! A module uses only modules listed before it (`scripts/check-cycles.mjs`
//! checks that no import cycle exists).

pub mod affinity;
pub mod attempts;
pub mod budget;
pub mod checker;
pub mod classify;
pub mod config;
pub mod consult;
pub mod cookies;
pub mod det_math;
pub mod events;
pub mod expect;
pub mod fallback;
pub mod fnv;
pub mod guesses;
pub mod health;
pub mod hop_by_hop;
pub mod isolate;
pub mod overrides;
pub mod replay;
pub mod report;
pub mod route;
pub mod shared;
pub mod slow_start;
pub mod status_path;
pub mod steering;
pub mod target;
pub mod time;

pub use isolate::Isolate;
