//! The headers that belong to the client's connection to the Worker, not to
//! the request, and so never reach an origin (RFC 9110 section 7.6.1: an
//! intermediary MUST remove them): `Connection` and every header it names,
//! and the ones that are hop-by-hop by definition (`Keep-Alive`,
//! `Proxy-Connection`, `TE`, `Trailer`, `Upgrade`). A WebSocket upgrade is
//! the exception: its `Upgrade: websocket` is how the runtime opens the
//! socket to the origin, so it stays (with the `Connection` that names it).
//!
//! The rule's one implementation runs in JS (`forward_headers` in
//! src/js/attempt.mjs, on both paths); this is its specification, written
//! to tests/fixtures/fast-path.json (`hop_by_hop`), which the JS is held to
//! (crates/failover-core/tests/fast_path_fixture.rs, tests/lease.test.mjs).
//! Never dropped, whatever `Connection` names: the headers the Worker sets
//! itself or an origin needs to read the request (`Host`, `Content-Length`,
//! `Transfer-Encoding`) and the Access service token's (the attempt sets
//! those after the drop).

/// Hop-by-hop whatever `Connection` says, lower case.
pub const ALWAYS: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
];

/// Names a client's `Connection` may not remove: the runtime or the
/// Worker sets them, or the request cannot be read without them.
pub const KEPT: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "x-forwarded-host",
    "x-forwarded-proto",
    "cf-access-client-id",
    "cf-access-client-secret",
];

/// Whether an `Upgrade` value asks for a WebSocket (case-insensitive, the
/// first protocol offered).
pub fn is_websocket(upgrade: &str) -> bool {
    upgrade
        .split(',')
        .next()
        .map(str::trim)
        .and_then(|p| p.split('/').next())
        .is_some_and(|p| p.eq_ignore_ascii_case("websocket"))
}

/// The headers to remove from an attempt, lower case, in order: the fixed
/// ones, `upgrade` unless it asks for a WebSocket, then every name the
/// client's `Connection` lists (split on commas, trimmed, lower case;
/// empty and kept names skipped, none twice). For a WebSocket upgrade,
/// `connection` itself stays too: it names the upgrade.
pub fn to_drop(connection: Option<&str>, upgrade: Option<&str>) -> Vec<String> {
    let websocket = upgrade.is_some_and(is_websocket);
    let mut out: Vec<String> = ALWAYS
        .iter()
        .filter(|n| !(websocket && **n == "connection"))
        .map(|n| n.to_string())
        .collect();
    if upgrade.is_some() && !websocket {
        out.push("upgrade".to_string());
    }
    for name in connection.unwrap_or("").split(',') {
        let name = name.trim().to_ascii_lowercase();
        let named_upgrade = websocket && name == "upgrade";
        if name.is_empty() || named_upgrade || KEPT.contains(&name.as_str()) {
            continue;
        }
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_ones_always_go() {
        assert_eq!(
            to_drop(None, None),
            [
                "connection",
                "keep-alive",
                "proxy-connection",
                "te",
                "trailer"
            ]
        );
    }

    #[test]
    fn every_header_connection_names_goes_but_the_kept_ones() {
        assert_eq!(
            to_drop(
                Some("close, X-Secret ,x-secret,, Keep-Alive, Host, Content-Length"),
                None
            ),
            [
                "connection",
                "keep-alive",
                "proxy-connection",
                "te",
                "trailer",
                "close",
                "x-secret"
            ]
        );
    }

    #[test]
    fn a_websocket_upgrade_keeps_its_upgrade_and_connection() {
        for upgrade in ["websocket", "WebSocket", " websocket/13, h2c"] {
            assert_eq!(
                to_drop(Some("Upgrade, X-Hop"), Some(upgrade)),
                ["keep-alive", "proxy-connection", "te", "trailer", "x-hop"],
                "{upgrade}"
            );
        }
    }

    #[test]
    fn any_other_upgrade_goes() {
        for upgrade in ["h2c", "TLS/1.2", "", "websocketx", "h2c, websocket"] {
            let drop = to_drop(Some("Upgrade"), Some(upgrade));
            assert!(drop.contains(&"upgrade".to_string()), "{upgrade}: {drop:?}");
            assert!(
                drop.contains(&"connection".to_string()),
                "{upgrade}: {drop:?}"
            );
        }
    }
}
