//! The headers that belong to the client's connection to the Worker, not to
//! the request, and so never reach an origin (RFC 9110 section 7.6.1: an
//! intermediary MUST remove them): `Connection` and every header it names,
//! and the ones that are hop-by-hop by definition (`Keep-Alive`,
//! `Proxy-Connection`, `TE`, `Trailer`, `Upgrade`). A WebSocket upgrade is
//! the exception: its `Upgrade: websocket` is how the runtime opens the
//! socket to the origin.
//!
//! Who removes what, so that a request costs two calls into the runtime,
//! not six (bench/README.md, "Issue #28"):
//! - the Worker ([`to_drop`]): `Proxy-Connection`, which the runtime's
//!   `fetch` passes on, and the headers `Connection` names;
//! - the runtime's `fetch` itself ([`BY_THE_RUNTIME`]): workerd's HTTP
//!   client treats `Connection`, `Keep-Alive`, `TE`, `Trailer` and
//!   `Upgrade` as its own connection's headers and never sends a Worker's
//!   (a non-WebSocket `Upgrade` included; `Upgrade: websocket` opens the
//!   socket). tests/hop-by-hop.test.mjs holds the runtime to it at a real
//!   origin, so a runtime that changes fails a test.
//!
//! So `Connection: keep-alive` or `close`, what nearly every HTTP/1.1
//! client sends, leaves the Worker nothing to do but the one delete.
//!
//! The Worker's part runs in JS (`dropHopByHop` in src/js/attempt.mjs, on
//! both paths); this is its specification, written to
//! tests/fixtures/fast-path.json (`hop_by_hop`), which the JS is held to
//! (crates/failover-core/tests/fast_path_fixture.rs, tests/lease.test.mjs).
//! Never dropped, whatever `Connection` names: the headers the Worker sets
//! itself or an origin needs to read the request (`Host`,
//! `Content-Length`, `Transfer-Encoding`) and the Access service token's
//! (the attempt sets those after the drop).

/// Hop-by-hop by definition and passed on by the runtime's `fetch`: the
/// Worker removes it, whatever `Connection` says.
pub const ALWAYS: &str = "proxy-connection";

/// Hop-by-hop by definition, and never sent by the runtime's `fetch`.
pub const BY_THE_RUNTIME: &[&str] = &["connection", "keep-alive", "te", "trailer", "upgrade"];

/// Connection options that name no header (RFC 9110 section 9.6).
pub const OPTIONS: &[&str] = &["close"];

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
    // What Cloudflare's edge says of the client, which an origin's rate
    // limits, ACLs and logs rely on: no client may strip them.
    "cf-connecting-ip",
    "cf-connecting-ipv6",
    "true-client-ip",
    "x-forwarded-for",
    "x-real-ip",
    "cf-ipcountry",
    "cf-ray",
    "cf-visitor",
    "cf-access-jwt-assertion",
];

/// Whether `name` is a field name at all (an RFC 9110 token): a
/// `Connection` that names anything else names no header, and a runtime
/// refuses to delete it.
pub fn is_field_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The headers the Worker removes from an attempt, lower case, in order:
/// [`ALWAYS`], then every name the client's `Connection` lists (split on
/// commas, trimmed, lower case; empty, kept, the runtime's own names,
/// `close` and what is no field name skipped, none twice).
pub fn to_drop(connection: Option<&str>) -> Vec<String> {
    let mut out = vec![ALWAYS.to_string()];
    for name in connection.unwrap_or("").split(',') {
        let name = name.trim().to_ascii_lowercase();
        let skipped = [KEPT, BY_THE_RUNTIME, OPTIONS]
            .iter()
            .any(|list| list.contains(&name.as_str()));
        if is_field_name(&name) && !skipped && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_nearly_every_client_sends_leaves_one_to_drop() {
        for connection in [
            None,
            Some("keep-alive"),
            Some("Keep-Alive"),
            Some("close"),
            Some("Upgrade"),
        ] {
            assert_eq!(to_drop(connection), ["proxy-connection"], "{connection:?}");
        }
    }

    #[test]
    fn every_header_connection_names_goes_but_the_kept_ones() {
        assert_eq!(
            to_drop(Some(
                "close, X-Secret ,x-secret,, Keep-Alive, Host, Content-Length, TE"
            )),
            ["proxy-connection", "x-secret"]
        );
    }

    #[test]
    fn the_workers_the_runtimes_and_the_kept_lists_do_not_overlap() {
        assert!(!BY_THE_RUNTIME.contains(&ALWAYS));
        assert!(!KEPT.contains(&ALWAYS));
        assert!(BY_THE_RUNTIME.iter().all(|n| !KEPT.contains(n)));
    }
}
