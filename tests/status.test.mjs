// The status endpoint: JSON for the right token, 401 otherwise, and an
// ordinary proxied path when no token is configured.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, originsVar } from "./support/worker.mjs";

test("status endpoint with a token", async () => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker({ ORIGINS: originsVar(primary, replica), STATUS_TOKEN: "s3cret-token" });
  try {
    primary.mode = 530;
    await (await worker.fetch("/warm")).arrayBuffer();

    const res = await worker.fetch("/__failover/status", { headers: { authorization: "Bearer s3cret-token" } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json");
    const doc = await res.json();
    assert.equal(doc.version, "0.1.0");
    assert.match(doc.revision, /^([0-9a-f]{12}(-dirty)?|unknown)$/);
    assert.deepEqual(
      doc.origins.map((o) => [o.name, o.state, o.bad_streak, o.last_error]),
      [
        ["primary", "down", 1, "status 530"],
        ["replica", "up", 0, null],
      ],
    );
    assert.equal(typeof doc.origins[0].last_change_ms, "number");
    assert.equal(primary.hits("/__failover/status") + replica.hits("/__failover/status"), 0, "never proxied");

    for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: "s3cret-token" }, { authorization: "Bearer s3cret-toke" }]) {
      const denied = await worker.fetch("/__failover/status", { headers });
      assert.equal(denied.status, 401, JSON.stringify(headers));
      assert.equal(denied.headers.get("www-authenticate"), "Bearer");
      assert.doesNotMatch(await denied.text(), /primary|replica|127\.0\.0\.1/);
    }
  } finally {
    await worker.dispose();
    await primary.stop();
    await replica.stop();
  }
});

test("without STATUS_TOKEN the status path is proxied like any other", async () => {
  const primary = await startOrigin("primary");
  const worker = await startWorker({ ORIGINS: originsVar(primary) });
  try {
    const res = await worker.fetch("/__failover/status");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-served-by"), "primary");
    assert.equal((await res.json()).path, "/__failover/status");
  } finally {
    await worker.dispose();
    await primary.stop();
  }
});

test("STATUS_PATH is configurable", async () => {
  const primary = await startOrigin("primary");
  const worker = await startWorker({ ORIGINS: originsVar(primary), STATUS_TOKEN: "t", STATUS_PATH: "/ops/health" });
  try {
    const res = await worker.fetch("/ops/health?pretty=1", { headers: { authorization: "Bearer t" } });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).origins[0].name, "primary");
    const other = await worker.fetch("/__failover/status");
    assert.equal(other.headers.get("x-served-by"), "primary");
    await other.arrayBuffer();
  } finally {
    await worker.dispose();
    await primary.stop();
  }
});
