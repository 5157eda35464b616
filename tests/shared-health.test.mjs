// Health shared beyond one isolate: the colo cache and the global checker.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { COMPAT_DATE, startIsolates, originsVar, eventually, sleep } from "./support/worker.mjs";

const token = "t0ken-t0ken-t0ken";
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

test("colo: one isolate's timeout spares the other isolates' requests once one of theirs waits", async () => {
  // A timeout long enough that b's first attempt still waits while its
  // later requests come; silence off, so only the colo can spare them.
  const { primary, isolates, close } = await twoIsolates({ ATTEMPT_TIMEOUT_MS: "3000", SILENCE_MS: "0" });
  try {
    primary.mode = "hang";
    const first = await isolates.fetch("a", "/a");
    assert.equal(first.headers.get("x-served-by"), "replica");
    await first.arrayBuffer();
    assert.equal(primary.hits("/a"), 1, "isolate a waited on the hanging primary once, and shared that");
    // b's map is all up and nothing of its own waits: a colo read could
    // tell it nothing its next attempt would not, so it makes none.
    for (let i = 0; i < 3; i++) {
      assert.equal((await status(isolates, "b")).origins[0].colo, null, "b read no colo verdict");
      await sleep(300); // longer than a read period
    }
    const waiting = isolates.fetch("b", "/b1");
    // Once /b1 has waited a read period, b's requests (here the status
    // endpoint's) read the colo beside them, and b adopts a's verdict.
    await eventually(async () => (await status(isolates, "b")).origins[0].local.decided_by === "colo");
    const spared = await isolates.fetch("b", "/b2");
    assert.equal(spared.headers.get("x-served-by"), "replica");
    await spared.arrayBuffer();
    assert.equal(primary.hits("/b2"), 0, "b's later request skipped the primary without a timeout");
    await (await waiting).arrayBuffer();
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
  const { primary, isolates, close } = await twoIsolates({ ATTEMPT_TIMEOUT_MS: "6000", SILENCE_MS: "0" });
  try {
    primary.mode = 530;
    const failed = await isolates.fetch("b", "/fail"); // b marks it down and shares that
    assert.equal(failed.headers.get("x-served-by"), "replica");
    await failed.arrayBuffer();
    primary.mode = "ok";
    const live = await isolates.fetch("a", "/live"); // answered after b's verdict
    assert.equal(live.headers.get("x-served-by"), "primary");
    await live.arrayBuffer();
    // A slow answer keeps one of a's attempts waiting, so a reads the colo
    // (beside its status requests) while it waits.
    primary.delayMs = 3000;
    const slow = isolates.fetch("a", "/slow");
    await eventually(async () => (await status(isolates, "a")).origins[0].colo?.state === "down");
    assert.equal((await status(isolates, "a")).origins[0].local.state, "up", "the older shared down was not adopted");
    primary.delayMs = 0;
    await (await slow).arrayBuffer();
    const after = await isolates.fetch("a", "/after");
    assert.equal(after.headers.get("x-served-by"), "primary");
    await after.arrayBuffer();
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
  // two of its intervals (here 2 s): b, which reads every 250 ms beside its
  // requests while the primary is down for it, has that long to see it
  // even on a loaded machine.
  const isolates = await startIsolates([
    { name: "a", bindings: { ...base, HEALTH_INTERVAL_MS: "1000" } },
    { name: "b", bindings: { ...base, HEALTH_INTERVAL_MS: "60000" } },
  ]);
  try {
    primary.mode = 530;
    await (await isolates.fetch("a", "/")).arrayBuffer();
    await (await isolates.fetch("b", "/")).arrayBuffer();
    assert.equal((await status(isolates, "b")).origins[0].local.state, "down");
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
