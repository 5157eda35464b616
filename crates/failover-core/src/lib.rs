//! Pure decision logic for tunnel-failover: no I/O, no clock, no async.
//! Callers pass observations with timestamps (milliseconds on any clock) and
//! carry out the answers.
//!
//! Layout:
//! - [`edge`]: the Worker's decisions (config, routing, what counts as a
//!   failure, health, shared verdicts, the status report), which the wasm
//!   shell (the root crate, `src/`) carries out.
//! - [`node`]: the node agent's decisions (standby takeover, stand-down,
//!   primary fail-back, the maintenance flag), which
//!   `crates/failover-agent` carries out.
//! - [`notify`]: the events both emit for a person (origin down, node took
//!   over), their webhook formats, the flap guard and delivery retries.
//! - Shared by both: [`streak`] (the rise/fall hysteresis every health
//!   judgement uses) and [`secret`] (constant-time bearer-token checks,
//!   and Basic credentials for a browser, with [`base64`] under it).
//! - For tests only: [`splitmix`], the seeded random stream the
//!   simulations, the statistical tests and the fixtures' inputs share.
//!
//! The rule of this crate: a decision goes here, anything a test would
//! table, as a plain function or a state machine that takes the time as an
//! argument. Its shells own everything that touches the world: `fetch`,
//! the Cache API, timers, sockets, processes, the clock. The edge side also
//! renders its status document, the HTML page, the terminal's text and the
//! log lines here, and parses `Cookie`, `Location` and `Accept` headers,
//! because those are decisions tested natively (what a client reads, which
//! cookie pins), not I/O; the shell only prints the strings. The fast
//! path's JS twins of some edge rules (src/js/) are held to fixtures Rust
//! generates (tests/fixtures/).

// Here and not in Cargo.toml's `[lints]`: a crate there either inherits the
// workspace's table or repeats it whole, and this one must keep inheriting
// it. CI's clippy runs with `-D warnings`, so an undocumented public item
// fails the build all the same.
#![warn(missing_docs)]

pub mod base64;
pub mod edge;
pub mod node;
pub mod notify;
pub mod secret;
pub mod splitmix;
pub mod streak;
