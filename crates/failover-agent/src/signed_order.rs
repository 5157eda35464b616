//! Who may give this agent an order (`POST /failover/*`), and how the peer
//! agent proves it is the peer without sending the token.
//!
//! - An operator sends `Authorization: Bearer <token>` (the README's curl
//!   example), on loopback only: a bearer order from any other address is
//!   refused before its token is looked at. The token crosses the wire in
//!   clear text with it, and it is also the key of the peers' signatures;
//!   a peer never needs it, it signs.
//! - The peer agent sends `Authorization: Failover-HMAC-SHA256
//!   ts=<unix ms>,nonce=<32 hex>,sig=<64 hex>`: an HMAC-SHA256, keyed by the
//!   shared token, over the method, the path, the recipient's role, the
//!   timestamp and the nonce. Whoever sees an order on the wire learns no
//!   token, cannot change its path or send it to the other node (the role is
//!   signed), cannot use it twice (the nonce is remembered for the window)
//!   and cannot keep it for later (the timestamp must be within
//!   [`WINDOW_MS`] of the recipient's clock, either way).
//!
//! The body is not signed: an order has none, the API never reads one, and
//! what an order means is its method and path alone. An order that ever
//! carries a body must sign a hash of it too.
//!
//! Pure but for the HMAC: the clock is an argument.

use std::collections::VecDeque;
use std::net::IpAddr;

use failover_core::node::Role;
use failover_core::secret::bearer_matches;
use ring::hmac;

/// The `Authorization` scheme of a signed order.
pub const SCHEME: &str = "Failover-HMAC-SHA256";

/// How far a signed order's timestamp may be from the recipient's clock,
/// either way: generous for two NTP-synchronised hosts and a slow hop,
/// short enough that a captured order is soon worthless.
pub(crate) const WINDOW_MS: u64 = 60_000;

/// Nonces remembered at most. Only correctly signed orders are remembered
/// (nobody without the token can fill this), and a pair exchanges a few
/// orders a minute; past this the oldest is forgotten first.
const SEEN_MAX: usize = 1024;

/// Bytes of the nonce.
pub const NONCE_LEN: usize = 16;

/// Who gave an order that was let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Caller {
    /// `Authorization: Bearer <token>`.
    Operator,
    /// A signed order from the peer agent.
    Peer,
}

/// Why an order was refused (401).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No `Authorization`, or a scheme other than the two above.
    NoCredentials,
    /// A bearer token that is not ours.
    WrongToken,
    /// A bearer token from an address other than loopback, whatever the
    /// token.
    BearerNotOnLoopback,
    /// A signed order whose header does not parse.
    Malformed,
    /// A signed order whose signature is not ours (wrong token, another
    /// path, another recipient).
    BadSignature,
    /// A signed order older or newer than the window: replayed later, or
    /// the two clocks are apart.
    OutsideWindow,
    /// A signed order seen before.
    Replayed,
}

impl Refusal {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Refusal::NoCredentials => "no credentials",
            Refusal::WrongToken => "wrong bearer token",
            Refusal::BearerNotOnLoopback => {
                "Bearer is accepted on loopback only (peers sign their orders)"
            }
            Refusal::Malformed => "malformed signature header",
            Refusal::BadSignature => "bad signature",
            Refusal::OutsideWindow => {
                "signed order outside the 60 s window (replayed, or the clocks differ)"
            }
            Refusal::Replayed => "signed order replayed",
        }
    }
}

/// An order as it reached the API: what it asks, and from where.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Received<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub from: IpAddr,
}

/// The role an order to the peer is addressed to.
pub(crate) fn peer_of(role: Role) -> Role {
    match role {
        Role::Primary => Role::Standby,
        Role::Standby => Role::Primary,
        Role::Node => Role::Node,
    }
}

/// The `Authorization` value of an order to `recipient`.
pub fn sign(
    token: &str,
    method: &str,
    path: &str,
    recipient: Role,
    now_unix_ms: u64,
    nonce: &[u8; NONCE_LEN],
) -> String {
    let nonce = hex(nonce);
    let message = signed_text(method, path, recipient, now_unix_ms, &nonce);
    let key = hmac::Key::new(hmac::HMAC_SHA256, token.as_bytes());
    let tag = hmac::sign(&key, message.as_bytes());
    format!(
        "{SCHEME} ts={now_unix_ms},nonce={nonce},sig={}",
        hex(tag.as_ref())
    )
}

