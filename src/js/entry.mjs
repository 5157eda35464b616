// The Worker's module entry: a plain object whose handlers call the Rust
// (wasm-bindgen) exports directly. worker-build's generated entry is a
// WorkerEntrypoint class behind a Proxy, re-created per request, which
// `make bench` measured at 20-27 us of CPU per request (15% of the total);
// this does the same panic recovery with none of the per-request objects.
//
// Panic recovery, as worker-build's shim does it: a Rust panic aborts the
// Wasm instance (a WebAssembly.RuntimeError); the next call starts a fresh
// instance instead of failing forever. The health map is lost with it,
// which is why the Rust side is written not to panic.
import * as wasm from "./index.js";
import { attempt_js, served_by_js } from "./attempt.mjs";
import { answered, grant, lease, upstreamUrl } from "./lease.mjs";

const initState = wasm.__worker_init_state();

function checkReinitialize() {
  if (initState.criticalError) {
    console.log("Reinitializing Wasm application");
    wasm.__wbg_reset_state();
    initState.criticalError = false;
    initState.instanceId++;
  }
}

function handleMaybeCritical(e) {
  if (e instanceof WebAssembly.RuntimeError) {
    console.error("Critical", e);
    initState.criticalError = true;
  }
  throw e;
}

addEventListener("error", (e) => {
  if (e.error instanceof WebAssembly.RuntimeError) initState.criticalError = true;
});

// A synchronous Rust call.
function guard(fn, ...args) {
  try {
    return fn(...args);
  } catch (e) {
    return handleMaybeCritical(e);
  }
}

// An asynchronous Rust call: its rejection may be a trap too.
function call(fn, ...args) {
  checkReinitialize();
  try {
    return fn(...args).catch(handleMaybeCritical);
  } catch (e) {
    return handleMaybeCritical(e);
  }
}

// The fast path. Most requests need exactly one attempt, to the origin Rust
// chose: while Rust's lease on that choice holds (src/fast.rs, lease.mjs),
// the attempt is made here without entering Wasm, and only a failure goes
// back into Rust's full path (fetch_after), which records it and walks on
// over the origins. Everything else (bodies, the status endpoint, due
// probes and shared-health reads, no healthy origin) takes the full path
// from the start. `make bench` measured each step of this.
function fastFetch(request, env, ctx) {
  if (request.body !== null) return call(wasm.fetch, request, env, ctx);
  // A lease dies with the Wasm instance that granted it: besides the reset
  // in checkReinitialize, wasm-bindgen's glue starts a new instance by
  // itself after a trap no panic hook saw; every new instance bumps
  // instanceId.
  const expired = Date.now() >= lease.until || lease.instance !== initState.instanceId;
  if (expired && !grant(guard(wasm.fast_lease, env), initState.instanceId)) {
    return call(wasm.fetch, request, env, ctx);
  }
  const url = upstreamUrl(request.url, request.method);
  if (url === undefined) return call(wasm.fetch, request, env, ctx);
  const { origin, name } = lease;
  return attempt_js(url, request.method, request.headers, undefined, undefined, lease.timeoutMs).then((result) => {
    if (typeof result === "object" && result.status < 500) {
      answered(origin);
      return served_by_js(result, name, origin !== 0);
    }
    return call(wasm.fetch_after, request, env, ctx, origin, result);
  });
}

export default {
  fetch(request, env, ctx) {
    checkReinitialize();
    try {
      return fastFetch(request, env, ctx);
    } catch (e) {
      return handleMaybeCritical(e);
    }
  },
  scheduled(event, env, ctx) {
    return call(wasm.scheduled, event, env, ctx);
  },
};

// The global health checker (a Durable Object). Its Rust object belongs to
// one Wasm instance; after a reset it is rebuilt from the same state.
export class HealthChecker {
  constructor(state, env) {
    this.state = state;
    this.env = env;
    this.instanceId = -1;
  }
  current() {
    checkReinitialize();
    if (this.instanceId !== initState.instanceId) {
      this.inner = new wasm.HealthChecker(this.state, this.env);
      this.instanceId = initState.instanceId;
    }
    return this.inner;
  }
  fetch(request) {
    return call((r) => this.current().fetch(r), request);
  }
  alarm() {
    return call(() => this.current().alarm());
  }
}
