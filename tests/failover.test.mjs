// Failures, failover, replay rules and fail-back, against real origins with
// injected faults. Each test gets a fresh Worker (a cold isolate).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import http from "node:http";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, originsVar, eventually, sleep } from "./support/worker.mjs";

async function setup(vars = {}) {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker({ ORIGINS: originsVar(primary, replica), ...vars });
  const close = async () => {
    await worker.dispose();
    await primary.stop().catch(() => {});
    await replica.stop().catch(() => {});
  };
  return { primary, replica, worker, close };
}

const sha = (data) => createHash("sha256").update(data).digest("hex");

// Cloudflare's own answers about an origin (52x, 530) mark it down at once.
for (const status of [520, 522, 530]) {
  test(`GET fails over on ${status} and later requests skip the primary`, async () => {
    const { primary, replica, worker, close } = await setup();
    try {
      primary.mode = status;
      const res = await worker.fetch("/page");
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-served-by"), "replica");
      assert.equal(res.headers.get("x-failover"), "replica");
      assert.equal((await res.json()).path, "/page");
      const hits = primary.hits();
      const again = await worker.fetch("/page");
      assert.equal(again.headers.get("x-served-by"), "replica");
      await again.arrayBuffer();
      assert.equal(primary.hits(), hits, "a down primary is skipped");
      const change = worker.events("health").find((e) => e.origin === "primary");
      assert.deepEqual(change, { event: "health", origin: "primary", from: "up", to: "down", reason: `status ${status}`, source: "local" });
      assert.ok(worker.events("attempt_failed").some((e) => e.next === "try replica"));
    } finally {
      await close();
    }
  });
}

// An app's own 5xx fails the request over, and marks the primary down once
// a probe of its health path agrees (here every path answers the status).
for (const status of [500, 502, 503]) {
  test(`GET fails over on the app's ${status}; the primary is down once its probe agrees`, async () => {
    const { primary, replica, worker, close } = await setup();
    try {
      primary.mode = status;
      const res = await worker.fetch("/page");
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-served-by"), "replica");
      assert.equal(res.headers.get("x-failover"), "replica");
      assert.equal((await res.json()).path, "/page");
      await eventually(() => worker.events("health").some((e) => e.origin === "primary"));
      const change = worker.events("health").find((e) => e.origin === "primary");
      assert.deepEqual(change, {
        event: "health",
        origin: "primary",
        from: "up",
        to: "down",
        reason: `status ${status} from the app, then the probe: status ${status}`,
        source: "local",
      });
      assert.ok(primary.hits("/health") >= 1, "the verdict came from a probe");
      const hits = primary.hits();
      const again = await worker.fetch("/page");
      assert.equal(again.headers.get("x-served-by"), "replica");
      await again.arrayBuffer();
      assert.equal(primary.hits(), hits, "a down primary is skipped");
      assert.ok(worker.events("attempt_failed").some((e) => e.next === "try replica"));
    } finally {
      await close();
    }
  });
}

test("a refused connection fails over", async () => {
  const { primary, replica, worker, close } = await setup();
  try {
    await primary.stop();
    const res = await worker.fetch("/x?y=1");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-served-by"), "replica");
    assert.equal((await res.json()).path, "/x?y=1");
    assert.equal(replica.hits("/x?y=1"), 1);
  } finally {
    await close();
  }
});

test("a hanging primary times out and the replica answers", async () => {
  const { primary, worker, close } = await setup({ ATTEMPT_TIMEOUT_MS: "300" });
  try {
    primary.mode = "hang"; // its health path too
    const res = await worker.fetch("/slowpoke");
    assert.equal(res.headers.get("x-served-by"), "replica");
    await res.arrayBuffer();
    // One timeout is not a verdict: the probe of the health path, which
    // times out too, is.
    await eventually(() => worker.events("health").length > 0);
    assert.equal(worker.events("health")[0].reason, "timeout on a request, then the probe: timeout");
    const hits = primary.hits();
    const again = await worker.fetch("/slowpoke");
    assert.equal(again.headers.get("x-served-by"), "replica");
    await again.arrayBuffer();
    assert.equal(primary.hits(), hits, "the next request does not wait on the dead primary");
  } finally {
    await close();
  }
});

