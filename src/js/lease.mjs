// The fast path's lease on Rust's decision (see src/fast.rs): which origin
// takes requests, until when. Rust grants it (`fast_lease`) and revokes it
// (`revoke_lease`, imported by Rust) whenever the health map changes; in
// between, requests go out without entering Wasm.

export const lease = {
  origin: -1,
  until: 0, // ms; 0: ask Rust again
  base: "", // scheme://authority, no path
  name: "",
  timeoutMs: 0,
  silenceMs: 0, // SILENCE_MS; 0: off
  statusPath: undefined, // set when the status endpoint is on
  generation: -1, // Rust's health generation it was granted at (isolate.rs)
  // With a steering policy, affinity or an Access token: what route.mjs
  // needs to route each request (src/fast.rs `steering`); undefined under
  // plain failover, where every request goes to `origin`.
  steer: undefined,
  instance: -1, // the Wasm instance that granted it (see entry.mjs)
};

// When the fast path last got an answer from each origin (ms). Rust pulls
// it (`fast_evidence`) before adopting a shared verdict, so a shared "down"
// older than a live answer is not adopted.
const evidence = [];

export function revoke_lease() {
  lease.until = 0;
}

// Takes a lease as `fast_lease` returns it (an object with the fields
// above, named on both sides); false when there is none.
export function grant(granted, instance) {
  if (granted === undefined) return false;
  lease.origin = granted.origin;
  lease.until = granted.until;
  lease.base = granted.base;
  lease.name = granted.name;
  lease.timeoutMs = granted.timeoutMs;
  lease.silenceMs = granted.silenceMs;
  lease.statusPath = granted.statusPath;
  lease.generation = granted.generation;
  lease.steer = granted.steer;
  if (lease.steer !== undefined) {
    lease.steer.allUp = lease.steer.names.map(() => true);
    lease.steer.allHealthy = lease.steer.healthy.every((h) => h === true);
  }
  lease.instance = instance;
  return true;
}

export function answered(origin) {
  evidence[origin] = Date.now();
}

export function fast_evidence(origin) {
  return evidence[origin] ?? 0;
}

// The upstream URL for a request under the lease, or undefined when the
// request needs Rust's full path (which makes URLs with
// failover_core::edge::target::upstream_url and matches the status endpoint with
// target::is_status_request; tests/fixtures/fast-path.json holds both
// languages to the same rows). request.url is an absolute URL the
// runtime serialized: after "scheme://", the first "/" starts the path (a
// host cannot contain one, and userinfo has it percent-encoded), so the
// path and query are appended to the origin's authority and nothing in
// them can reach another host. A fragment, which never comes from a
// client, is left to the full path, as is the status endpoint.
export function upstreamUrl(url, method) {
  const path = upstreamPath(url, method);
  return path === undefined ? undefined : lease.base + path;
}

// The path and query upstreamUrl appends to an origin's base (the same
// rules), for the steered path, which picks the base per request.
export function upstreamPath(url, method) {
  const scheme = url.indexOf("://");
  if (scheme < 0) return undefined;
  const start = url.indexOf("/", scheme + 3);
  if (start < 0 || url.includes("#", start)) return undefined;
  const sp = lease.statusPath;
  if (sp !== undefined && (method === "GET" || method === "HEAD") && url.startsWith(sp, start)) {
    const end = start + sp.length;
    if (end === url.length || url[end] === "?") return undefined;
  }
  return url.slice(start);
}
