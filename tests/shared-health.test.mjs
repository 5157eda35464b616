// Health shared beyond one isolate: the colo cache and the global checker.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { COMPAT_DATE, startIsolates, originsVar, eventually, sleep } from "./support/worker.mjs";

const token = "t0ken";
async function status(isolates, name) {
  const res = await isolates.fetch(name, "/__failover/status", { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  return res.json();
}

async function twoIsolates(vars) {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const bindings = { ORIGINS: originsVar(primary, replica), STATUS_TOKEN: token, ATTEMPT_TIMEOUT_MS: "400", ...vars };
  const isolates = await startIsolates([
    { name: "a", bindings },
    { name: "b", bindings },
  ]);
  const close = async () => {
    await isolates.dispose();
    await primary.stop();
    await replica.stop();
  };
  return { primary, replica, isolates, close };
}

test("colo: one isolate's timeout spares the other isolates of the location", async () => {
  const { primary, isolates, close } = await twoIsolates({});
  try {
    primary.mode = "hang";
    const first = await isolates.fetch("a", "/page");
    assert.equal(first.headers.get("x-served-by"), "replica");
    await first.arrayBuffer();
    const hits = primary.hits("/page");
    assert.equal(hits, 1, "isolate a waited on the hanging primary once");
    // Isolate b never talked to the primary; the shared verdict is enough.
    await eventually(async () => (await status(isolates, "b")).origins[0].colo?.state === "down");
    const second = await isolates.fetch("b", "/page");
    assert.equal(second.headers.get("x-served-by"), "replica");
    await second.arrayBuffer();
    assert.equal(primary.hits("/page"), hits, "isolate b skipped the primary without a timeout");
    const doc = await status(isolates, "b");
    assert.deepEqual([doc.origins[0].local.state, doc.origins[0].local.decided_by], ["down", "colo"]);
  } finally {
    await close();
  }
});

test("colo off: each isolate finds the dead primary on its own (today's behaviour)", async () => {
  const { primary, isolates, close } = await twoIsolates({ COLO_HEALTH: "off" });
  try {
    primary.mode = "hang";
    await (await isolates.fetch("a", "/page")).arrayBuffer();
    await sleep(300);
    await (await isolates.fetch("b", "/page")).arrayBuffer();
    assert.equal(primary.hits("/page"), 2, "both isolates paid a timeout");
    assert.equal((await status(isolates, "b")).origins[0].colo, null);
  } finally {
    await close();
  }
});

test("colo: a live answer on the fast path beats an older shared down", async () => {
  const { primary, isolates, close } = await twoIsolates({});
  try {
    // Isolate a reads the colo (its first request takes the full path), then
    // has 250 ms before the next read, in which its requests go out on the
    // fast path's lease. If the machine is too slow to fit the steps in that
    // window, the scenario says so and runs again.
    for (let run = 1; ; run++) {
      await (await isolates.fetch("a", `/warm${run}`)).arrayBuffer();
      primary.mode = 530;
      const failed = await isolates.fetch("b", `/fail${run}`); // b marks it down and shares that
      assert.equal(failed.headers.get("x-served-by"), "replica");
      await failed.arrayBuffer();
      primary.mode = "ok";
      const live = await isolates.fetch("a", `/live${run}`); // answered after b's verdict
      await live.arrayBuffer();
      if (live.headers.get("x-served-by") !== "primary") {
        assert.ok(run < 3, "the colo read window was missed three times");
        await sleep(600);
        continue;
      }
      await sleep(400); // a's next request reads b's verdict
      const after = await isolates.fetch("a", `/after${run}`);
      await after.arrayBuffer();
      assert.equal(after.headers.get("x-served-by"), "primary", "the older shared down was not adopted");
      const doc = await status(isolates, "a");
      assert.equal(doc.origins[0].colo?.state, "down", "a did read the shared verdict");
      assert.equal(doc.origins[0].local.state, "up");
      break;
    }
  } finally {
    await close();
  }
});

test("colo: a recovered primary is shared too", async () => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const base = { ORIGINS: originsVar(primary, replica), STATUS_TOKEN: token, ATTEMPT_TIMEOUT_MS: "400", HEALTH_RISE: "2" };
  // Isolate b probes so rarely that only isolate a's verdict can bring the
  // primary back for it within the test. a's verdict lives in the cache for
  // two of its intervals (here 2 s): b, reading every 250 ms beside its
  // requests, has that long to see it even on a loaded machine.
  const isolates = await startIsolates([
    { name: "a", bindings: { ...base, HEALTH_INTERVAL_MS: "1000" } },
    { name: "b", bindings: { ...base, HEALTH_INTERVAL_MS: "60000" } },
  ]);
  try {
    primary.mode = 530;
    await (await isolates.fetch("a", "/")).arrayBuffer();
    await eventually(async () => (await status(isolates, "b")).origins[0].local.state === "down");
    primary.mode = "ok";
    await eventually(async () => {
      const res = await isolates.fetch("a", "/");
      await res.arrayBuffer();
      return res.headers.get("x-served-by") === "primary";
    });
    await eventually(async () => {
      const res = await isolates.fetch("b", "/");
      await res.arrayBuffer();
      return res.headers.get("x-served-by") === "primary";
    });
    const doc = await status(isolates, "b");
    assert.deepEqual([doc.origins[0].local.state, doc.origins[0].local.decided_by], ["up", "colo"]);
  } finally {
    await isolates.dispose();
    await primary.stop();
    await replica.stop();
  }
});

const checker = { HEALTH_CHECKER: "HealthChecker" };

test("global: the checker flips an origin after HEALTH_FALL failed probes and isolates adopt it", async () => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const bindings = {
    ORIGINS: originsVar(primary, replica),
    STATUS_TOKEN: token,
    HEALTH_INTERVAL_MS: "200",
    HEALTH_RISE: "2",
    HEALTH_FALL: "3",
    COLO_HEALTH: "off",
  };
  const isolates = await startIsolates([{ name: "a", bindings, durableObjects: checker }]);
  try {
    // The cron tick starts the checker with no client traffic at all.
    const worker = await isolates.mf.getWorker("a");
    await worker.scheduled({ cron: "* * * * *" });
    await eventually(() => primary.hits("/health") >= 2);
    primary.mode = 503;
    const downAt = primary.hits("/health");
    // Requests consult the checker in the background; its verdict arrives.
    await eventually(async () => {
      const res = await isolates.fetch("a", "/__failover/status", { headers: { authorization: `Bearer ${token}` } });
      return (await res.json()).origins[0].global?.state === "down";
    });
    const doc = await status(isolates, "a");
    // The checker flipped on its third failed probe, not before.
    const failedProbes = primary.requests.filter((r) => r.path === "/health").slice(downAt);
    assert.ok(failedProbes.length >= 3, `failed probes: ${failedProbes.length}`);
    assert.ok(
      doc.origins[0].global.since_ms >= failedProbes[2].at - 5,
      `flipped at ${doc.origins[0].global.since_ms}, third failed probe at ${failedProbes[2].at}`,
    );
    assert.deepEqual([doc.origins[0].local.state, doc.origins[0].local.decided_by], ["down", "global"], "adopted without the isolate ever failing a request");
    const pagesBefore = primary.hits("/page");
    const res = await isolates.fetch("a", "/page");
    assert.equal(res.headers.get("x-served-by"), "replica");
    await res.arrayBuffer();
    assert.equal(primary.hits("/page"), pagesBefore);
    // And back after HEALTH_RISE good probes.
    primary.mode = "ok";
    await eventually(async () => (await status(isolates, "a")).origins[0].global?.state === "up");
  } finally {
    await isolates.dispose();
    await primary.stop();
    await replica.stop();
  }
});

