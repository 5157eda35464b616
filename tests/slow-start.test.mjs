// Slow start end to end: the built Worker in Miniflare in front of two real
// origins. The primary fails, comes back (two good probes), and for the
// first 15 s of its 60 s ramp the test sends requests, half of them pinned
// to the primary by the affinity cookie. The primary's share of the
// unpinned ones is measured and printed (expected about 15 %: 10 % until
// 6 s, then rising to 25 %), and must stay at most 35 %; pinned ones all
// go to it. The Worker's Math.random is a seeded generator (a preamble;
// the built Worker is unchanged), so its draws are the same on every run;
// the request times are the machine's, so the figures vary a little.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, originsVar, eventually, sleep } from "./support/worker.mjs";

const TOKEN = "slow-start-status-token";
const SEEDED = `let seed = 20260801;
Math.random = () => {
  seed = (seed * 16807) % 2147483647;
  return (seed - 1) / 2147483646;
};`;

async function primaryView(worker) {
  const res = await worker.fetch("/__failover/status", { headers: { authorization: `Bearer ${TOKEN}` } });
  const doc = await res.json();
  return doc.origins[0];
}

// Fails the primary, brings it back, and sends requests (with `pinned`,
// every other one carrying the primary's affinity cookie) for `seconds`
// from the fail-back; returns what each got, and the fail-back's time.
async function ramp({ affinity, seconds }) {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker(
    {
      ORIGINS: originsVar(primary, replica),
      SLOW_START_S: 60,
      SLOW_START_MIN_PCT: 10,
      HEALTH_INTERVAL_MS: 250,
      HEALTH_RISE: 2,
      AFFINITY: affinity ? "cookie" : "off",
      STATUS_TOKEN: TOKEN,
    },
    { preamble: SEEDED },
  );
  try {
    let pin;
    if (affinity) {
      const first = await worker.fetch("/");
      assert.equal(first.headers.get("x-served-by"), "primary");
      pin = first.headers
        .getSetCookie()
        .map((c) => c.split(";")[0])
        .find((c) => c.startsWith("__tf_affinity="));
      assert.ok(pin, "the Worker pinned the client to the primary");
      await first.arrayBuffer();
    }
    primary.mode = 530;
    const over = await worker.fetch("/");
    assert.equal(over.headers.get("x-served-by"), "replica");
    await over.arrayBuffer();
    primary.mode = "ok";
    // Requests drive the probes (periodic work runs beside them).
    const back = await eventually(
      async () => {
        const res = await worker.fetch("/");
        await res.arrayBuffer();
        const view = await primaryView(worker);
        return view.state === "up" ? view : null;
      },
      { timeoutMs: 15_000, everyMs: 20 },
    );
    const t0 = back.local.since_ms;
    assert.ok(t0 > 0, JSON.stringify(back));
    assert.equal(back.slow_start_pct, 10, "the status shows the ramp");
    const seen = [];
    while (Date.now() < t0 + seconds * 1000) {
      for (const pinned of affinity ? [false, true] : [false]) {
        const at = Date.now();
        const res = await worker.fetch("/", { headers: pinned ? { cookie: pin } : {} });
        assert.equal(res.status, 200);
        seen.push({ at, pinned, by: res.headers.get("x-served-by"), failover: res.headers.get("x-failover") });
        await res.arrayBuffer();
      }
      await sleep(5);
    }
    const later = await primaryView(worker);
    return { t0, later, seen: seen.filter((r) => r.at >= t0 && r.at < t0 + seconds * 1000) };
  } finally {
    await worker.dispose();
    await primary.stop();
    await replica.stop();
  }
}

const share = (rows) => rows.filter((r) => r.by === "primary").length / rows.length;

test("after a fail-back the primary gets at most 35 % of unpinned requests in the first 15 s; pinned ones are not ramped", async () => {
  const { t0, later, seen } = await ramp({ affinity: true, seconds: 15 });
  const unpinned = seen.filter((r) => !r.pinned);
  const pinned = seen.filter((r) => r.pinned);
  const buckets = [0, 5, 10].map((s) => {
    const rows = unpinned.filter((r) => r.at >= t0 + s * 1000 && r.at < t0 + (s + 5) * 1000);
    return `${s}-${s + 5} s ${(share(rows) * 100).toFixed(1)} % of ${rows.length}`;
  });
  console.log(
    `slow start, first 15 s after the fail-back: primary got ${(share(unpinned) * 100).toFixed(1)} % of ${unpinned.length} unpinned requests (${buckets.join(", ")}); ${(share(pinned) * 100).toFixed(1)} % of ${pinned.length} pinned`,
  );
  assert.ok(unpinned.length >= 100, `only ${unpinned.length} requests in 15 s`);
  assert.ok(share(unpinned) <= 0.35, `the primary got ${share(unpinned)} of unpinned requests`);
  assert.ok(share(unpinned) > 0, "the primary got some: a ramp, not a block");
  assert.equal(share(pinned), 1, "pinned requests are not ramped");
  // Held back is not failed over: the replica was meant for those.
  assert.ok(unpinned.every((r) => r.failover === null), "no x-failover on a held-back request");
  // The status page's view: the ramp's share now (about 25 % at 15 s).
  assert.ok(later.slow_start_pct >= 25 && later.slow_start_pct < 100, JSON.stringify(later));
});

