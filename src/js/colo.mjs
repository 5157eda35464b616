// The colo's shared verdicts (src/colo.rs), read in one crossing: every
// origin's cache entry (and, once a second, the location's copy of the
// checker's answer) is matched here and its value read from a header,
// so no Request, Response wrapper or body stream is built for Rust per key.
// `make bench-cost` counts this read (a Cache API match per origin), which
// is why an isolate makes one only when it can change where a request goes
// (edge::Isolate::colo_read_wanted). The write is here too: workers-rs's
// Cache, Response and Headers cost the Worker's Wasm more than this does.
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

// Writes one value (a verdict, the checker's answer, a claim) under `key`
// for `ttlS` seconds. It rides in a header (what colo_read_js reads, no
// body stream) and in the body (for a person looking at the entry).
// Resolves to null, or the error's message when the put failed (the
// caller logs it); never rejects.
export function colo_write_js(key, verdict, ttlS) {
  const res = new Response(verdict, { headers: { "cache-control": `max-age=${ttlS}`, [VERDICT_HEADER]: verdict } });
  return caches.default.put(key, res).then(
    () => null,
    (e) => String(e && e.message !== undefined ? e.message : e),
  );
}
