// SILENCE_MS: an origin with an attempt outstanding for longer than this,
// that has answered no one since that attempt began, is skipped by new
// requests (as if down) without waiting for the attempt timeout; its first
// answer ends that; with no other origin up, it is still tried. The same
// definition (src/js/silence.mjs) serves the fast path (GETs) and the full
// path (POSTs with a body).
import { test } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { originsVar, sleep, startWorker } from "./support/worker.mjs";

async function setup(t, names, vars = {}) {
  const origins = [];
  for (const name of names) origins.push(await startOrigin(name));
  const worker = await startWorker({
    ORIGINS: originsVar(...origins),
    ATTEMPT_TIMEOUT_MS: "4000",
    SILENCE_MS: "300",
    COLO_HEALTH: "off",
    ...vars,
  });
  t.after(async () => {
    await worker.dispose();
    for (const o of origins) await o.stop();
  });
  return { worker, origins };
}

const settle = (p) => p.then(async (res) => ({ status: res.status, by: res.headers.get("x-served-by"), failover: res.headers.get("x-failover"), text: await res.text(), at: Date.now() }));

test("requests after SILENCE_MS go to the replica at once; the primary's answer ends silence", async (t) => {
  const { worker, origins } = await setup(t, ["primary", "replica"]);
  const [primary] = origins;
  primary.delayMs = 1500;
  const started = Date.now();
  const first = settle(worker.fetch("/slow"));
  await sleep(500);
  // Silent now: a GET (fast path) and a POST (full path) skip it.
  const get = await settle(worker.fetch("/get"));
  const post = await settle(worker.fetch("/post", { method: "POST", body: "x" }));
  const slow = await first;
  for (const r of [get, post]) {
    assert.equal(r.status, 200);
    assert.equal(r.by, "replica");
    assert.equal(r.failover, "replica");
    // Not a speed claim: they were answered while the primary still held
    // the first request (it answers 1.5 s after it came).
    assert.ok(r.at < slow.at, "answered before the silent primary answered anyone");
  }
  assert.equal(slow.by, "primary", "the slow answer was in time: no failover for it");
  assert.ok(slow.at - started < 4000);
  // The primary answered: silence is over, and it was never marked down.
  primary.delayMs = 0;
  const after = await settle(worker.fetch("/after"));
  assert.equal(after.by, "primary");
  assert.equal(after.failover, null);
  assert.deepEqual(
    worker.events("health").filter((e) => e.to === "down"),
    [],
    "silence is a hint, not a verdict",
  );
});

test("SILENCE_MS=0 turns it off: requests wait on the slow primary", async (t) => {
  const { worker, origins } = await setup(t, ["primary", "replica"], { SILENCE_MS: "0" });
  origins[0].delayMs = 1000;
  const first = settle(worker.fetch("/slow"));
  await sleep(400);
  const second = await settle(worker.fetch("/second"));
  await first;
  assert.equal(second.by, "primary");
});

test("with no other origin up, a silent origin is still tried", async (t) => {
  const { worker, origins } = await setup(t, ["primary"]);
  origins[0].delayMs = 1200;
  const first = settle(worker.fetch("/slow"));
  await sleep(500);
  const second = await settle(worker.fetch("/second"));
  await first;
  assert.equal(second.status, 200);
  assert.equal(second.by, "primary");
});

test("a bad SILENCE_MS answers 500 naming it", async (t) => {
  for (const value of ["50", "60001", "soon"]) {
    const { worker } = await setup(t, ["primary"], { SILENCE_MS: value });
    const res = await worker.fetch("/");
    assert.equal(res.status, 500);
    assert.match(await res.text(), /SILENCE_MS/);
  }
});

// The rule itself, on a simulated clock (silence.mjs has no timers of its
// own): an attempt counts from the moment it is recorded, and one still on
// the list past the attempt timeout (plus a margin) has lost its end and
// never counts again.
test("silence.mjs: an attempt outstanding past the attempt timeout never counts (a client that vanished)", async () => {
  const { attemptStarted, attemptEnded, isSilent, LOST_AFTER_TIMEOUT_MS } = await import("../src/js/silence.mjs");
  const origin = 7; // not an index any other test's Worker uses in this process
  const timeoutMs = 1000;
  const started = attemptStarted(origin, 10_000);
  assert.equal(isSilent(origin, 300, timeoutMs, 10_200), false, "not yet SILENCE_MS");
  assert.equal(isSilent(origin, 300, timeoutMs, 10_400), true, "outstanding past SILENCE_MS, nothing heard");
  assert.equal(isSilent(origin, 300, timeoutMs, 10_000 + timeoutMs + LOST_AFTER_TIMEOUT_MS), true);
  assert.equal(isSilent(origin, 300, timeoutMs, 10_001 + timeoutMs + LOST_AFTER_TIMEOUT_MS), false, "its end was lost: it no longer counts");
  attemptEnded(origin, started, false, 20_000); // a late end of a let-go attempt is harmless
  assert.equal(isSilent(origin, 300, timeoutMs, 20_001), false);
  // A fresh attempt counts again from its own start.
  attemptStarted(origin, 30_000);
  assert.equal(isSilent(origin, 300, timeoutMs, 30_400), true);
});

