//! A brake on guessing `STATUS_TOKEN` or `ADMIN_TOKEN`, per client address,
//! in one isolate.
//!
//! 1. A request to the status endpoint or the admin API that presents a
//!    token (an `Authorization` header) which is wrong is a miss for its
//!    client (`cf-connecting-ip`, an IPv6 address as its /64: one host
//!    holds a whole /64). A request with no `Authorization` header is no
//!    miss: a browser asks first without credentials.
//! 2. [`MAX_MISSES`] misses within [`WINDOW_MS`] of a client's first miss
//!    brake that client until the window ends: every request of its to
//!    those paths is answered 429 with `Retry-After`, without a comparison,
//!    so a braked client learns nothing, not even from the right token.
//! 3. Only the guessing client is braked: the operator, from another
//!    address, is never slowed by someone else's guesses.
//! 4. A Rate Limiting binding (`env.TOKEN_GUESS_LIMITER`, optional) counts
//!    the same misses across the location's isolates; when it says no, the
//!    client is braked here as in 2 ([`GuessBrake::brake`]).
//!
//! What it does not do: an attacker with many addresses gets
//! [`MAX_MISSES`] guesses per address, window and isolate. A token of at
//! least 16 characters (`MIN_TOKEN_CHARS`) is what makes guessing hopeless;
//! the brake keeps a flood of guesses from costing the Worker's CPU and
//! from filling logs.
//!
//! At most [`MAX_CLIENTS`] clients are remembered; past that, the client
//! whose window started first is forgotten (a braked one only when every
//! one is braked).

/// Misses per client and window before the brake.
pub const MAX_MISSES: u32 = 10;

/// The window, from a client's first miss.
pub const WINDOW_MS: u64 = 60_000;

/// Clients remembered at once.
pub const MAX_CLIENTS: usize = 1024;

#[derive(Clone, Copy, Debug)]
struct Window {
    started_ms: u64,
    misses: u32,
}

impl Window {
    fn ends_ms(&self) -> u64 {
        self.started_ms.saturating_add(WINDOW_MS)
    }

    fn braked(&self) -> bool {
        self.misses >= MAX_MISSES
    }
}

/// The misses of the clients that made some recently. A list, not a map:
/// at most [`MAX_CLIENTS`], looked through only by requests for the
/// Worker's own paths, and a map's code is weight on the Wasm module every
/// request runs in.
#[derive(Debug, Default)]
pub struct GuessBrake {
    windows: Vec<(String, Window)>,
}

impl GuessBrake {
    /// No client has missed yet.
    pub fn new() -> GuessBrake {
        GuessBrake::default()
    }

    /// When `client` is braked at `now_ms`: the whole seconds until it may
    /// try again (at least 1, for `Retry-After`); None: it may try.
    pub fn braked(&self, client: &str, now_ms: u64) -> Option<u64> {
        let (_, window) = self.windows.iter().find(|(k, _)| k == client)?;
        (window.braked() && now_ms < window.ends_ms())
            .then(|| (window.ends_ms() - now_ms).div_ceil(1000).max(1))
    }

    /// Records a wrong token from `client`; true when it is now braked.
    pub fn missed(&mut self, client: &str, now_ms: u64) -> bool {
        let window = self.window(client, now_ms);
        window.misses = window.misses.saturating_add(1);
        window.braked()
    }

    /// Brakes `client` for a window from now (the Rate Limiting binding
    /// said it has guessed too often in this location).
    pub fn brake(&mut self, client: &str, now_ms: u64) {
        let window = self.window(client, now_ms);
        *window = Window {
            started_ms: now_ms,
            misses: MAX_MISSES,
        };
    }

    /// How many clients are remembered (tests: the bound).
    #[cfg(test)]
    fn clients(&self) -> usize {
        self.windows.len()
    }

    /// `client`'s window, a fresh one if its last has ended.
    fn window(&mut self, client: &str, now_ms: u64) -> &mut Window {
        let fresh = Window {
            started_ms: now_ms,
            misses: 0,
        };
        let at = match self.windows.iter().position(|(k, _)| k == client) {
            Some(at) => at,
            None => {
                self.make_room(now_ms);
                self.windows.push((client.to_string(), fresh));
                self.windows.len() - 1
            }
        };
        let window = &mut self.windows[at].1;
        if now_ms >= window.ends_ms() {
            *window = fresh;
        }
        window
    }

    fn make_room(&mut self, now_ms: u64) {
        if self.windows.len() < MAX_CLIENTS {
            return;
        }
        self.windows.retain(|(_, w)| now_ms < w.ends_ms());
        if self.windows.len() < MAX_CLIENTS {
            return;
        }
        let oldest = |braked: bool| {
            self.windows
                .iter()
                .enumerate()
                .filter(|(_, (_, w))| braked || !w.braked())
                .min_by_key(|(_, (_, w))| w.started_ms)
                .map(|(at, _)| at)
        };
        if let Some(at) = oldest(false).or_else(|| oldest(true)) {
            self.windows.swap_remove(at);
        }
    }
}

/// The brake's key for a client address (`cf-connecting-ip`): an IPv4
/// address as it is, an IPv6 one as its /64 (`2001:db8:1:2::/64`),
/// anything else (absent, not an address: a local runtime without
/// Cloudflare in front) as `unknown`, one key for all of them. Parsed by
/// hand: std's address parser is weight on the request path's Wasm.
pub fn client_key(address: Option<&str>) -> String {
    let address = address.map_or("", str::trim);
    let key = if address.contains(':') {
        ipv6_prefix(address)
    } else {
        is_ipv4(address).then(|| address.to_string())
    };
    key.unwrap_or_else(|| "unknown".to_string())
}

