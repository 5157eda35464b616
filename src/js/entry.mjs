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

function call(fn, ...args) {
  checkReinitialize();
  try {
    return fn(...args).catch(handleMaybeCritical);
  } catch (e) {
    return handleMaybeCritical(e);
  }
}

export default {
  fetch(request, env, ctx) {
    return call(wasm.fetch, request, env, ctx);
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
