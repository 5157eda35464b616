// The colo's shared verdicts (src/colo.rs), read in one crossing: every
// origin's cache entry (and, once a second, the location's copy of the
// checker's answer) is matched here and its value read from a header,
// so no Request, Response wrapper or body stream is built for Rust per key.
// `make bench-cost` counts this read, which a small site pays on nearly
// every request (one read per 250 ms at most, beside the request).
//
// Resolves to one verdict string per key (SharedVerdict's wire format), or
// null where there is none or it cannot be read; never rejects.
export const VERDICT_HEADER = "x-tunnel-failover-verdict";

export function colo_read_js(keys) {
  const cache = caches.default;
  return Promise.all(
    keys.map((key) =>
      cache.match(key).then(
        (res) => (res === undefined ? null : res.headers.get(VERDICT_HEADER)),
        () => null,
      ),
    ),
  );
}

// A timer for Rust's background work (src/consult.rs: a claim settles
// before it is read back).
export function sleep_js(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
