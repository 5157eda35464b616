//! Session affinity (`AFFINITY = "cookie"`): the `__tf_affinity` cookie pins
//! a client to the origin that first served it.
//!
//! The cookie names the origin opaquely: a 64-bit hash, in hex, of the
//! origin's name under a salt made of every origin's name and URL. A client
//! cannot pick an origin by writing its name, a config change (an origin
//! added, renamed or moved) voids every old cookie, and a value that matches
//! no origin is ignored, never an error. The token is not a secret (the salt
//! is the config): affinity is a convenience, not access control, and a
//! client that replays another origin's token only gets what a client pinned
//! there gets.
//!
//! While the pinned origin is healthy it is tried first; while it is down
//! the policy's order holds, and `AFFINITY_FAILOVER` says whether the client
//! is re-pinned to the origin that served instead (`sticky`) or returns to
//! its origin when it recovers (`temporary`). `src/js/steer.mjs` has the
//! twins of [`pinned_in`] and [`with_affinity`] for the fast path.

use crate::edge::config::origins::Origin;
use crate::edge::cookies::cookies;
use crate::edge::fnv::{fmix64, fnv1a64, FNV64_OFFSET};

/// `AFFINITY`: whether clients are pinned to an origin by cookie.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AffinityMode {
    /// `off` (the default): every request is steered afresh.
    #[default]
    Off,
    /// `cookie`: the `__tf_affinity` cookie pins a client.
    Cookie,
}

/// `AFFINITY_FAILOVER`: what a pin becomes while its origin is down.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AffinityFailover {
    /// Keep the pin; the client returns when its origin recovers.
    #[default]
    Temporary,
    /// Re-pin the client to the origin that served it instead.
    Sticky,
}

impl AffinityMode {
    /// The setting's spelling, for the status endpoint.
    pub fn as_str(self) -> &'static str {
        match self {
            AffinityMode::Off => "off",
            AffinityMode::Cookie => "cookie",
        }
    }
}

impl AffinityFailover {
    /// The setting's spelling, for the status endpoint.
    pub fn as_str(self) -> &'static str {
        match self {
            AffinityFailover::Temporary => "temporary",
            AffinityFailover::Sticky => "sticky",
        }
    }
}

/// The affinity settings together (see [`crate::edge::affinity`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Affinity {
    /// `AFFINITY`.
    pub mode: AffinityMode,
    /// `AFFINITY_TTL_S`: the cookie's Max-Age.
    pub ttl_s: u32,
    /// `AFFINITY_FAILOVER`.
    pub failover: AffinityFailover,
}

/// The cookie's name.
pub const COOKIE_NAME: &str = "__tf_affinity";

/// The hash state after the salt: a version tag, then every origin's name
/// and URL, NUL-separated (neither may contain a NUL).
fn salt(origins: &[Origin]) -> u64 {
    let mut h = fnv1a64(FNV64_OFFSET, b"tunnel-failover affinity v1\0");
    for o in origins {
        h = fnv1a64(h, o.name.as_bytes());
        h = fnv1a64(h, b"\0");
        h = fnv1a64(h, o.base.as_bytes());
        h = fnv1a64(h, b"\0");
    }
    h
}

fn token(salt: u64, name: &str) -> String {
    let h = fnv1a64(fnv1a64(salt, b"\x01"), name.as_bytes());
    format!("{:016x}", fmix64(h))
}

/// Every origin's cookie value, by index: computed once per config, and what
/// the shell hands the JS fast path.
pub fn tokens(origins: &[Origin]) -> Vec<String> {
    let salt = salt(origins);
    origins.iter().map(|o| token(salt, &o.name)).collect()
}

/// The cookie value that pins `origin_index`. An index outside the config
/// gets a value no origin matches, so that client is steered afresh.
pub fn cookie_value(origins: &[Origin], origin_index: usize) -> String {
    let name = origins.get(origin_index).map_or("", |o| o.name.as_str());
    token(salt(origins), name)
}

/// The origin a request's `Cookie` header pins, if any.
pub fn pinned_origin(origins: &[Origin], cookie_header: Option<&str>) -> Option<usize> {
    pinned_in(&tokens(origins), cookie_header)
}

/// [`pinned_origin`] against precomputed [`tokens`]: the first
/// `__tf_affinity` cookie whose value is some origin's token. Forged, stale
/// and malformed values are skipped.
pub fn pinned_in(tokens: &[String], cookie_header: Option<&str>) -> Option<usize> {
    cookies(cookie_header?)
        .filter(|(name, _)| *name == COOKIE_NAME)
        .find_map(|(_, value)| tokens.iter().position(|t| t == value))
}

/// The `Set-Cookie` header value that pins the client to `value`'s origin.
/// `Secure` only for a request that came over https, so plain-http testing
/// still works; `HttpOnly` because no script needs it; `Lax` so a top-level
/// navigation from elsewhere keeps the pin.
pub fn set_cookie(value: &str, ttl_s: u32, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE_NAME}={value}; Path=/; Max-Age={ttl_s}; HttpOnly; SameSite=Lax{secure}")
}

