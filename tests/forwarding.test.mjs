// What reaches the origin and what comes back, when nothing fails.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, originsVar } from "./support/worker.mjs";
import { HOSTILE_PATHS } from "./support/hostile.mjs";
import { publicLocation } from "../src/js/attempt.mjs";

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

test("publicLocation: a redirect to the origin's own host becomes one to the site; nothing else is touched", () => {
  const origin = "https://primary.example.com:8443";
  const site = "https://www.example.com/some/page?x=1";
  const table = [
    // (Location, what the client gets; undefined: as the app sent it)
    ["http://primary.example.com/dir/", "https://www.example.com/dir/"],
    ["http://primary.example.com:8080/dir/?q=1#top", "https://www.example.com/dir/?q=1#top"],
    ["https://PRIMARY.example.com", "https://www.example.com"],
    ["HTTPS://primary.example.com:8443/a", "https://www.example.com/a"],
    ["https://primary.example.com?next=/x", "https://www.example.com?next=/x"],
    ["/relative/path", undefined],
    ["//primary.example.com/x", "https://www.example.com/x"],
    ["https://elsewhere.example/x", undefined],
    ["https://primary.example.com.evil.example/x", undefined],
    ["https://evil.example/?u=https://primary.example.com/", undefined],
    ["https://user@primary.example.com/x", undefined],
    ["https://primary.example.com@evil.example/x", undefined],
    ["ftp://primary.example.com/x", undefined],
    ["https:///x", undefined],
    ["", undefined],
  ];
  for (const [location, want] of table) assert.equal(publicLocation(location, origin, site), want, location);
  // The attempt's URL works as the origin's base; an IPv6 literal keeps its brackets.
  assert.equal(publicLocation("http://[fd00::2]:81/a", "http://[fd00::2]:8080/x/y", "http://site.example:8787/"), "http://site.example:8787/a");
});

test("a redirect the app builds from its own Host goes to the site, on both paths", async () => {
  const own = (path) => `http://127.0.0.1:${primary.port}${path}`;
  primary.pathModes["/dir"] = { status: 301, location: own("/dir/?q=1") };
  primary.pathModes["/away"] = { status: 302, location: "https://elsewhere.example/x" };
  primary.pathModes["/rel"] = { status: 307, location: "/login" };
  try {
    const moved = await worker.fetch("/dir");
    assert.equal(moved.status, 301);
    assert.equal(moved.headers.get("location"), `${worker.url}/dir/?q=1`);
    assert.equal(moved.headers.get("x-served-by"), "primary");
    assert.equal((await worker.fetch("/away")).headers.get("location"), "https://elsewhere.example/x");
    assert.equal((await worker.fetch("/rel")).headers.get("location"), "/login");
    // The full path (the primary fails, the replica redirects to its host).
    primary.pathModes["/dir"] = 503;
    replica.pathModes["/dir"] = { status: 308, location: `http://127.0.0.1:${replica.port}/dir/` };
    const over = await worker.fetch("/dir");
    assert.equal(over.status, 308);
    assert.equal(over.headers.get("x-served-by"), "replica");
    assert.equal(over.headers.get("location"), `${worker.url}/dir/`);
  } finally {
    delete primary.pathModes["/dir"];
    delete primary.pathModes["/away"];
    delete primary.pathModes["/rel"];
    delete replica.pathModes["/dir"];
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
