// A Rust panic is recovered by src/js/entry.mjs, and the fast path's lease
// dies with the Wasm instance that granted it; a panic in the operator
// module resets that module alone. Runs against the panic-test build
// (target/build-panic, made by `make test-worker`): only there does POST
// /__test/panic panic in Rust (on the full path), and the status page's
// text renderer panic (in the operator module).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startOrigin } from "./support/origin.mjs";
import { originsVar, startWorker } from "./support/worker.mjs";

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "target", "build-panic");

test("a panic is recovered and the lease dies with the instance", { skip: !existsSync(path.join(dir, "index.js")) && "no panic-test build (make test-worker builds it)" }, async (t) => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  // Probes far apart: the lease on "replica" would hold for a minute.
  const worker = await startWorker(
    { ORIGINS: originsVar(primary, replica), HEALTH_INTERVAL_MS: "60000", COLO_HEALTH: "off" },
    { dir },
  );
  t.after(async () => {
    await worker.dispose();
    await primary.stop();
    await replica.stop();
  });

  primary.mode = 530;
  let res = await worker.fetch("/a");
  assert.equal(res.headers.get("x-served-by"), "replica");
  await res.text();
  // The primary is fine again, but this isolate's map says down until its
  // next probe, a minute away: the lease keeps sending to the replica.
  primary.mode = "ok";
  for (let i = 0; i < 3; i++) {
    res = await worker.fetch(`/b${i}`);
    assert.equal(res.headers.get("x-served-by"), "replica");
    await res.text();
  }

  // A streamed body (no length): the full path's, where the panic is; a
  // small body of known length would be sent by the fast path in JS.
  const body = new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode("x"));
      c.close();
    },
  });
  res = await worker.fetch("/__test/panic", { method: "POST", body, duplex: "half" });
  assert.equal(res.status, 500, "the panicking request fails");
  await res.text();

  // A fresh instance: a fresh map presumes every origin healthy, and the
  // old lease (replica, valid for a minute) is not used.
  res = await worker.fetch("/c");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("x-served-by"), "primary");
  await res.text();
  assert.ok(
    worker.logs.some((line) => line.includes("Reinitializing Wasm application")),
    "entry.mjs reset the instance",
  );
  // The panic hook (src/runtime.rs's start) logged the panic by name: an
  // operator reading `wrangler tail` sees what broke, not only a reset.
  assert.match(
    worker.logs.join("\n"),
    /Rust panic: panicked at src\/entry\.rs:\d+:\d+:\n\s*panic-test: \/__test\/panic/,
    "the panic hook logged the panic",
  );
});

test("a panic in the operator module resets that module alone", { skip: !existsSync(path.join(dir, "index.js")) && "no panic-test build (make test-worker builds it)" }, async (t) => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker(
    { ORIGINS: originsVar(primary, replica), HEALTH_INTERVAL_MS: "60000", COLO_HEALTH: "off", STATUS_TOKEN: "t0ken-t0ken-t0ken" },
    { dir },
  );
  t.after(async () => {
    await worker.dispose();
    await primary.stop();
    await replica.stop();
  });
  const status = (accept) => worker.fetch("/__failover/status", { headers: { authorization: "Bearer t0ken-t0ken-t0ken", accept } });

  // Something only the request path's instance knows: the primary is down
  // in its map (a fresh instance would presume it up).
  primary.mode = 530;
  let res = await worker.fetch("/a");
  assert.equal(res.headers.get("x-served-by"), "replica");
  await res.text();

  res = await status("text/plain");
  assert.equal(res.status, 500, "the panicking render fails");
  assert.match(await res.text(), /could not be rendered/);

  // The operator module is instantiated anew, and renders.
  res = await status("text/html");
  assert.equal(res.status, 200);
  assert.match(await res.text(), /primary/);
  // The request path's instance was not reset: its map still says down.
  res = await status("application/json");
  const doc = await res.json();
  assert.equal(doc.origins[0].state, "down");
  res = await worker.fetch("/b");
  assert.equal(res.headers.get("x-served-by"), "replica");
  await res.text();
  assert.ok(
    !worker.logs.some((line) => line.includes("Reinitializing Wasm application")),
    "the request path's instance was not reset",
  );
});