/// Whether an origin of this weight may be honoured as a pin, or pinned
/// to: a weight-0 origin is a backup ("never chosen while another origin
/// is up"), so only while no origin of weight > 0 is up (`weighted_up`).
/// The JS twin is `mayPin` in src/js/steer.mjs.
pub fn may_pin(weight: u32, weighted_up: bool) -> bool {
    weight > 0 || !weighted_up
}

/// Whether the response carries a `Set-Cookie` naming the origin that
/// served it. Decided before the attempts, applied after (`emit_for`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetCookie {
    /// Leave the client's cookie as it is (affinity off, or `temporary`
    /// while the pinned origin is away).
    Never,
    /// The client has no valid pin: pin it to whichever origin serves.
    Always,
    /// `sticky`: re-pin unless the pinned origin itself served.
    UnlessServedBy(usize),
}

impl SetCookie {
    /// True when the response served by `served` must set the cookie.
    pub fn emit_for(self, served: usize) -> bool {
        match self {
            SetCookie::Never => false,
            SetCookie::Always => true,
            SetCookie::UnlessServedBy(pinned) => served != pinned,
        }
    }
}

/// A request's attempt order with affinity applied, and the cookie rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Origins to try, each once: the pinned one first while it is up.
    pub order: Vec<usize>,
    /// Whether the response pins the client to the origin that served it.
    pub set_cookie: SetCookie,
}

