// Floor 2 of `make bench`: floor 1 (floor-bare.mjs) plus the work the mission
// cannot skip even when every origin is healthy, done the way the product's
// fast path does it in src/js/attempt.mjs:
// - the attempt timeout: a timer raced against the fetch, cleared once the
//   origin answers, a late answer's body cancelled (`attempt_js`);
// - a 5xx or a failed fetch is not an answer (the product would fail over;
//   with one origin this answers 502);
// - the re-wrap that makes the headers mutable, and X-Served-By
//   (`served_by_js`).
// What it leaves out is what the product adds on top: health, the lease,
// steering, affinity, failover. Bench-only, no dependencies; bindings:
// ORIGIN (scheme://authority), ORIGIN_NAME, ATTEMPT_TIMEOUT_MS.

// What the race resolves to when the timer wins (attempt_js's 0).
const TIMED_OUT = 0;

// Parsed once per isolate, as the product's lease carries it ready to use.
let timeoutMs;

function attempt(url, request) {
  const init = { method: request.method, redirect: "manual", headers: request.headers };
  if (request.body !== null) init.body = request.body;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (result) => {
      if (settled) return false;
      settled = true;
      resolve(result);
      return true;
    };
    const timer = setTimeout(settle, timeoutMs, TIMED_OUT);
    fetch(url, init).then(
      (res) => {
        clearTimeout(timer);
        if (!settle(res) && res.body !== null) res.body.cancel().catch(() => {});
      },
      (err) => {
        clearTimeout(timer);
        settle(err);
      },
    );
  });
}

export default {
  fetch(request, env) {
    timeoutMs ??= Number(env.ATTEMPT_TIMEOUT_MS);
    const url = request.url;
    const path = url.indexOf("/", url.indexOf("://") + 3);
    return attempt(env.ORIGIN + url.slice(path), request).then((res) => {
      if (res instanceof Response && res.status < 500) {
        const out = new Response(res.body, res);
        out.headers.set("X-Served-By", env.ORIGIN_NAME);
        return out;
      }
      return new Response("origin failed\n", { status: 502 });
    });
  },
};