fn is_ipv4(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u8>().is_ok()
        })
}

/// The first four groups of an IPv6 address, `::` expanded, as
/// `a:b:c:d::/64`; None when it is not one.
fn ipv6_prefix(text: &str) -> Option<String> {
    let group = |g: &str| {
        (!g.is_empty() && g.len() <= 4)
            .then(|| u16::from_str_radix(g, 16).ok())
            .flatten()
    };
    // A trailing dotted IPv4 (`::ffff:192.0.2.1`) stands for two groups.
    let groups = |part: &str| -> Option<Vec<u16>> {
        if part.is_empty() {
            return Some(Vec::new());
        }
        let mut out = Vec::new();
        for g in part.split(':') {
            if g.contains('.') {
                if !is_ipv4(g) {
                    return None;
                }
                out.extend([0, 0]);
            } else {
                out.push(group(g)?);
            }
        }
        Some(out)
    };
    let all = match text.split_once("::") {
        Some((head, tail)) => {
            let (head, tail) = (groups(head)?, groups(tail)?);
            if head.len() + tail.len() > 7 || tail.is_empty() && text.ends_with(":::") {
                return None;
            }
            let zeros = 8 - head.len() - tail.len();
            [head, vec![0; zeros], tail].concat()
        }
        None => groups(text)?,
    };
    if all.len() != 8 || text.matches("::").count() > 1 {
        return None;
    }
    Some(format!(
        "{:x}:{:x}:{:x}:{:x}::/64",
        all[0], all[1], all[2], all[3]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_braked_at_its_tenth_miss_until_its_window_ends() {
        let mut brake = GuessBrake::new();
        for i in 1..MAX_MISSES {
            assert!(
                !brake.missed("198.51.100.7", u64::from(i) * 100),
                "miss {i}"
            );
            assert_eq!(brake.braked("198.51.100.7", u64::from(i) * 100), None);
        }
        assert!(brake.missed("198.51.100.7", 1_000));
        assert_eq!(
            brake.braked("198.51.100.7", 1_000),
            Some(60),
            "59.1 s left of the window from the first miss at 100, rounded up"
        );
        assert_eq!(brake.braked("198.51.100.7", 60_099), Some(1));
        assert_eq!(
            brake.braked("198.51.100.7", 60_100),
            None,
            "the window ended"
        );
        assert!(!brake.missed("198.51.100.7", 60_100), "a fresh window");
    }

    #[test]
    fn another_client_is_never_braked_by_someone_elses_misses() {
        let mut brake = GuessBrake::new();
        for _ in 0..100 {
            brake.missed("198.51.100.7", 5);
        }
        assert!(brake.braked("198.51.100.7", 5).is_some());
        assert_eq!(brake.braked("203.0.113.9", 5), None);
    }

    #[test]
    fn misses_spread_over_windows_never_brake() {
        let mut brake = GuessBrake::new();
        for i in 0..100u64 {
            // MAX_MISSES - 1 a window.
            let now = i / u64::from(MAX_MISSES - 1) * WINDOW_MS + i;
            assert!(!brake.missed("c", now), "miss {i} at {now}");
        }
    }

    #[test]
    fn the_binding_brakes_a_client_for_a_window() {
        let mut brake = GuessBrake::new();
        brake.missed("c", 0);
        brake.brake("c", 30_000);
        assert_eq!(brake.braked("c", 30_000), Some(60));
        assert_eq!(brake.braked("c", 90_000), None);
    }

    #[test]
    fn a_flood_of_addresses_is_bounded_and_keeps_the_braked_ones() {
        let mut brake = GuessBrake::new();
        for _ in 0..MAX_MISSES {
            brake.missed("guesser", 0);
        }
        for i in 0..(MAX_CLIENTS as u64 * 3) {
            brake.missed(&format!("10.0.{}.{}", i / 256, i % 256), 1 + i);
        }
        assert_eq!(brake.clients(), MAX_CLIENTS);
        assert!(brake.braked("guesser", 10_000).is_some(), "still braked");
    }

    /// The hand parser agrees with std's on every address std prints,
    /// compressed or not.
    #[test]
    fn client_keys_agree_with_std() {
        use std::net::Ipv6Addr;
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..5_000 {
            let mut s = [0u16; 8];
            for g in &mut s {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Zero groups often, so that `::` lands everywhere.
                *g = if seed.is_multiple_of(3) {
                    0
                } else {
                    seed as u16
                };
            }
            let a = Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]);
            let want = format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3]);
            assert_eq!(client_key(Some(&a.to_string())), want, "{a}");
            let full: Vec<String> = s.iter().map(|g| format!("{g:x}")).collect();
            assert_eq!(client_key(Some(&full.join(":"))), want, "{a}");
        }
    }

    #[test]
    fn client_keys() {
        assert_eq!(client_key(Some("198.51.100.7")), "198.51.100.7");
        assert_eq!(client_key(Some(" 198.51.100.7 ")), "198.51.100.7");
        assert_eq!(
            client_key(Some("2001:db8:1:2:3:4:5:6")),
            "2001:db8:1:2::/64",
        );
        assert_eq!(
            client_key(Some("2001:db8:1:2:ffff::1")),
            client_key(Some("2001:db8:1:2::9")),
            "one /64, one client"
        );
        for odd in [
            None,
            Some(""),
            Some("not an address"),
            Some("1.2.3.4, 5.6.7.8"),
        ] {
            assert_eq!(client_key(odd), "unknown", "{odd:?}");
        }
    }
}