/// A fresh random nonce; `None` if the system has no randomness to give.
pub(crate) fn nonce() -> Option<[u8; NONCE_LEN]> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; NONCE_LEN];
    ring::rand::SystemRandom::new().fill(&mut bytes).ok()?;
    Some(bytes)
}

/// What is signed: one field a line, so that no field can run into the next.
fn signed_text(method: &str, path: &str, recipient: Role, ts: u64, nonce: &str) -> String {
    format!(
        "failover-agent order v1\n{method}\n{path}\n{}\n{ts}\n{nonce}",
        recipient.as_str()
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    // An odd length ends in a one-digit slice, which `get` refuses.
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A signed header's fields, parsed strictly: `ts=..,nonce=..,sig=..` in
/// that order, lowercase hex of the right lengths.
struct Signed<'a> {
    ts: u64,
    nonce: &'a str,
    sig: Vec<u8>,
}

fn parse(fields: &str) -> Option<Signed<'_>> {
    let mut parts = fields.trim().split(',');
    let ts = parts.next()?.strip_prefix("ts=")?;
    let nonce = parts.next()?.strip_prefix("nonce=")?;
    let sig = parts.next()?.strip_prefix("sig=")?;
    if parts.next().is_some()
        || ts.is_empty()
        || ts.len() > 20
        || !ts.bytes().all(|b| b.is_ascii_digit())
        || nonce.len() != NONCE_LEN * 2
        || unhex(nonce).is_none()
        || sig.len() != 64
    {
        return None;
    }
    Some(Signed {
        ts: ts.parse().ok()?,
        nonce,
        sig: unhex(sig)?,
    })
}

/// Checks orders, remembering the signed ones it let through for the
/// window.
#[derive(Default)]
pub(crate) struct Verifier {
    /// (timestamp, nonce) of accepted signed orders, oldest first.
    seen: VecDeque<(u64, String)>,
}

impl Verifier {
    /// Who gave the order, or why it is refused. `me` is this agent's role,
    /// `now_unix_ms` its wall clock (the peer's timestamps are wall-clock
    /// too: the two hosts must keep NTP time).
    pub(crate) fn check(
        &mut self,
        authorization: Option<&str>,
        request: &Received<'_>,
        token: &str,
        me: Role,
        now_unix_ms: u64,
    ) -> Result<Caller, Refusal> {
        let Some(header) = authorization.map(str::trim) else {
            return Err(Refusal::NoCredentials);
        };
        let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
        if !scheme.eq_ignore_ascii_case(SCHEME) {
            if !scheme.eq_ignore_ascii_case("bearer") {
                return Err(Refusal::NoCredentials);
            }
            // Before the token is compared: from elsewhere, right or wrong
            // get the same answer.
            if !request.from.to_canonical().is_loopback() {
                return Err(Refusal::BearerNotOnLoopback);
            }
            return if bearer_matches(Some(header), token) {
                Ok(Caller::Operator)
            } else {
                Err(Refusal::WrongToken)
            };
        }
        let signed = parse(rest).ok_or(Refusal::Malformed)?;
        let message = signed_text(request.method, request.path, me, signed.ts, signed.nonce);
        let key = hmac::Key::new(hmac::HMAC_SHA256, token.as_bytes());
        // ring compares in constant time.
        hmac::verify(&key, message.as_bytes(), &signed.sig).map_err(|_| Refusal::BadSignature)?;
        if signed.ts.abs_diff(now_unix_ms) > WINDOW_MS {
            return Err(Refusal::OutsideWindow);
        }
        self.forget_before(now_unix_ms.saturating_sub(WINDOW_MS));
        if self.seen.iter().any(|(_, n)| n == signed.nonce) {
            return Err(Refusal::Replayed);
        }
        if self.seen.len() >= SEEN_MAX {
            self.seen.pop_front();
        }
        self.seen.push_back((signed.ts, signed.nonce.to_string()));
        Ok(Caller::Peer)
    }