test("a timed-out attempt does not hold on to the hung origin after the client has its answer", async () => {
  const { primary, worker, close } = await setup({ ATTEMPT_TIMEOUT_MS: "300" });
  try {
    primary.mode = "hang";
    const res = await worker.fetch("/hung");
    assert.equal(res.headers.get("x-served-by"), "replica");
    await res.arrayBuffer();
    const hung = primary.requests.find((r) => r.path === "/hung");
    assert.ok(hung, "the primary got the request");
    for (let i = 0; i < 50 && hung.droppedAt === undefined; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(hung.droppedAt !== undefined, "the Worker closed its connection to the hung primary");
  } finally {
    await close();
  }
});

test("only the headers are timed: a body slower than the attempt timeout arrives whole", async () => {
  const { primary, worker, close } = await setup({ ATTEMPT_TIMEOUT_MS: "200" });
  try {
    primary.mode = "slow"; // headers at once, six chunks over ~600 ms
    const res = await worker.fetch("/slow");
    assert.equal(res.status, 200);
    assert.match(await res.text(), /chunk 0\n[\s\S]*chunk 5\n$/);
    assert.equal(worker.events("health").length, 0);
  } finally {
    await close();
  }
});

test("a connection cut mid-response never looks like a complete body", async () => {
  const { primary, worker, close } = await setup();
  try {
    primary.mode = "cut";
    // A raw client, as curl: Node's fetch asks for gzip, and Miniflare's
    // dev-only entry proxy then re-encodes in Node and hides the abort.
    const u = new URL(worker.url);
    const outcome = await new Promise((resolve) => {
      const req = http.request({ host: u.hostname, port: u.port, path: "/download" }, (res) => {
        let received = 0;
        res.on("data", (c) => (received += c.length));
        res.on("error", () => {});
        res.on("close", () =>
          resolve({ status: res.statusCode, length: res.headers["content-length"], received, complete: res.complete }),
        );
      });
      req.on("error", (e) => resolve({ error: e.message }));
      req.end();
    });
    assert.equal(outcome.status, 200);
    assert.equal(outcome.length, "100000", "the origin's length is kept, so clients can tell");
    assert.ok(outcome.received < 100000);
    assert.equal(outcome.complete, false, "the client sees an aborted response, not a clean end");
  } finally {
    await close();
  }
});

test("every origin down: 502 in one line, naming no address", async () => {
  const { primary, replica, worker, close } = await setup();
  try {
    // Cloudflare's answers for a Tunnel without a connector and an origin
    // that timed out: nothing the app said.
    primary.mode = 530;
    replica.mode = 522;
    const res = await worker.fetch("/");
    assert.equal(res.status, 502);
    const text = await res.text();
    assert.equal(text.trim().split("\n").length, 1);
    assert.doesNotMatch(text, /127\.0\.0\.1|http:|localhost|\d+\.\d+\.\d+\.\d+/);
    assert.equal(res.headers.get("x-served-by"), null);
    // Both are down now, but requests still try them in priority order.
    primary.mode = "ok";
    const next = await worker.fetch("/");
    assert.equal(next.headers.get("x-served-by"), "primary");
    await next.arrayBuffer();
  } finally {
    await close();
  }
});

test("every attempt timed out: 504", async () => {
  const { primary, replica, worker, close } = await setup({ ATTEMPT_TIMEOUT_MS: "200" });
  try {
    primary.mode = "hang";
    replica.mode = "hang";
    const res = await worker.fetch("/");
    assert.equal(res.status, 504);
    assert.doesNotMatch(await res.text(), /127\.0\.0\.1/);
  } finally {
    await close();
  }
});

test("fail-back after HEALTH_RISE good background probes", async () => {
  const { primary, worker, close } = await setup({ HEALTH_INTERVAL_MS: "200", HEALTH_RISE: "3" });
  try {
    primary.mode = 530;
    const first = await worker.fetch("/");
    assert.equal(first.headers.get("x-served-by"), "replica");
    await first.arrayBuffer();
    primary.mode = "ok";
    // Requests keep flowing (probes ride on them); the primary comes back
    // only after three good probes of /health.
    await eventually(async () => {
      const res = await worker.fetch("/");
      await res.arrayBuffer();
      return res.headers.get("x-served-by") === "primary";
    });
    assert.ok(primary.hits("/health") >= 3, `probes: ${primary.hits("/health")}`);
    const up = worker.events("health").find((e) => e.to === "up");
    assert.deepEqual(up, { event: "health", origin: "primary", from: "down", to: "up", reason: "3 good probes", source: "local" });
  } finally {
    await close();
  }
});

test("a probe failure restarts the rise count (no flapping back)", async () => {
  const { primary, worker, close } = await setup({ HEALTH_INTERVAL_MS: "150", HEALTH_RISE: "2" });
  try {
    primary.mode = 530;
    await (await worker.fetch("/")).arrayBuffer();
    // Probes alternate good and bad: never two good in a row, so the
    // primary must stay down however many probes run.
    primary.healthModes = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? "ok" : 503));
    for (let i = 0; i < 20; i++) {
      const res = await worker.fetch("/");
      await res.arrayBuffer();
      assert.equal(res.headers.get("x-served-by"), "replica");
      await sleep(60);
    }
    assert.ok(primary.hits("/health") >= 4, `probes ran: ${primary.hits("/health")}`);
    assert.equal(worker.events("health").filter((e) => e.to === "up").length, 0);
    // Two good probes in a row, and it is back.
    primary.healthModes = [];
    primary.mode = "ok";
    await eventually(async () => {
      const res = await worker.fetch("/");
      await res.arrayBuffer();
      return res.headers.get("x-served-by") === "primary";
    });
  } finally {
    await close();
  }
});

