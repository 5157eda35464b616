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
import { attemptThen, forward_headers, hasLocation, relocate, tagged } from "./attempt.mjs";
import { answered, configure, grant, instance, lease, RETRY_WORK, takeWork, upstreamPath, workDone } from "./lease.mjs";
import { route, setsCookieFor } from "./route.mjs";
import { bufferedLength } from "./body.mjs";
import { carriesToken } from "./credentials.mjs";
import { siteOf } from "./sites.mjs";
import { isAnswer } from "./rules.mjs";
import { isSilent } from "./silence.mjs";
import { hashKeyIn, HASH } from "./steer.mjs";
import { provideOperator } from "./operator.mjs";
// The operator module (src/operator/): its glue instantiates nothing at
// load; `operator()` below does, on first use.
import operatorWasm from "./operator_bg.wasm";
import * as operatorGlue from "./operator/operator.js";

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

// The operator module, instantiated on first use: by the global checker's
// Durable Object, or in an isolate by the first status page asked for as
// HTML or text. An isolate that only serves requests never instantiates
// it. It recovers from a panic as the request path does, on its own init
// state (the worker crate's, in its own copy of that crate's JS; the
// request path's is src/runtime.rs's, of the same shape), so a panic in
// one module never resets the other.
let operatorState = null;

function operator() {
  if (operatorState === null) {
    operatorGlue.initSync({ module: operatorWasm });
    operatorState = operatorGlue.__worker_init_state();
  } else if (operatorState.criticalError) {
    console.log("Reinitializing the operator module");
    operatorGlue.__wbg_reset_state();
    operatorState.criticalError = false;
    operatorState.instanceId++;
  }
  return operatorGlue;
}

provideOperator(operator);

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
// over the origins. A small body (body.mjs) is read into a buffer here,
// its bytes held on Rust's replay budget, so that a failed attempt's
// replay can resend it. The status endpoint, large or chunked bodies and a
// map with no healthy origin take the full path from the start; periodic
// work (probes, colo reads, consultations) runs beside a request in the
// background. `make bench` and `make bench-cost` measured each step of
// this.
function fastFetch(request, env, ctx) {
  // A lease dies with the Wasm instance that granted it: besides the reset
  // in checkReinitialize, wasm-bindgen's glue starts a new instance by
  // itself after a trap no panic hook saw; every new instance bumps
  // instanceId.
  const now = Date.now();
  const id = initState.instanceId;
  if (!lease.valid || lease.instance !== id) {
    if (instance.id !== id) {
      // Once per Wasm instance: what never changes while it lives.
      if (!configure(guard(wasm.fast_config, env), id)) return call(wasm.fetch, request, env, ctx);
      // After this request's attempt is on its way (the next task): the
      // full path's code runs once, so the first failover is not its
      // first run (src/warm.rs).
      ctx.waitUntil(new Promise((r) => setTimeout(r, 0)).then(() => call(wasm.warm_full_path, env)));
    }
    if (!grant(guard(wasm.fast_lease, env), id)) return call(wasm.fetch, request, env, ctx);
  }
  // Everything that may send the request to the full path is decided
  // before a body is read: once read, only fetch_after can take it. Each
  // getter of a Request is a call into the runtime: read once.
  const url = request.url;
  const method = request.method;
  // TRACE is never forwarded (the full path answers 405, src/proxy.rs).
  if (method === "TRACE") return call(wasm.fetch, request, env, ctx);
  const headers = request.headers;
  // The Worker's own token in Authorization (credentials.mjs, Rust's
  // twin): the full path keeps it from the origin (src/proxy.rs). An app's
  // own credentials stay here.
  if (instance.tokens !== undefined) {
    const authorization = headers.get("authorization");
    if (authorization !== null && carriesToken(authorization, instance.tokens)) return call(wasm.fetch, request, env, ctx);
  }
  const bytes = request.body === null ? 0 : bufferedLength(method, headers.get("content-length"), instance.replayMax);
  // The request's site by its host when sites name their hosts (sites.mjs):
  // a host no site claims is the full path's (421).
  const site = instance.hosts === undefined ? 0 : siteOf(url, instance.hosts);
  const target =
    bytes === undefined || site < 0
      ? undefined
      : instance.steer !== undefined
        ? steeredTarget(headers, url, method, instance.steer, now)
        : lease.origins !== undefined
          ? siteTarget(headers, url, method, site, now)
          : plainTarget(headers, url, method, now);
  let sent;
  if (target === undefined) sent = call(wasm.fetch, request, env, ctx);
  else if (bytes === 0) sent = attempt(request, env, ctx, target, undefined, now);
  else sent = attemptWithBody(request, env, ctx, target, bytes);
  // Periodic work due (a colo read, a consultation, a probe): beside this
  // request, never before it (src/periodic.rs).
  if (takeWork(now)) ctx.waitUntil(call(wasm.periodic_work, env, ctx, url).then(workDone, () => workDone(RETRY_WORK)));
  return sent;
}

