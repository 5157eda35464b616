// REPLAY_BUFFER_BUDGET_BYTES: the most body bytes the isolate holds for
// replay at once. More concurrent buffered uploads than the budget allows
// are all answered, the ones over budget streamed to one origin (so not
// replayed), none truncated, and the held bytes go back to 0 afterwards,
// client disconnects mid-upload included.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import net from "node:net";
import { startOrigin } from "./support/origin.mjs";
import { eventually, originsVar, startWorker } from "./support/worker.mjs";

const TOKEN = "budget-token-0123456";

async function replayBuffer(worker) {
  const res = await worker.fetch("/__failover/status", { headers: { authorization: `Bearer ${TOKEN}` } });
  return (await res.json()).replay_buffer;
}

test("uploads over the replay budget are streamed whole and the budget comes back to 0", async (t) => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker({
    ORIGINS: originsVar(primary, replica),
    REPLAY_BODY_MAX_BYTES: "1000",
    // Room for one 600-byte body at a time.
    REPLAY_BUFFER_BUDGET_BYTES: "1000",
    STATUS_TOKEN: TOKEN,
    COLO_HEALTH: "off",
  });
  t.after(async () => {
    await worker.dispose();
    await primary.stop();
    await replica.stop();
  });

  // The primary fails every upload after holding it for a moment, so the
  // uploads overlap: a held (buffered) PUT is replayed to the replica, a
  // streamed one cannot be and gets the primary's 503 as it is.
  primary.mode = 503;
  primary.delayMs = 400;
  const body = (i) => Buffer.alloc(600, 65 + i);
  const results = await Promise.all(
    Array.from({ length: 5 }, (_, i) =>
      worker.fetch(`/upload/${i}`, { method: "PUT", body: body(i) }).then(async (res) => ({
        i,
        status: res.status,
        servedBy: res.headers.get("x-served-by"),
        text: await res.text(),
      })),
    ),
  );
  const replayed = results.filter((r) => r.status === 200);
  const streamed = results.filter((r) => r.status === 503);
  assert.equal(replayed.length + streamed.length, 5, JSON.stringify(results));
  assert.ok(replayed.length >= 1, "the budget held at least one body");
  assert.ok(streamed.length >= 3, `at most one 600-byte body fits a 1000-byte budget at once: ${JSON.stringify(results)}`);
  // Nothing truncated: every upload reached the primary whole, and each
  // replayed one reached the replica whole too.
  for (const r of results) {
    const sha = createHash("sha256").update(body(r.i)).digest("hex");
    const atPrimary = primary.requests.find((q) => q.path === `/upload/${r.i}`);
    assert.equal(atPrimary?.bodySha, sha, `upload ${r.i} at the primary`);
    if (r.status === 200) {
      const atReplica = replica.requests.find((q) => q.path === `/upload/${r.i}`);
      assert.equal(atReplica?.bodySha, sha, `upload ${r.i} at the replica`);
    }
  }
  const after = await eventually(async () => {
    const b = await replayBuffer(worker);
    return b.held_bytes === 0 && b;
  });
  assert.equal(after.budget_bytes, 1000);
  assert.ok(after.peak_bytes >= 600 && after.peak_bytes <= 1000, JSON.stringify(after));
  assert.ok(
    worker.events("replay_budget").length >= 1,
    "a streamed-for-budget body is logged (at most once a minute)",
  );
});

test("a client that goes away mid-upload gives its bytes back", async (t) => {
  const primary = await startOrigin("primary");
  const worker = await startWorker({
    ORIGINS: originsVar(primary),
    REPLAY_BUFFER_BUDGET_BYTES: "100000",
    STATUS_TOKEN: TOKEN,
    COLO_HEALTH: "off",
  });
  t.after(async () => {
    await worker.dispose();
    await primary.stop();
  });
  const { hostname, port } = new URL(worker.url);
  // Declares 50000 bytes, sends 1000, then hangs up.
  await new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(`POST /gone HTTP/1.1\r\nhost: ${hostname}\r\ncontent-length: 50000\r\n\r\n`);
      socket.write(Buffer.alloc(1000, 66));
      setTimeout(() => {
        socket.destroy();
        resolve();
      }, 200);
    });
    socket.on("error", resolve);
  });
  const held = await eventually(async () => {
    const b = await replayBuffer(worker);
    return b.held_bytes === 0 && b;
  });
  assert.equal(held.held_bytes, 0);
  assert.equal(held.peak_bytes, 50000, "the Worker did hold the upload before the client left");
  // And the budget still works: a normal upload is answered.
  const res = await worker.fetch("/after", { method: "POST", body: "x".repeat(100) });
  assert.equal(res.status, 200);
  await res.text();
});

test("a bad REPLAY_BUFFER_BUDGET_BYTES answers 500 naming it", async (t) => {
  const primary = await startOrigin("primary");
  t.after(() => primary.stop());
  for (const value of ["-1", "134217729", "lots"]) {
    const worker = await startWorker({ ORIGINS: originsVar(primary), REPLAY_BUFFER_BUDGET_BYTES: value });
    const res = await worker.fetch("/");
    const text = await res.text();
    await worker.dispose();
    assert.equal(res.status, 500, value);
    assert.match(text, /REPLAY_BUFFER_BUDGET_BYTES/, value);
  }
});