    /// Orders stamped before `oldest` are refused by the window anyway.
    fn forget_before(&mut self, oldest: u64) {
        self.seen.retain(|(ts, _)| *ts >= oldest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "a-token-of-some-length";
    const T0: u64 = 1_800_000_000_000;
    const NONCE: [u8; NONCE_LEN] = [7; NONCE_LEN];

    fn order(ts: u64, nonce: u8) -> String {
        sign(
            TOKEN,
            "POST",
            "/failover/stop",
            Role::Primary,
            ts,
            &[nonce; NONCE_LEN],
        )
    }

    fn check(v: &mut Verifier, header: &str, now: u64) -> Result<Caller, Refusal> {
        check_from(v, header, "127.0.0.1", now)
    }

    fn check_from(v: &mut Verifier, header: &str, from: &str, now: u64) -> Result<Caller, Refusal> {
        let request = Received {
            method: "POST",
            path: "/failover/stop",
            from: from.parse().unwrap(),
        };
        v.check(Some(header), &request, TOKEN, Role::Primary, now)
    }

    #[test]
    fn a_signed_order_is_let_through_once_within_the_window() {
        let mut v = Verifier::default();
        let header = order(T0, 1);
        assert!(!header.contains(TOKEN));
        assert_eq!(check(&mut v, &header, T0), Ok(Caller::Peer));
        // Captured and sent again, at once or later.
        assert_eq!(check(&mut v, &header, T0 + 1), Err(Refusal::Replayed));
        assert_eq!(
            check(&mut v, &header, T0 + WINDOW_MS + 1),
            Err(Refusal::OutsideWindow)
        );
        // The same instant with another nonce is another order.
        assert_eq!(check(&mut v, &order(T0, 2), T0), Ok(Caller::Peer));
    }

    /// (timestamp of the order, recipient's clock, verdict): the window is
    /// 60 s each way, inclusive.
    #[test]
    fn the_window_is_sixty_seconds_each_way() {
        let table = [
            (T0, T0, Ok(Caller::Peer)),
            (T0 - WINDOW_MS, T0, Ok(Caller::Peer)),
            (T0 + WINDOW_MS, T0, Ok(Caller::Peer)),
            (T0 - WINDOW_MS - 1, T0, Err(Refusal::OutsideWindow)),
            (T0 + WINDOW_MS + 1, T0, Err(Refusal::OutsideWindow)),
            (0, T0, Err(Refusal::OutsideWindow)),
            (u64::MAX, T0, Err(Refusal::OutsideWindow)),
        ];
        for (i, (ts, now, verdict)) in table.into_iter().enumerate() {
            let mut v = Verifier::default();
            assert_eq!(check(&mut v, &order(ts, 1), now), verdict, "row {i}");
        }
    }

    #[test]
    fn a_signature_binds_method_path_recipient_and_token() {
        let mut v = Verifier::default();
        let signed = |token: &str, method: &str, path: &str, to: Role| {
            sign(token, method, path, to, T0, &NONCE)
        };
        for header in [
            signed(
                "another-token-entirely",
                "POST",
                "/failover/stop",
                Role::Primary,
            ),
            signed(TOKEN, "GET", "/failover/stop", Role::Primary),
            signed(TOKEN, "POST", "/failover/start", Role::Primary),
            // An order to the standby replayed at the primary.
            signed(TOKEN, "POST", "/failover/stop", Role::Standby),
        ] {
            assert_eq!(check(&mut v, &header, T0), Err(Refusal::BadSignature));
        }
        // A refused order is not remembered: the genuine one still passes.
        let genuine = signed(TOKEN, "POST", "/failover/stop", Role::Primary);
        assert_eq!(check(&mut v, &genuine, T0), Ok(Caller::Peer));
    }

    #[test]
    fn an_operators_bearer_token_still_works() {
        let mut v = Verifier::default();
        let bearer = format!("Bearer {TOKEN}");
        assert_eq!(check(&mut v, &bearer, T0), Ok(Caller::Operator));
        assert_eq!(check(&mut v, &bearer, T0), Ok(Caller::Operator));
        assert_eq!(
            check(&mut v, "Bearer not-the-token", T0),
            Err(Refusal::WrongToken)
        );
        let request = Received {
            method: "POST",
            path: "/",
            from: "127.0.0.1".parse().unwrap(),
        };
        assert_eq!(
            v.check(None, &request, TOKEN, Role::Primary, T0),
            Err(Refusal::NoCredentials)
        );
        assert_eq!(check(&mut v, "Basic eDp5", T0), Err(Refusal::NoCredentials));
    }

    /// (from, verdict on the right bearer token, on a wrong one): loopback
    /// in any spelling, and nothing else, whatever the token.
    #[test]
    fn a_bearer_token_is_accepted_on_loopback_only() {
        let right = format!("Bearer {TOKEN}");
        let wrong = "Bearer not-the-token";
        let not_here = Err(Refusal::BearerNotOnLoopback);
        type Verdict = Result<Caller, Refusal>;
        let table: &[(&str, Verdict, Verdict)] = &[
            ("127.0.0.1", Ok(Caller::Operator), Err(Refusal::WrongToken)),
            ("127.0.0.2", Ok(Caller::Operator), Err(Refusal::WrongToken)),
            ("::1", Ok(Caller::Operator), Err(Refusal::WrongToken)),
            (
                "::ffff:127.0.0.1",
                Ok(Caller::Operator),
                Err(Refusal::WrongToken),
            ),
            ("10.0.0.2", not_here, not_here),
            ("192.0.2.2", not_here, not_here),
            ("fd00::2", not_here, not_here),
            ("::ffff:10.0.0.2", not_here, not_here),
        ];
        for (from, with_right, with_wrong) in table {
            let mut v = Verifier::default();
            assert_eq!(check_from(&mut v, &right, from, T0), *with_right, "{from}");
            assert_eq!(check_from(&mut v, wrong, from, T0), *with_wrong, "{from}");
        }
        // The peer signs, from wherever it is.
        let mut v = Verifier::default();
        assert_eq!(
            check_from(&mut v, &order(T0, 1), "10.0.0.2", T0),
            Ok(Caller::Peer)
        );
    }

    /// Forged, broken and huge headers are refused, never a panic.
    #[test]
    fn hostile_signature_headers() {
        let mut v = Verifier::default();
        let good = order(T0, 1);
        let fields = good.split_once(' ').map(|(_, f)| f).unwrap_or_default();
        let sig = fields
            .rsplit_once("sig=")
            .map(|(_, s)| s)
            .unwrap_or_default();
        let nonce = "07".repeat(NONCE_LEN);
        let table = [
            SCHEME.to_string(),
            format!("{SCHEME} "),
            format!("{SCHEME} ts={T0}"),
            format!("{SCHEME} nonce={nonce},ts={T0},sig={sig}"),
            format!("{SCHEME} ts={T0},nonce={nonce},sig={sig},extra=1"),
            format!("{SCHEME} ts=-1,nonce={nonce},sig={sig}"),
            format!("{SCHEME} ts=99999999999999999999999,nonce={nonce},sig={sig}"),
            format!("{SCHEME} ts={T0},nonce=zz{},sig={sig}", "0".repeat(30)),
            format!("{SCHEME} ts={T0},nonce={nonce},sig={}", &sig[..62]),
            format!("{SCHEME} ts={T0},nonce={nonce},sig=é{}", &sig[..62]),
            format!("{SCHEME} ts={T0},nonce={nonce},sig={}", "0".repeat(100_000)),
            format!("{SCHEME} {}", ",".repeat(100_000)),
        ];
        for header in table {
            let verdict = check(&mut v, &header, T0);
            assert_eq!(verdict, Err(Refusal::Malformed), "{:.120}", header);
        }
        let flipped = format!("{}{}", &good[..good.len() - 1], "0");
        let flipped = if flipped == good {
            format!("{}1", &good[..good.len() - 1])
        } else {
            flipped
        };
        assert_eq!(check(&mut v, &flipped, T0), Err(Refusal::BadSignature));
        assert_eq!(check(&mut v, &good, T0), Ok(Caller::Peer));
    }

    #[test]
    fn remembered_nonces_are_bounded_and_expire() {
        let mut v = Verifier::default();
        for i in 0..(SEEN_MAX as u64 + 10) {
            let nonce = i.to_be_bytes().repeat(2);
            let mut n = [0u8; NONCE_LEN];
            n.copy_from_slice(&nonce);
            let header = sign(TOKEN, "POST", "/failover/stop", Role::Primary, T0, &n);
            assert_eq!(check(&mut v, &header, T0), Ok(Caller::Peer));
        }
        assert_eq!(v.seen.len(), SEEN_MAX);
        assert_eq!(
            check(&mut v, &order(T0 + WINDOW_MS + 1, 1), T0 + WINDOW_MS + 1),
            Ok(Caller::Peer)
        );
        assert_eq!(
            v.seen.len(),
            1,
            "orders older than the window are forgotten"
        );
    }
}
