// One failover measurement against one Worker: requests go out one after
// another; between two of them the primary origin is killed (SIGKILL) or
// made to hang (SIGSTOP: the kernel still accepts connections, nobody
// answers). Prints one JSON line: how long after the fault the first good
// response arrived, and how many requests failed on the way.
//
//   node bench/failover.mjs --url http://127.0.0.1:PORT/2k.bin --pid PID \
//        --fault kill|hang [--before-ms 300] [--window-ms 3000] [--timeout-ms 5000]

import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    url: { type: "string" },
    pid: { type: "string" },
    fault: { type: "string" },
    "before-ms": { type: "string", default: "300" },
    "window-ms": { type: "string", default: "3000" },
    "timeout-ms": { type: "string", default: "5000" },
  },
});
const beforeMs = Number(opt["before-ms"]);
const windowMs = Number(opt["window-ms"]);
const timeoutMs = Number(opt["timeout-ms"]);
const signal = { kill: "SIGKILL", hang: "SIGSTOP" }[opt.fault];
if (!opt.url || !opt.pid || !signal) {
  console.error("usage: failover.mjs --url URL --pid PID --fault kill|hang");
  process.exit(2);
}

async function once(timeout) {
  const start = performance.now();
  try {
    const res = await fetch(opt.url, { signal: AbortSignal.timeout(Math.max(1, Math.ceil(timeout))) });
    await res.arrayBuffer();
    return { start, end: performance.now(), status: res.status, servedBy: res.headers.get("x-served-by") };
  } catch (e) {
    return { start, end: performance.now(), status: 0, error: e.name === "TimeoutError" ? "client timeout" : e.message };
  }
}

const ok = (r) => r.status >= 200 && r.status < 300;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const before = [];
const began = performance.now();
while (performance.now() - began < beforeMs) before.push(await once(timeoutMs));

// Between two requests, so no request of ours is in flight at the fault.
const faultAt = performance.now();
process.kill(Number(opt.pid), signal);

// New requests start until the window closes; each may take the full
// client timeout (a shorter one would count as a failure of the Worker).
const after = [];
while (performance.now() - faultAt < windowMs) {
  const r = await once(timeoutMs);
  after.push(r);
  // A client that gets an error straight back should not spin.
  if (!ok(r)) await sleep(2);
}

const firstGood = after.find(ok);
const rel = (t) => Math.round((t - faultAt) * 10) / 10;
const show = (r) => ({
  start_ms: rel(r.start),
  end_ms: rel(r.end),
  status: r.status,
  served_by: r.servedBy ?? null,
  ...(r.error ? { error: r.error } : {}),
});
console.log(
  JSON.stringify({
    fault: opt.fault,
    before: { requests: before.length, ok: before.filter(ok).length, served_by: [...new Set(before.map((r) => r.servedBy))] },
    window_ms: windowMs,
    // null: no good response within the window.
    first_good_ms: firstGood ? rel(firstGood.end) : null,
    first_good_served_by: firstGood?.servedBy ?? null,
    requests_after_fault: after.length,
    failed_after_fault: after.filter((r) => !ok(r)).length,
    timeline: after.slice(0, 6).map(show),
    failures: after.filter((r) => !ok(r)).slice(0, 5).map(show),
  }),
);