// The whole rule as a table, on a simulated clock: each row is a script of
// events on one origin and the answer at the end. SILENCE_MS 300, attempt
// timeout 1000 (+ LOST_AFTER_TIMEOUT_MS: an end lost for good).
test("silence.mjs: the rule, row by row", async () => {
  const { attemptStarted, attemptEnded, heard, isSilent } = await import("../src/js/silence.mjs");
  const rows = [
    // [what, events, now, silenceMs, expected]
    ["off", [["start", 0]], 5_000, 0, false],
    ["nothing outstanding", [], 5_000, 300, false],
    ["outstanding, not yet SILENCE_MS", [["start", 0]], 300, 300, false],
    ["outstanding past SILENCE_MS, nothing heard", [["start", 0]], 301, 300, true],
    ["ended with an answer", [["start", 0], ["end", 0, true, 200]], 900, 300, false],
    ["ended without one (timed out)", [["start", 0], ["end", 0, false, 1_000]], 1_100, 300, false],
    ["heard from since the oldest began (another request's answer)", [["start", 0], ["heard", 100]], 900, 300, false],
    ["heard from only before it began", [["heard", 0], ["start", 10]], 900, 300, true],
    ["a late answer after its timeout ends the silence", [["start", 0], ["start", 500], ["heard", 600]], 900, 300, false],
    ["the oldest ended, the next is young", [["start", 0], ["start", 700], ["end", 0, false, 800]], 900, 300, false],
    ["the oldest ended, the next is old too", [["start", 0], ["start", 100], ["end", 0, false, 800]], 900, 300, true],
    ["an end lost past timeout + margin no longer counts", [["start", 0]], 2_001, 300, false],
  ];
  rows.forEach(([what, events, now, silenceMs, expected], i) => {
    const origin = 1_000 + i; // state is per origin index; these are the table's own
    for (const [kind, at, answered, endAt] of events) {
      if (kind === "start") attemptStarted(origin, at);
      else if (kind === "end") attemptEnded(origin, at, answered, endAt);
      else heard(origin, at);
    }
    assert.equal(isSilent(origin, silenceMs, 1_000, now), expected, what);
  });
});

// isWaiting (a colo read is worth it: edge::Isolate::colo_read_wanted) as
// a table on the same simulated clock: any origin with an attempt
// outstanding for forMs (250) or longer, answers to others or not; attempt
// timeout 1000. Each row runs a million ms after the last, so every
// earlier row's attempts are lost by then and count for nothing.
test("silence.mjs: isWaiting, row by row", async () => {
  const { attemptStarted, attemptEnded, heard, isWaiting } = await import("../src/js/silence.mjs");
  const rows = [
    // [what, events (origin offset, kind, at...), now, expected]
    ["nothing outstanding", [], 0, false],
    ["outstanding, not yet forMs", [[0, "start", 0]], 249, false],
    ["outstanding forMs", [[0, "start", 0]], 250, true],
    ["ended with an answer", [[0, "start", 0], [0, "end", 0, true, 100]], 500, false],
    ["ended without one (timed out)", [[0, "start", 0], [0, "end", 0, false, 1_000]], 1_100, false],
    ["answered someone else since, still outstanding", [[0, "start", 0], [0, "heard", 100]], 300, true],
    ["on another origin", [[1, "start", 0]], 300, true],
    ["an end lost past timeout + margin no longer counts", [[0, "start", 0]], 2_001, false],
  ];
  rows.forEach(([what, events, now, expected], i) => {
    const base = 1_000_000_000 + i * 1_000_000;
    const origin = 2_000 + 2 * i; // this table's own, two per row
    for (const [offset, kind, at, answered, endAt] of events) {
      if (kind === "start") attemptStarted(origin + offset, base + at);
      else if (kind === "end") attemptEnded(origin + offset, base + at, answered, base + endAt);
      else heard(origin + offset, base + at);
    }
    assert.equal(isWaiting(250, 1_000, base + now), expected, what);
  });
});