// The fast path under plain failover: every request to the lease's origin.
// Where it goes (undefined: the full path's).
function plainTarget(clientHeaders, url, method, now) {
  // lease.mjs `upstreamUrl`, one call fewer.
  const path = upstreamPath(url);
  if (path === undefined) return undefined;
  const origin = lease.origin;
  // A silent origin (silence.mjs): the full path routes around it.
  if (isSilent(origin, instance.silenceMs, instance.timeoutMs, now)) return undefined;
  const headers = forward_headers(clientHeaders, url, undefined, undefined);
  return { url: lease.base + path, method, secure: false, headers, origin, name: lease.name, failedOver: lease.failover, plan: undefined, random: NaN };
}

// The fast path with several sites (SITES): the request's site (found by
// its host, sites.mjs), then that site's part of the lease, as plainTarget
// under one site. A site that steers each request and one with no origin
// to send to are the full path's.
function siteTarget(clientHeaders, url, method, site, now) {
  const origin = lease.origins[site];
  if (origin < 0) {
    // None for now (every origin down, a ramp): ask Rust again next time.
    if (origin === -1) lease.valid = false;
    return undefined;
  }
  const path = upstreamPath(url);
  if (path === undefined) return undefined;
  if (isSilent(origin, instance.silenceMs, instance.timeoutMs, now)) return undefined;
  const headers = forward_headers(clientHeaders, url, undefined, undefined);
  const failedOver = lease.failovers[site];
  return { url: instance.bases[origin] + path, method, secure: false, headers, origin, name: instance.names[origin], failedOver, plan: undefined, random: NaN };
}

// The fast path under a steering policy, affinity or an Access token: the
// request's route (route.mjs, Rust's twin) picks the origin, and the
// attempt carries that origin's service token. Still no Wasm call unless
// the attempt fails; Rust then walks on from the same route (the random
// number goes with it).
function steeredTarget(headers, url, method, steer, now) {
  const path = upstreamPath(url);
  if (path === undefined) return undefined;
  for (let i = 0; i < steer.names.length; i++) {
    if (isSilent(i, instance.silenceMs, instance.timeoutMs, now)) return undefined;
  }
  const key = steer.policy === HASH ? hashKeyIn(headers.get(steer.hashHeader), steer.hashCookie) : undefined;
  const cookies = steer.tokens === undefined ? null : headers.get("cookie");
  const random = Math.random();
  const plan = route(steer, key, cookies, random);
  const origin = plan.order[0];
  if (steer.healthy[origin] !== true) return undefined;
  // The origin's service token, if any, replaces any the client sent.
  const token = steer.access[origin];
  const sent = token === null ? forward_headers(headers, url) : forward_headers(headers, url, token.id, token.secret);
  const secure = url.startsWith("https:");
  return { url: steer.bases[origin] + path, method, secure, headers: sent, origin, name: steer.names[origin], failedOver: origin !== plan.intended, plan, random };
}

