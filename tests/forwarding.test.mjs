// What reaches the origin and what comes back, when nothing fails.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, originsVar } from "./support/worker.mjs";
import { HOSTILE_PATHS } from "./support/hostile.mjs";

let primary, replica, worker;

before(async () => {
  primary = await startOrigin("primary");
  replica = await startOrigin("replica");
  worker = await startWorker({ ORIGINS: originsVar(primary, replica) });
});
after(async () => {
  await worker.dispose();
  await primary.stop();
  await replica.stop();
});

test("method, path, query, headers and body reach the primary unchanged", async () => {
  const body = "name=tunnel&x=%F0%9F%9A%80";
  const res = await worker.fetch("/api/items/%2Fsl%61sh?q=a%20b&q=%26&empty=&plus=1+1", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-custom": "kept" },
    body,
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("x-served-by"), "primary");
  assert.equal(res.headers.get("x-failover"), null);
  const echo = await res.json();
  assert.equal(echo.origin, "primary");
  assert.equal(echo.method, "POST");
  assert.equal(echo.path, "/api/items/%2Fsl%61sh?q=a%20b&q=%26&empty=&plus=1+1");
  assert.equal(echo.host, `127.0.0.1:${primary.port}`, "the origin sees its own host");
  assert.equal(echo.headers["x-custom"], "kept");
  assert.equal(echo.bodyLength, Buffer.byteLength(body));
});

test("response status, headers (multiple set-cookie) and body come back", async () => {
  const res = await worker.fetch("/cookies");
  assert.equal(res.status, 200);
  assert.deepEqual(res.headers.getSetCookie(), ["a=1; Path=/", "b=2; Path=/"]);
  assert.equal(res.headers.get("x-origin"), "primary");
});

test("404 is an answer, not a failure", async () => {
  primary.mode = 404;
  try {
    const res = await worker.fetch("/missing");
    assert.equal(res.status, 404);
    assert.equal(res.headers.get("x-served-by"), "primary");
    assert.equal(await res.text(), "primary says 404\n");
    assert.equal(replica.hits("/missing"), 0);
  } finally {
    primary.mode = "ok";
  }
});

test("HEAD gets headers and no body", async () => {
  const res = await worker.fetch("/head", { method: "HEAD" });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("x-served-by"), "primary");
  assert.equal((await res.arrayBuffer()).byteLength, 0);
  assert.equal(primary.requests.at(-1).method, "HEAD");
});

test("redirects go to the client, not followed", async () => {
  primary.mode = 302;
  try {
    const res = await worker.fetch("/moved");
    assert.equal(res.status, 302);
    assert.equal(res.headers.get("x-served-by"), "primary");
  } finally {
    primary.mode = "ok";
  }
});

test("a slow body streams through (first chunk before the last is written)", async () => {
  primary.mode = "slow";
  try {
    const res = await worker.fetch("/slow");
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    const started = Date.now();
    const first = await reader.read();
    const firstAfter = Date.now() - started;
    let text = new TextDecoder().decode(first.value);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    const allAfter = Date.now() - started;
    assert.match(text, /chunk 0\n[\s\S]*chunk 5\n$/);
    // Not a timing assert on speed: only that the body was not buffered whole.
    assert.ok(firstAfter < allAfter, `first chunk at ${firstAfter} ms, end at ${allAfter} ms`);
  } finally {
    primary.mode = "ok";
  }
});

test("hostile paths never leave the configured origin", async () => {
  for (const p of HOSTILE_PATHS) {
    const before = primary.requests.length;
    // Raw request: fetch() would normalise some of these before sending.
    const status = await new Promise((resolve, reject) => {
      const u = new URL(worker.url);
      const req = http.request({ host: u.hostname, port: u.port, path: p, method: "GET" }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode));
      });
      req.on("error", reject);
      req.end();
    });
    assert.equal(status, 200, p);
    assert.equal(primary.requests.length, before + 1, `${p} reached the primary`);
    const seen = primary.requests.at(-1);
    assert.equal(seen.host, `127.0.0.1:${primary.port}`, p);
  }
});

test("WebSocket upgrades pass through (101) and carry X-Served-By", async () => {
  const res = await worker.mf.dispatchFetch("http://site.example/ws", {
    headers: { upgrade: "websocket" },
  });
  assert.equal(res.status, 101);
  assert.equal(res.headers.get("x-served-by"), "primary");
  const ws = res.webSocket;
  assert.ok(ws, "the response carries a WebSocket");
  ws.accept();
  const reply = new Promise((resolve) => ws.addEventListener("message", (e) => resolve(e.data)));
  ws.send("ping");
  assert.equal(await reply, "primary:ping");
  ws.close();
});
