// bench/js-count.sh: stands in for wasm-bindgen's index.js, so that the
// fast path (src/js/entry.mjs) runs without the Wasm. It answers the two
// calls the fast path makes before its first request, as the real ones
// would for two healthy origins: `fast_config` (under plain failover, or
// the policy in JS_COUNT_STEER) and `fast_lease` (nothing periodic due;
// colo reads allowed from 0 unless JS_COUNT_COLO=off, as Rust grants
// them). Anything else throws: a request that reaches the full path is
// not the fast path's cost, and the count stops there.
const state = { criticalError: false, instanceId: 0 };
export function __worker_init_state() {
  return state;
}
export function __wbg_reset_state() {}

const policy = process.env.JS_COUNT_STEER || undefined;
const NEVER = 18446744073709552000; // u64::MAX as f64: nothing due

export function fast_config() {
  return {
    names: ["primary", "replica"],
    bases: ["http://127.0.0.1:1", "http://127.0.0.1:2"],
    timeoutMs: 30000,
    statusPath: "/__status",
    silenceMs: 2000,
    replayMax: 65536,
    suspectMs: 250,
    steer:
      policy === undefined
        ? undefined
        : { policy, weights: [1, 1], access: [null, null], hashHeader: "x-user", hashCookie: undefined, affinity: "off", affinityFailover: "temporary", tokens: undefined, cookies: undefined },
  };
}

export function fast_lease() {
  return {
    origin: 0,
    workDue: NEVER,
    coloDue: process.env.JS_COUNT_COLO === "off" ? NEVER : 0,
    healthy: policy === undefined ? undefined : [true, true],
    intendable: undefined,
    failover: false,
  };
}

function fullPath() {
  throw new Error("bench/js-count: the request left the fast path");
}
export const fetch = fullPath;
export const fetch_after = fullPath;
export const periodic_work = fullPath;
export const hold_body = fullPath;
export const release_body = fullPath;
export const scheduled = fullPath;
export function warm_full_path() {
  return Promise.resolve();
}
export class HealthChecker {}