// The one attempt, then the client's answer, or the full path (with the
// body, if one was read) when the attempt did not succeed. `now`:
// fastFetch's Date.now() when the attempt starts in its task, else
// undefined (attemptThen).
function attempt(request, env, ctx, target, body, now) {
  const { origin } = target;
  return attemptThen(target.url, target.method, target.headers, body, instance.timeoutMs, origin, now, (result, ended) => {
    const status = typeof result === "object" ? result.status : 0;
    if (status !== 0 && answers(result, status)) {
      answered(origin, ended);
      const out = tagged(result, target.name, target.failedOver);
      if (hasLocation(status)) relocate(out.headers, target.url, request.url);
      const steer = instance.steer;
      if (target.plan !== undefined && steer.cookies !== undefined && setsCookieFor(target.plan, origin, steer.weights)) {
        out.headers.append("set-cookie", steer.cookies[origin] + (target.secure ? "; Secure" : ""));
      }
      return out;
    }
    return call(wasm.fetch_after, request, env, ctx, origin, result, target.random, body);
  });
}

// A request with a body small enough to replay (`bytes` long, body.mjs):
// its bytes are held on the isolate's replay budget (Rust's, so the status
// endpoint and the full path see them), read, sent, and given back once
// the attempts are over, whichever way they end. A body the budget cannot
// take now takes the full path, which streams it to one origin.
function attemptWithBody(request, env, ctx, target, bytes) {
  if (!guard(wasm.hold_body, env, bytes)) return call(wasm.fetch, request, env, ctx);
  // A hold taken in an instance that has since been replaced went with it.
  const id = initState.instanceId;
  const release = () => {
    if (initState.instanceId === id) guard(wasm.release_body, env, bytes);
  };
  return request.arrayBuffer().then(
    (body) => {
      let sent;
      try {
        sent = attempt(request, env, ctx, target, body, undefined);
      } catch (e) {
        release();
        throw e;
      }
      return sent.then(
        (res) => {
          release();
          return res;
        },
        (e) => {
          release();
          throw e;
        },
      );
    },
    // The client went away mid-upload: the full path answers as it
    // always has (the body cannot be read).
    () => {
      release();
      return call(wasm.fetch, request, env, ctx);
    },
  );
}

// The origin's answer for the client, or a failed attempt (rules.mjs, held
// to the same fixture as Rust's classify). Location is read only for the
// redirects an Access login uses.
function answers(res, s) {
  // A 101 is an answer only with the WebSocket it switched to: one without
  // cannot be re-wrapped (attempt.mjs `tagged`), and fails like a bad status.
  if (s === 101) return res.webSocket != null;
  return isAnswer(s, s === 302 || s === 303 || s === 307 ? res.headers.get("location") : null);
}

export default {
  fetch(request, env, ctx) {
    // checkReinitialize's own test, without the call when there is nothing to do.
    if (initState.criticalError) checkReinitialize();
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

// The global health checker (a Durable Object), in the operator module.
// Its Rust object belongs to one instance of that module; after a reset
// it is rebuilt from the same state.
export class HealthChecker {
  constructor(state, env) {
    this.state = state;
    this.env = env;
    this.instanceId = -1;
  }
  current() {
    const glue = operator();
    if (this.instanceId !== operatorState.instanceId) {
      this.inner = new glue.HealthChecker(this.state, this.env);
      this.instanceId = operatorState.instanceId;
    }
    return this.inner;
  }
  fetch(request) {
    return this.call((r) => this.current().fetch(r), request);
  }
  alarm() {
    return this.call(() => this.current().alarm());
  }
  // As `call`, but a trap marks the operator module's state.
  call(fn, ...args) {
    const trapped = (e) => {
      if (e instanceof WebAssembly.RuntimeError && operatorState !== null) operatorState.criticalError = true;
      throw e;
    };
    try {
      return fn(...args).catch(trapped);
    } catch (e) {
      return trapped(e);
    }
  }
}