/// Applies affinity to the policy's attempt order. `pinned` is
/// [`pinned_origin`]'s answer and `pinned_healthy` the health map's verdict
/// on it.
///
/// - No valid pin: the policy's order; pin whoever serves.
/// - Pinned and healthy: the pinned origin first, then the policy's order
///   without it. If it fails mid-request and another origin serves,
///   `sticky` re-pins to that one and `temporary` keeps the pin.
/// - Pinned and down: the policy's order; `sticky` re-pins to whoever
///   serves, `temporary` leaves the cookie so the client returns.
pub fn with_affinity(
    affinity: &Affinity,
    pinned: Option<usize>,
    pinned_healthy: bool,
    policy_order: Vec<usize>,
) -> Plan {
    let pinned = pinned.filter(|p| policy_order.contains(p));
    let set_cookie = match (affinity.mode, pinned, affinity.failover) {
        (AffinityMode::Off, _, _) => SetCookie::Never,
        (AffinityMode::Cookie, None, _) => SetCookie::Always,
        (AffinityMode::Cookie, Some(p), AffinityFailover::Sticky) => SetCookie::UnlessServedBy(p),
        (AffinityMode::Cookie, Some(_), AffinityFailover::Temporary) => SetCookie::Never,
    };
    let order = match (affinity.mode, pinned) {
        (AffinityMode::Cookie, Some(p)) if pinned_healthy => {
            let mut order = Vec::with_capacity(policy_order.len());
            order.push(p);
            order.extend(policy_order.into_iter().filter(|&i| i != p));
            order
        }
        _ => policy_order,
    };
    Plan { order, set_cookie }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::config::WorkerConfig;

    fn config(origins: &str) -> WorkerConfig {
        let origins = origins.to_string();
        WorkerConfig::from_vars(|k| (k == "ORIGINS").then(|| origins.clone())).expect("valid")
    }

    const THREE: &str = r#"[{"name":"primary","url":"https://a.example"},
        {"name":"replica","url":"https://b.example"},{"name":"backup","url":"https://c.example"}]"#;

    #[test]
    fn tokens_are_opaque_distinct_and_tied_to_the_config() {
        let c = config(THREE);
        let t = tokens(&c.origins);
        assert_eq!(t.len(), 3);
        for (i, v) in t.iter().enumerate() {
            assert_eq!(v.len(), 16, "{v}");
            assert!(v
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
            assert!(!v.contains(&c.origins[i].name));
            assert_eq!(&cookie_value(&c.origins, i), v);
            assert_eq!(
                pinned_origin(&c.origins, Some(&format!("{COOKIE_NAME}={v}"))),
                Some(i)
            );
        }
        assert!(t[0] != t[1] && t[1] != t[2] && t[0] != t[2]);
        assert!(!t.contains(&cookie_value(&c.origins, 3)), "no origin 3");
        // Moving one origin's URL voids every token.
        let moved = config(&THREE.replace("b.example", "b2.example"));
        for (old, new) in t.iter().zip(tokens(&moved.origins)) {
            assert_ne!(old, &new);
        }
        // Same config, same tokens: every isolate and deployment agrees.
        assert_eq!(tokens(&config(THREE).origins), t);
    }

    #[test]
    fn cookie_headers() {
        let c = config(THREE);
        let t = tokens(&c.origins);
        let (a, b) = (&t[0], &t[1]);
        let table: Vec<(String, Option<usize>)> = vec![
            (format!("{COOKIE_NAME}={b}"), Some(1)),
            (format!("x=1; {COOKIE_NAME}={b}; y=2"), Some(1)),
            (format!("x=1;{COOKIE_NAME}={b};y=2"), Some(1)),
            (format!("  {COOKIE_NAME} = {b} ;"), Some(1)),
            (format!("\t{COOKIE_NAME}=\"{b}\""), Some(1)),
            (format!("{COOKIE_NAME}=bogus; {COOKIE_NAME}={a}"), Some(0)),
            (format!("{COOKIE_NAME}={a}; {COOKIE_NAME}={b}"), Some(0)),
            (format!("{COOKIE_NAME}=replica"), None),
            (format!("{COOKIE_NAME}={}", b.to_uppercase()), None),
            (format!("{COOKIE_NAME}={b}x"), None),
            (format!("{COOKIE_NAME}=\"{b}"), None),
            (format!("__TF_AFFINITY={b}"), None),
            (format!("x{COOKIE_NAME}={b}"), None),
            (format!("x={COOKIE_NAME}={b}"), None),
            (COOKIE_NAME.to_string(), None),
            (format!("{COOKIE_NAME}="), None),
            (String::new(), None),
            (";;; ;=;".to_string(), None),
        ];
        for (header, expected) in &table {
            assert_eq!(
                pinned_origin(&c.origins, Some(header)),
                *expected,
                "{header:?}"
            );
            assert_eq!(pinned_in(&t, Some(header)), *expected, "{header:?}");
        }
        assert_eq!(pinned_origin(&c.origins, None), None);
        // A stale cookie from another config pins nothing.
        let other = config(&THREE.replace("backup", "standby"));
        assert_eq!(
            pinned_origin(&other.origins, Some(&format!("{COOKIE_NAME}={a}"))),
            None
        );
    }

    #[test]
    fn set_cookie_header() {
        assert_eq!(
            set_cookie("0123456789abcdef", 82_800, true),
            "__tf_affinity=0123456789abcdef; Path=/; Max-Age=82800; HttpOnly; SameSite=Lax; Secure"
        );
        assert_eq!(
            set_cookie("0123456789abcdef", 60, false),
            "__tf_affinity=0123456789abcdef; Path=/; Max-Age=60; HttpOnly; SameSite=Lax"
        );
    }

    fn affinity(mode: AffinityMode, failover: AffinityFailover) -> Affinity {
        Affinity {
            mode,
            ttl_s: 60,
            failover,
        }
    }

    #[test]
    fn decisions() {
        use AffinityFailover::{Sticky, Temporary};
        use AffinityMode::{Cookie, Off};
        // mode, failover, pinned, pinned healthy, policy order →
        // order, set-cookie
        type Row = (
            AffinityMode,
            AffinityFailover,
            Option<usize>,
            bool,
            &'static [usize],
            &'static [usize],
            SetCookie,
        );
        let table: &[Row] = &[
            (
                Off,
                Temporary,
                None,
                true,
                &[1, 0, 2],
                &[1, 0, 2],
                SetCookie::Never,
            ),
            (
                Off,
                Sticky,
                Some(2),
                true,
                &[1, 0, 2],
                &[1, 0, 2],
                SetCookie::Never,
            ),
            (
                Cookie,
                Temporary,
                None,
                true,
                &[1, 0, 2],
                &[1, 0, 2],
                SetCookie::Always,
            ),
            (
                Cookie,
                Sticky,
                None,
                false,
                &[1, 0, 2],
                &[1, 0, 2],
                SetCookie::Always,
            ),
            (
                Cookie,
                Temporary,
                Some(2),
                true,
                &[1, 0, 2],
                &[2, 1, 0],
                SetCookie::Never,
            ),
            (
                Cookie,
                Sticky,
                Some(2),
                true,
                &[1, 0, 2],
                &[2, 1, 0],
                SetCookie::UnlessServedBy(2),
            ),
            (
                Cookie,
                Temporary,
                Some(1),
                true,
                &[1, 0, 2],
                &[1, 0, 2],
                SetCookie::Never,
            ),
            (
                Cookie,
                Temporary,
                Some(2),
                false,
                &[1, 0, 2],
                &[1, 0, 2],
                SetCookie::Never,
            ),
            (
                Cookie,
                Sticky,
                Some(2),
                false,
                &[1, 0, 2],
                &[1, 0, 2],
                SetCookie::UnlessServedBy(2),
            ),
            // A pin outside the order (cannot come from pinned_origin) is no pin.
            (
                Cookie,
                Sticky,
                Some(7),
                true,
                &[1, 0, 2],
                &[1, 0, 2],
                SetCookie::Always,
            ),
        ];
        for (mode, failover, pinned, healthy, order, expected, cookie) in table {
            let plan = with_affinity(
                &affinity(*mode, *failover),
                *pinned,
                *healthy,
                order.to_vec(),
            );
            assert_eq!(
                plan,
                Plan {
                    order: expected.to_vec(),
                    set_cookie: *cookie
                },
                "{mode:?} {failover:?} {pinned:?} {healthy}"
            );
        }
    }

    #[test]
    fn who_gets_a_cookie() {
        assert!(!SetCookie::Never.emit_for(0));
        assert!(SetCookie::Always.emit_for(0));
        assert!(!SetCookie::UnlessServedBy(2).emit_for(2));
        assert!(SetCookie::UnlessServedBy(2).emit_for(0));
    }
}