test("POST is not replayed after a 5xx: the client gets the primary's answer", async () => {
  const { primary, replica, worker, close } = await setup();
  try {
    primary.mode = 500;
    const res = await worker.fetch("/orders", { method: "POST", body: "one order" });
    assert.equal(res.status, 500);
    assert.equal(res.headers.get("x-served-by"), "primary");
    assert.equal(await res.text(), "primary says 500\n");
    assert.equal(replica.hits("/orders"), 0, "the replica never saw the POST");
  } finally {
    await close();
  }
});

test("POST is not replayed after a timeout: 504", async () => {
  const { primary, replica, worker, close } = await setup({ ATTEMPT_TIMEOUT_MS: "300" });
  try {
    primary.mode = "hang";
    const res = await worker.fetch("/orders", { method: "POST", body: "one order" });
    assert.equal(res.status, 504);
    assert.equal(replica.hits("/orders"), 0);
  } finally {
    await close();
  }
});

for (const status of [521, 523, 530]) {
  test(`POST is replayed, whole, when the primary proves it never got it (${status})`, async () => {
    const { primary, replica, worker, close } = await setup();
    try {
      primary.mode = status;
      const body = "p".repeat(50_000);
      const res = await worker.fetch("/orders", { method: "POST", body });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-failover"), "replica");
      const echo = await res.json();
      assert.equal(echo.bodyLength, body.length);
      assert.equal(echo.bodySha, sha(body));
    } finally {
      await close();
    }
  });
}

test("POST above the cap is streamed once: a failing primary's answer, never a replay", async () => {
  const { primary, replica, worker, close } = await setup({ REPLAY_BODY_MAX_BYTES: "1024" });
  try {
    primary.mode = 530;
    const body = Buffer.alloc(100_000, 3);
    const res = await worker.fetch("/orders", { method: "POST", body });
    assert.equal(res.status, 530, "530 proves the primary never saw it, but the body is gone");
    assert.equal(res.headers.get("x-served-by"), "primary");
    await res.arrayBuffer();
    assert.equal(primary.requests.at(-1).bodyLength, body.length);
    assert.equal(replica.hits("/orders"), 0);
  } finally {
    await close();
  }
});

test("HEAD fails over like GET", async () => {
  const { primary, worker, close } = await setup();
  try {
    primary.mode = 502;
    const res = await worker.fetch("/page", { method: "HEAD" });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-failover"), "replica");
    assert.deepEqual(
      primary.requests.filter((r) => r.path === "/page").map((r) => r.method),
      ["HEAD"],
    );
  } finally {
    await close();
  }
});