test("plain failover (the fast path's simplest form) is ramped the same way", async () => {
  const { seen } = await ramp({ affinity: false, seconds: 5 });
  console.log(`slow start, plain failover, first 5 s: primary got ${(share(seen) * 100).toFixed(1)} % of ${seen.length} requests`);
  assert.ok(seen.length >= 30, `only ${seen.length} requests in 5 s`);
  assert.ok(share(seen) <= 0.35, `the primary got ${share(seen)}`);
});

test("with SLOW_START_S unset, a fail-back takes all of the primary's requests at once", async () => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker(
    { ORIGINS: originsVar(primary, replica), HEALTH_INTERVAL_MS: 250, HEALTH_RISE: 2, STATUS_TOKEN: TOKEN },
    { preamble: SEEDED },
  );
  try {
    primary.mode = 530;
    await (await worker.fetch("/")).arrayBuffer();
    primary.mode = "ok";
    await eventually(
      async () => {
        await (await worker.fetch("/")).arrayBuffer();
        return (await primaryView(worker)).state === "up";
      },
      { timeoutMs: 15_000, everyMs: 20 },
    );
    assert.equal((await primaryView(worker)).slow_start_pct, null);
    for (let i = 0; i < 50; i++) {
      const res = await worker.fetch("/");
      assert.equal(res.headers.get("x-served-by"), "primary");
      await res.arrayBuffer();
    }
  } finally {
    await worker.dispose();
    await primary.stop();
    await replica.stop();
  }
});

// Overrides and slow start together (the global checker stores overrides):
// a forced-up origin is not ramped, and back to auto within the window the
// ramp from its up verdict goes on. SLOW_START_MIN_PCT 0: in the first
// seconds the primary gets a few percent of its requests.
test("an origin forced up during its ramp gets all of its requests; back to auto, the ramp goes on", async () => {
  const ADMIN = "slow-start-admin-token";
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker(
    {
      ORIGINS: originsVar(primary, replica),
      SLOW_START_S: 60,
      SLOW_START_MIN_PCT: 0,
      HEALTH_INTERVAL_MS: 250,
      HEALTH_RISE: 2,
      STATUS_TOKEN: TOKEN,
      ADMIN_TOKEN: ADMIN,
    },
    { preamble: SEEDED, durableObjects: { HEALTH_CHECKER: "HealthChecker" } },
  );
  const set = async (mode) => {
    const res = await worker.fetch("/__failover/status/origins/primary", {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ mode }),
    });
    assert.equal(res.status, 200, await res.text());
  };
  const spread = async (n) => {
    const served = { primary: 0, replica: 0, failover: 0 };
    for (let i = 0; i < n; i++) {
      const res = await worker.fetch("/");
      assert.equal(res.status, 200);
      served[res.headers.get("x-served-by")]++;
      if (res.headers.get("x-failover") !== null) served.failover++;
      await res.arrayBuffer();
    }
    return served;
  };
  try {
    primary.mode = 530;
    await (await worker.fetch("/")).arrayBuffer();
    primary.mode = "ok";
    await eventually(
      async () => {
        await (await worker.fetch("/")).arrayBuffer();
        const view = await primaryView(worker);
        return view.state === "up" && view.slow_start_pct !== null;
      },
      { timeoutMs: 15_000, everyMs: 20 },
    );
    const ramping = await spread(40);
    console.log(`slow start with overrides: ramping ${JSON.stringify(ramping)}`);
    assert.ok(ramping.primary < 30, `ramping: ${JSON.stringify(ramping)}`);
    await set("force-up");
    assert.deepEqual(await spread(20), { primary: 20, replica: 0, failover: 0 }, "forced up: not ramped");
    assert.equal((await primaryView(worker)).slow_start_pct, null, "the status shows no ramp");
    await set("auto");
    const again = await spread(40);
    console.log(`slow start with overrides: back to auto ${JSON.stringify(again)}`);
    assert.ok(again.primary < 30, `back to auto: ${JSON.stringify(again)}`);
    assert.notEqual((await primaryView(worker)).slow_start_pct, null, "ramping again");
  } finally {
    await worker.dispose();
    await primary.stop();
    await replica.stop();
  }
});
