// Hop-by-hop headers stop at the Worker (RFC 9110 section 7.6.1): what a
// client names in Connection, and Keep-Alive, Proxy-Connection, TE,
// Trailer and an Upgrade that is not a WebSocket's, never reach an origin,
// on the fast path (the first attempt) and the full path (the walk after
// it). Written on a raw socket: fetch clients refuse these headers, and
// wrangler dev strips Connection before the Worker sees it; Miniflare's
// workerd hands them over as a client sent them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, originsVar } from "./support/worker.mjs";
import { rawRequest } from "./support/raw-http.mjs";
import WebSocket from "ws";

const HOSTILE = [
  ["X-Hop", "named in Connection"],
  ["X-Other-Hop", "named too"],
  ["Keep-Alive", "timeout=5"],
  ["Proxy-Connection", "keep-alive"],
  ["TE", "trailers"],
  ["Trailer", "X-Checksum"],
  ["Upgrade", "h2c"],
  ["X-Kept", "end to end"],
];
const GONE = ["connection", "x-hop", "x-other-hop", "keep-alive", "proxy-connection", "te", "trailer", "upgrade"];

function assertClean(seen, where) {
  for (const name of GONE) assert.equal(seen[name], undefined, `${where}: ${name} reached the origin`);
  assert.equal(seen["x-kept"], "end to end", `${where}: an end-to-end header is kept`);
}

test("hop-by-hop headers reach no origin, on the fast path and on the full path", async () => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker({ ORIGINS: originsVar(primary, replica), COLO_HEALTH: "off" });
  try {
    // Warm: the lease is granted, the next GET takes the fast path.
    assert.equal((await worker.fetch("/warm")).status, 200);
    const fast = await rawRequest(worker.url, { path: "/fast", connection: "X-Hop, x-other-hop", headers: HOSTILE });
    assert.equal(fast.status, 200);
    assertClean(primary.requests.find((r) => r.path === "/fast").headers, "fast path");

    // The primary fails: the full path walks on to the replica.
    primary.mode = 502;
    const full = await rawRequest(worker.url, { path: "/full", connection: "X-Hop, x-other-hop", headers: HOSTILE });
    assert.equal(full.status, 200);
    assert.equal(full.headers["x-served-by"], "replica");
    assertClean(replica.requests.find((r) => r.path === "/full").headers, "full path");
  } finally {
    await worker.dispose();
    await primary.stop();
    await replica.stop();
  }
});

test("Connection cannot strip what the request needs: Host, Content-Length, the forwarded pair", async () => {
  const primary = await startOrigin("primary");
  const worker = await startWorker({ ORIGINS: originsVar(primary), COLO_HEALTH: "off" });
  try {
    const res = await rawRequest(worker.url, {
      method: "POST",
      path: "/form",
      connection: "Content-Length, Host, X-Forwarded-Host, X-Forwarded-Proto",
      headers: [
        ["Content-Length", "5"],
        ["Content-Type", "text/plain"],
      ],
      body: "hello",
    });
    assert.equal(res.status, 200);
    const seen = primary.requests.find((r) => r.path === "/form");
    assert.equal(seen.bodyLength, 5, "the whole body arrived");
    assert.equal(seen.headers["content-length"], "5");
    assert.equal(seen.headers.host, `127.0.0.1:${primary.port}`);
    assert.equal(seen.headers["x-forwarded-proto"], "http");
    assert.ok(seen.headers["x-forwarded-host"].startsWith("127.0.0.1:"), seen.headers["x-forwarded-host"]);
  } finally {
    await worker.dispose();
    await primary.stop();
  }
});

test("a WebSocket upgrade keeps its Upgrade, and opens", async () => {
  const primary = await startOrigin("primary");
  const worker = await startWorker({ ORIGINS: originsVar(primary), COLO_HEALTH: "off" });
  try {
    // ws sends its own Connection: Upgrade (a caller's is overridden).
    const ws = new WebSocket(`${worker.url.replace("http", "ws")}/socket`, { headers: { "proxy-connection": "keep-alive" } });
    const echoed = await new Promise((resolve, reject) => {
      ws.on("open", () => ws.send("hello"));
      ws.on("message", (m) => resolve(String(m)));
      ws.on("error", reject);
    });
    ws.close();
    assert.equal(echoed, "primary:hello");
    const seen = primary.requests.find((r) => r.upgrade).headers;
    assert.equal(seen.upgrade?.toLowerCase(), "websocket");
    assert.equal(seen["proxy-connection"], undefined, "the other hop-by-hop headers still go");
  } finally {
    await worker.dispose();
    await primary.stop();
  }
});

test("Connection naming what is no header name, or Cloudflare's client headers, breaks nothing and strips nothing it must not", async () => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker({ ORIGINS: originsVar(primary, replica), COLO_HEALTH: "off" });
  try {
    await (await worker.fetch("/warm")).arrayBuffer();
    const res = await rawRequest(worker.url, {
      path: "/odd",
      connection: "a b, (y), foo;bar, \"q\", X-Hop, CF-Connecting-IP, X-Forwarded-For, True-Client-IP",
      headers: [
        ["X-Hop", "1"],
        ["X-Forwarded-For", "203.0.113.7"],
        ["True-Client-IP", "203.0.113.7"],
      ],
    });
    assert.equal(res.status, 200);
    const seen = primary.requests.find((r) => r.path === "/odd").headers;
    assert.equal(seen["x-hop"], undefined);
    assert.equal(seen["x-forwarded-for"], "203.0.113.7", "the edge's client headers stay");
    assert.equal(seen["true-client-ip"], "203.0.113.7");
  } finally {
    await worker.dispose();
    await primary.stop();
    await replica.stop();
  }
});