test("GET with a body: a clear 400, no origin contacted, no origin marked down", async () => {
  const { primary, replica, worker, close } = await setup();
  try {
    const u = new URL(worker.url);
    const status = await new Promise((resolve, reject) => {
      const req = http.request(
        { host: u.hostname, port: u.port, path: "/search", method: "GET", headers: { "content-length": "5" } },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode));
        },
      );
      req.on("error", reject);
      req.end("hello");
    });
    assert.equal(status, 400);
    assert.equal(primary.hits() + replica.hits(), 0);
    assert.equal(worker.events("health").length, 0);
    const next = await worker.fetch("/search");
    assert.equal(next.headers.get("x-served-by"), "primary");
    await next.arrayBuffer();
  } finally {
    await close();
  }
});

test("a slow upload is not a slow origin: the timeout starts once the body is sent", async () => {
  const { primary, worker, close } = await setup({ REPLAY_BODY_MAX_BYTES: "10", ATTEMPT_TIMEOUT_MS: "300" });
  try {
    const u = new URL(worker.url);
    const result = await new Promise((resolve, reject) => {
      const req = http.request(
        { host: u.hostname, port: u.port, path: "/upload", method: "POST", headers: { "content-length": "2000" } },
        (res) => {
          const chunks = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode, servedBy: res.headers["x-served-by"], body: Buffer.concat(chunks).toString() }));
        },
      );
      req.on("error", reject);
      req.write("a".repeat(1000));
      setTimeout(() => req.end("b".repeat(1000)), 1000);
    });
    assert.equal(result.status, 200);
    assert.equal(result.servedBy, "primary");
    assert.equal(JSON.parse(result.body).bodyLength, 2000);
    assert.equal(primary.requests.at(-1).headers["content-length"], "2000", "the origin still gets a length");
    assert.equal(worker.events("health").length, 0, "the primary was never marked down");
  } finally {
    await close();
  }
});

test("POST to a refused connection: not replayed (workerd cannot tell refused from cut)", async () => {
  const { primary, replica, worker, close } = await setup();
  try {
    await primary.stop();
    const res = await worker.fetch("/orders", { method: "POST", body: "x" });
    assert.equal(res.status, 502);
    assert.equal(replica.hits("/orders"), 0);
  } finally {
    await close();
  }
});

test("PUT below the cap is replayed with the whole body", async () => {
  const { primary, replica, worker, close } = await setup({ REPLAY_BODY_MAX_BYTES: "4096" });
  try {
    primary.mode = 503;
    const body = Buffer.alloc(4096, 7);
    const res = await worker.fetch("/file", { method: "PUT", body });
    assert.equal(res.headers.get("x-served-by"), "replica");
    const echo = await res.json();
    assert.equal(echo.bodyLength, 4096);
    assert.equal(echo.bodySha, sha(body));
    const put = primary.requests.filter((r) => r.path === "/file");
    assert.equal(put.length, 1);
    assert.equal(put[0].bodySha, sha(body), "the primary got it whole too");
  } finally {
    await close();
  }
});

test("PUT above the cap is streamed once and never sent to the replica", async () => {
  const { primary, replica, worker, close } = await setup({ REPLAY_BODY_MAX_BYTES: "1024" });
  try {
    const body = Buffer.alloc(200_000, 9);
    const ok = await worker.fetch("/big", { method: "PUT", body });
    assert.equal(ok.headers.get("x-served-by"), "primary");
    const echo = await ok.json();
    assert.equal(echo.bodyLength, body.length, "streamed whole to the primary");
    assert.equal(echo.bodySha, sha(body));

    primary.mode = 503;
    const failed = await worker.fetch("/big", { method: "PUT", body });
    assert.equal(failed.status, 503, "the primary's own answer, not a replay");
    assert.equal(failed.headers.get("x-served-by"), "primary");
    await failed.arrayBuffer();
    assert.equal(replica.hits("/big"), 0, "no replica ever gets a body it cannot have whole");
  } finally {
    await close();
  }
});

test("a body of unknown length (chunked) is streamed and not replayed", async () => {
  const { primary, replica, worker, close } = await setup();
  try {
    primary.mode = 530;
    const chunks = ["a".repeat(1000), "b".repeat(1000)];
    const stream = new ReadableStream({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(new TextEncoder().encode(next));
        else controller.close();
      },
    });
    const res = await worker.fetch("/upload", { method: "PUT", body: stream, duplex: "half" });
    assert.equal(res.status, 530);
    assert.equal(primary.requests.at(-1).bodyLength, 2000);
    assert.equal(replica.hits("/upload"), 0);
  } finally {
    await close();
  }
});
