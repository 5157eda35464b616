// The fast path's lease on Rust's decision (see src/fast.rs): which origin
// takes requests. Rust grants it (`fast_lease`) and revokes it
// (`revoke_lease`, imported by Rust) whenever the health map's routing
// changes; in between, requests go out without entering Wasm. Periodic
// work does not end it: from `workDue` on, the next request also starts
// that work in the background (entry.mjs), and so does one that finds an
// attempt kept waiting from `coloDue` on (a colo read, which Rust wants
// then; edge::Isolate::colo_read_wanted). What never changes while
// a Wasm instance lives comes once per instance (`fast_config`, `configure`
// here), not with every lease. `upstreamUrl` is the twin of
// failover_core::edge::target, held to tests/fixtures/fast-path.json
// (tests/lease.test.mjs here, fast_path_fixture.rs in the core).

import { isWaiting } from "./silence.mjs";
import { tokenBytes } from "./credentials.mjs";

// The instance's part, as `fast_config` returns it (src/fast.rs).
export const instance = {
  id: -1, // the Wasm instance it came from (see entry.mjs)
  // With several sites (SITES): the host table sites.mjs reads; each
  // lease then carries a part per site (`lease.origins`). Undefined: one
  // site, every host.
  hosts: undefined,
  names: [],
  bases: [], // scheme://authority, no path, per origin
  timeoutMs: 0,
  silenceMs: 0, // SILENCE_MS; 0: off
  replayMax: 0, // REPLAY_BODY_MAX_BYTES: the largest body the fast path buffers
  suspectMs: 0, // an attempt waiting this long makes a colo read worth it
  statusPath: undefined, // set when the status endpoint or the admin API is on
  tokens: undefined, // then: the Worker's own tokens, as credentials.mjs takes them
  // With a steering policy, affinity or an Access token: what route.mjs
  // needs to route each request (src/fast.rs `steering`, plus `names`,
  // `bases` and, from each lease, `healthy`); undefined under plain
  // failover, where every request goes to the lease's origin. Overrides
  // in force come folded into each lease's `healthy` (what requests may go
  // to) and `intendable` (what they may be meant for: route.mjs's allUp).
  steer: undefined,
};

// The lease's part, as `fast_lease` returns it.
export const lease = {
  valid: false, // false: ask Rust again
  origin: -1,
  workDue: 0, // ms: from then on, the next request starts periodic work
  coloDue: 0, // ms: from then on, so does one that finds an attempt waiting
  base: "", // the origin's, from the instance's bases
  name: "",
  failover: false, // true: `origin` serves because one meant before it is down (x-failover)
  // With several sites, per site: the origin its requests go to, or -1
  // (none for now: the full path, and ask again) or -2 (the site steers
  // each request: the full path's); and whether that origin is a failover.
  origins: undefined,
  failovers: undefined,
  instance: -1, // the Wasm instance that granted it
};

// When the fast path last got an answer from each origin (ms). Rust pulls
// it (`fast_evidence`) before adopting a shared verdict, so a shared "down"
// older than a live answer is not adopted.
const evidence = [];

export function revoke_lease() {
  lease.valid = false;
}

// Takes the instance's part as `fast_config` returns it; false when there
// is none (a broken config: every request takes the full path).
export function configure(config, id) {
  if (config === undefined) return false;
  instance.names = config.names;
  instance.bases = config.bases;
  instance.timeoutMs = config.timeoutMs;
  instance.silenceMs = config.silenceMs;
  instance.replayMax = config.replayMax;
  instance.suspectMs = config.suspectMs;
  instance.hosts = config.hosts;
  instance.statusPath = config.statusPath;
  instance.tokens = config.tokens === undefined ? undefined : tokenBytes(config.tokens);
  instance.steer = config.steer;
  if (instance.steer !== undefined) {
    instance.steer.names = config.names;
    instance.steer.bases = config.bases;
    instance.steer.everyOrigin = config.names.map(() => true);
    instance.steer.allUp = instance.steer.everyOrigin;
    instance.steer.healthy = instance.steer.allUp;
    instance.steer.allHealthy = true;
  }
  instance.id = id;
  return true;
}

// Takes a lease as `fast_lease` returns it (an object with the fields
// named on both sides); false when there is none. The instance's part must
// be configured first.
export function grant(granted, id) {
  if (granted === undefined || instance.id !== id) return false;
  lease.origin = granted.origin;
  lease.workDue = granted.workDue;
  lease.coloDue = granted.coloDue;
  lease.base = instance.bases[granted.origin];
  lease.name = instance.names[granted.origin];
  lease.failover = granted.failover;
  lease.origins = granted.origins;
  lease.failovers = granted.failovers;
  const steer = instance.steer;
  if (steer !== undefined && granted.healthy !== undefined) {
    steer.healthy = granted.healthy;
    // With overrides in force, what a request may be meant for (a drained
    // or disabled origin is nobody's intended origin); otherwise all.
    steer.allUp = granted.intendable ?? steer.everyOrigin;
    steer.allHealthy = granted.healthy.every((h) => h === true);
  }
  lease.instance = id;
  lease.valid = true;
  return true;
}

// A run of periodic work that has not reported back after this long was
// lost (the runtime cancels a waitUntil task some 30 s after its response):
// the next request starts another, or the isolate would never read the
// colo or probe again on the fast path.
export const WORK_LOST_MS = 35_000;
let workTakenAt = -Infinity;

// Whether the request at `now` should start the periodic work; if so, the
// work is taken (one run at a time) until `workDone` says when it is next
// due, or it is presumed lost.
export function takeWork(now) {
  const lost = lease.workDue === Infinity && now - workTakenAt >= WORK_LOST_MS;
  const due = now >= lease.workDue || (now >= lease.coloDue && isWaiting(instance.suspectMs, instance.timeoutMs, now));
  if (!due && !lost) return false;
  lease.workDue = Infinity;
  lease.coloDue = Infinity;
  workTakenAt = now;
  return true;
}

// `due`: when work is next due, as `periodic_work` resolves
// ({ workDue, coloDue }, ms), or RETRY_WORK after a failed run.
export function workDone(due) {
  if (lease.workDue !== Infinity) return;
  lease.workDue = due.workDue;
  lease.coloDue = due.coloDue;
}

export const RETRY_WORK = { workDue: 0, coloDue: 0 };

// `now`: the Date.now() of the answer's arrival (attemptThen's).
export function answered(origin, now) {
  evidence[origin] = now;
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
// client, is left to the full path, as are the status endpoint and every
// path under it (target::reserved_subpath: the admin API).
export function upstreamUrl(url) {
  const path = upstreamPath(url);
  return path === undefined ? undefined : lease.base + path;
}

// The path and query upstreamUrl appends to an origin's base (the same
// rules), for the steered path, which picks the base per request.
export function upstreamPath(url) {
  const scheme = url.indexOf("://");
  if (scheme < 0) return undefined;
  const start = url.indexOf("/", scheme + 3);
  if (start < 0 || url.includes("#", start)) return undefined;
  const sp = instance.statusPath;
  if (sp !== undefined && url.startsWith(sp, start)) {
    const end = start + sp.length;
    // It and every path under it, for every method: the Worker's own (the
    // status page, the admin API, a 405 for the rest).
    if (end === url.length || url[end] === "?" || url[end] === "/") return undefined;
  }
  return url.slice(start);
}