test("global: the checker's probe of a hung origin lets go of its connection at the timeout", async () => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const bindings = {
    ORIGINS: originsVar(primary, replica),
    ATTEMPT_TIMEOUT_MS: "300",
    HEALTH_INTERVAL_MS: "500",
    COLO_HEALTH: "off",
  };
  const isolates = await startIsolates([{ name: "a", bindings, durableObjects: checker }]);
  try {
    primary.mode = "hang";
    // The alarm chain never ends, so nothing but the probe's own timeout
    // would ever close a connection it left open.
    await (await isolates.mf.getWorker("a")).scheduled({ cron: "* * * * *" });
    await eventually(() => primary.hits("/health") >= 3);
    const probes = primary.requests.filter((r) => r.path === "/health");
    await eventually(() => probes.slice(0, 2).every((r) => r.droppedAt !== undefined), { timeoutMs: 3000 });
    for (const r of probes.slice(0, 2)) {
      assert.ok(r.droppedAt - r.at < 2000, `probe connection held ${r.droppedAt - r.at} ms`);
    }
  } finally {
    await isolates.dispose();
    await primary.stop();
    await replica.stop();
  }
});

test("global: a failing checker never stops the Worker from serving", async () => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const bindings = { ORIGINS: originsVar(primary, replica), STATUS_TOKEN: token, HEALTH_INTERVAL_MS: "100" };
  const broken = {
    name: "broken",
    modules: true,
    script: `export class Broken { fetch() { throw new Error("checker exploded"); } }
             export default { fetch() { return new Response("unused"); } }`,
    compatibilityDate: COMPAT_DATE,
  };
  const isolates = await startIsolates(
    [{ name: "a", bindings, durableObjects: { HEALTH_CHECKER: { className: "Broken", scriptName: "broken" } } }],
    [broken],
  );
  try {
    for (let i = 0; i < 5; i++) {
      const res = await isolates.fetch("a", `/page${i}`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-served-by"), "primary");
      await res.arrayBuffer();
      await sleep(120);
    }
    primary.mode = 503;
    const res = await isolates.fetch("a", "/page");
    assert.equal(res.headers.get("x-served-by"), "replica", "local failover still works");
    await res.arrayBuffer();
    await eventually(() => isolates.logs.some((l) => l.includes("shared_health_error")));
  } finally {
    await isolates.dispose();
    await primary.stop();
    await replica.stop();
  }
});
