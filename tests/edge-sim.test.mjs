// The system run's doubles, proved against each other with real processes:
// the edge simulator in-process, the cloudflared double as its own process
// (so killing it is a real SIGKILL), the app and the uplink in-process.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { startEdge } from "./system/edge.mjs";
import { startApp } from "./system/app.mjs";
import { startUplink } from "./system/uplink.mjs";
import { startOrigin } from "./support/origin.mjs";
import { eventually } from "./support/worker.mjs";

const connectorPath = fileURLToPath(new URL("./system/connector.mjs", import.meta.url));
const UNREACHABLE =
  "Unable to reach the origin service. The service may be down or it may not be responding to traffic from cloudflared";
// A regression that hangs a request fails its test instead of the suite.
const bounded = { timeout: 20000 };
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

async function edgeWith(t, tunnels = ["primary"]) {
  const events = [];
  const edge = await startEdge({ tunnels, onEvent: (e) => events.push(e) });
  t.after(() => edge.close());
  return { edge, events };
}

async function appFor(t, name) {
  const app = await startApp(name);
  t.after(() => app.stop());
  return app;
}

const connectAddr = (tunnel) => ({ host: tunnel.connectHost, port: tunnel.connectPort });

// Starts the connector double as a process and waits for its metrics
// listener; it is SIGKILLed when the test ends, whatever happened.
async function spawnConnector(t, { edge, app, id, ha = 4 }) {
  const args = ["--edge", `${edge.host}:${edge.port}`, "--app", app, "--metrics", "127.0.0.1:0", "--id", id];
  const child = spawn(process.execPath, [connectorPath, ...args, "--ha-connections", String(ha)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  t.after(() => child.kill("SIGKILL"));
  const metrics = await new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).on("line", (line) => {
      const event = JSON.parse(line);
      if (event.event === "listening") resolve(event.metrics);
    });
    child.once("exit", (code) => reject(new Error(`connector ${id} exited with ${code} before listening`)));
  });
  return { child, readyUrl: `http://${metrics}/ready` };
}

async function ready(connector) {
  const res = await fetch(connector.readyUrl);
  return { status: res.status, body: await res.json() };
}

const registered = (tunnel, n) => eventually(() => tunnel.registrations() === n);

test("a tunnel with no connector answers 530 error code 1033", bounded, async (t) => {
  const { edge } = await edgeWith(t);
  const res = await fetch(`${edge.tunnel("primary").publicUrl}/anything`);
  assert.equal(res.status, 530);
  assert.equal(res.headers.get("content-type"), "text/plain; charset=UTF-8");
  assert.equal(res.headers.get("server"), "cloudflare");
  assert.match(res.headers.get("cf-ray"), /^[0-9a-f]{16}-SIM$/);
  assert.match(await res.text(), /error code: 1033/);
  assert.deepEqual(
    edge.tunnel("primary").served.map((s) => [s.connectorId, s.status]),
    [[null, 530]],
  );
});

test("a connector serves a GET and a 1 MiB POST to its app, the body intact", bounded, async (t) => {
  const { edge, events } = await edgeWith(t);
  const tunnel = edge.tunnel("primary");
  const app = await appFor(t, "a");
  const connector = await spawnConnector(t, { edge: connectAddr(tunnel), app: app.url, id: "node-a" });
  await registered(tunnel, 4);
  assert.deepEqual(await ready(connector), {
    status: 200,
    body: { status: 200, readyConnections: 4, connectorId: "node-a" },
  });
  assert.deepEqual(
    events.map((e) => [e.event, e.connectorId]),
    Array(4).fill(["register", "node-a"]),
  );

  const get = await fetch(`${tunnel.publicUrl}/page?x=1`);
  assert.equal(get.status, 200);
  assert.equal(await get.text(), "app=a\n");
  assert.equal(get.headers.get("server"), "cloudflare");
  assert.match(get.headers.get("cf-ray"), /-SIM$/);
  // The app sees the public hostname and the path as sent, like behind a tunnel.
  assert.equal(app.requests[0].host, new URL(tunnel.publicUrl).host);
  assert.equal(app.requests[0].path, "/page?x=1");

  // Hop-by-hop headers stop at each hop; end-to-end ones and cf-ray go on.
  const hop = await new Promise((resolve, reject) => {
    const headers = { connection: "x-hop", "x-hop": "1", "proxy-authorization": "Basic eA==", "x-end": "kept" };
    http.get(`${tunnel.publicUrl}/hop`, { headers }, resolve).on("error", reject);
  });
  hop.resume();
  const seen = app.requests.at(-1).headers;
  assert.equal(seen["x-end"], "kept");
  assert.equal(seen["x-hop"], undefined);
  assert.equal(seen["proxy-authorization"], undefined);
  assert.equal(seen["cf-ray"], hop.headers["cf-ray"]);

  const body = randomBytes(1 << 20);
  const post = await fetch(`${tunnel.publicUrl}/orders`, { method: "POST", headers: { "x-request-id": "r1" }, body });
  assert.equal(post.status, 201);
  assert.deepEqual(await post.json(), { app: "a", id: "r1", bytes: body.length, sha256: sha256(body) });
  assert.equal(app.executed.get("r1"), 1);
  assert.deepEqual(
    tunnel.served.map((s) => [s.connectorId, s.method, s.path, s.status]),
    [
      ["node-a", "GET", "/page?x=1", 200],
      ["node-a", "GET", "/hop", 200],
      ["node-a", "POST", "/orders", 201],
    ],
  );
});

test("a 2 MiB response streams through whole", bounded, async (t) => {
  const { edge } = await edgeWith(t);
  const tunnel = edge.tunnel("primary");
  const big = randomBytes(2 << 20);
  const origin = http.createServer((req, res) => res.end(big));
  origin.listen(0, "127.0.0.1");
  await once(origin, "listening");
  t.after(() => origin.close());
  const app = `http://127.0.0.1:${origin.address().port}`;
  await spawnConnector(t, { edge: connectAddr(tunnel), app, id: "node-a" });
  await registered(tunnel, 4);
  const res = await fetch(`${tunnel.publicUrl}/big`);
  assert.equal(sha256(Buffer.from(await res.arrayBuffer())), sha256(big));
});

test("app down: the connector answers 502 with cloudflared's text and stays ready", bounded, async (t) => {
  const { edge } = await edgeWith(t);
  const tunnel = edge.tunnel("primary");
  const app = await appFor(t, "a");
  const connector = await spawnConnector(t, { edge: connectAddr(tunnel), app: app.url, id: "node-a" });
  await registered(tunnel, 4);
  await app.stop();
  const res = await fetch(`${tunnel.publicUrl}/page`);
  assert.equal(res.status, 502);
  assert.equal(await res.text(), UNREACHABLE);
  // cloudflared does not watch its app: readiness is about the edge.
  assert.equal((await ready(connector)).status, 200);
  await app.start();
  assert.equal((await fetch(`${tunnel.publicUrl}/page`)).status, 200);
});

test("two connectors on one tunnel each serve a fair share", bounded, async (t) => {
  const { edge } = await edgeWith(t);
  const tunnel = edge.tunnel("primary");
  const app = await appFor(t, "a");
  await spawnConnector(t, { edge: connectAddr(tunnel), app: app.url, id: "node-a" });
  await spawnConnector(t, { edge: connectAddr(tunnel), app: app.url, id: "node-b" });
  await registered(tunnel, 8);
  for (let batch = 0; batch < 20; batch++) {
    await Promise.all(
      Array.from({ length: 10 }, async () => assert.equal((await fetch(`${tunnel.publicUrl}/`)).status, 200)),
    );
  }
  const share = (id) => tunnel.served.filter((s) => s.connectorId === id).length / tunnel.served.length;
  assert.equal(tunnel.served.length, 200);
  assert.ok(share("node-a") > 0.25 && share("node-b") > 0.25, `shares ${share("node-a")} / ${share("node-b")}`);
});

test("a killed connector is unregistered at once; with none left the tunnel answers 530", bounded, async (t) => {
  const { edge, events } = await edgeWith(t);
  const tunnel = edge.tunnel("primary");
  const app = await appFor(t, "a");
  const connector = await spawnConnector(t, { edge: connectAddr(tunnel), app: app.url, id: "node-a" });
  await registered(tunnel, 4);
  connector.child.kill("SIGKILL");
  await eventually(() => tunnel.registrations() === 0, { timeoutMs: 500, everyMs: 10 });
  assert.deepEqual(
    events.filter((e) => e.event === "unregister").map((e) => e.reason),
    Array(4).fill("connection closed"),
  );
  const res = await fetch(`${tunnel.publicUrl}/page`);
  assert.equal(res.status, 530);
  assert.match(await res.text(), /error code: 1033/);
});

test("a connection lost before response headers is the edge's 502", bounded, async (t) => {
  const { edge } = await edgeWith(t);
  const tunnel = edge.tunnel("primary");
  const origin = await startOrigin("hung");
  t.after(() => origin.stop());
  origin.mode = "hang";
  const connector = await spawnConnector(t, { edge: connectAddr(tunnel), app: origin.url, id: "node-a" });
  await registered(tunnel, 4);
  const pending = fetch(`${tunnel.publicUrl}/order`, { method: "POST", body: "x" });
  // The request reached the app before the connection died: ambiguous.
  await eventually(() => origin.hits("/order") === 1);
  connector.child.kill("SIGKILL");
  const res = await pending;
  assert.equal(res.status, 502);
  assert.equal(await res.text(), "error code: 502");
});

test("an app dying mid-body fails the client's response instead of shortening it", bounded, async (t) => {
  const { edge } = await edgeWith(t);
  const tunnel = edge.tunnel("primary");
  // Chunked, no content-length: only the reset tells the client the body
  // is not whole.
  const origin = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/octet-stream" });
    res.write("x".repeat(1000));
    setTimeout(() => res.socket.destroy(), 20);
  });
  origin.listen(0, "127.0.0.1");
  await once(origin, "listening");
  t.after(() => origin.close());
  const app = `http://127.0.0.1:${origin.address().port}`;
  await spawnConnector(t, { edge: connectAddr(tunnel), app, id: "node-a" });
  await registered(tunnel, 4);
  const res = await fetch(`${tunnel.publicUrl}/file`);
  assert.equal(res.status, 200);
  await assert.rejects(res.arrayBuffer());
});

test("a frozen connector is dropped at its first unanswered PING and re-registers on thaw", bounded, async (t) => {
  const { edge, events } = await edgeWith(t);
  const tunnel = edge.tunnel("primary");
  const app = await appFor(t, "a");
  const connector = await spawnConnector(t, { edge: connectAddr(tunnel), app: app.url, id: "node-a", ha: 2 });
  await registered(tunnel, 2);
  // Its sockets stay open (the kernel still ACKs): only PING can tell.
  connector.child.kill("SIGSTOP");
  t.after(() => connector.child.kill("SIGCONT"));
  await registered(tunnel, 0);
  assert.deepEqual(
    events.filter((e) => e.event === "unregister").map((e) => e.reason),
    ["ping timeout", "ping timeout"],
  );
  connector.child.kill("SIGCONT");
  await registered(tunnel, 2);
  assert.equal((await fetch(`${tunnel.publicUrl}/`)).status, 200);
});

test("an uplink cut takes registrations and egress at once; restore brings both back", bounded, async (t) => {
  const { edge } = await edgeWith(t);
  const tunnel = edge.tunnel("primary");
  const app = await appFor(t, "a");
  const uplink = await startUplink([connectAddr(tunnel), { host: edge.traceHost, port: edge.tracePort }]);
  t.after(() => uplink.close());
  const [toConnect, toTrace] = uplink.addrs;
  const traceUrl = `http://${toTrace.host}:${toTrace.port}/cdn-cgi/trace`;
  const connector = await spawnConnector(t, { edge: toConnect, app: app.url, id: "node-a" });
  await registered(tunnel, 4);
  assert.match(await (await fetch(traceUrl)).text(), /^fl=sim\n(.*\n)*warp=off\n$/);

  uplink.cut();
  assert.ok(uplink.isCut);
  await eventually(() => tunnel.registrations() === 0, { timeoutMs: 500, everyMs: 10 });
  assert.equal((await fetch(`${tunnel.publicUrl}/page`)).status, 530);
  await eventually(async () => (await ready(connector)).status === 503, { timeoutMs: 500, everyMs: 10 });
  assert.deepEqual((await ready(connector)).body, { status: 503, readyConnections: 0, connectorId: "node-a" });
  // Black-holed: the egress check gets no answer at all, only its own timeout.
  await assert.rejects(fetch(traceUrl, { signal: AbortSignal.timeout(300) }), { name: "TimeoutError" });

  // The dials caught in the black hole recover only by the connector's own
  // handshake deadline: this proves it does not hang on them.
  uplink.restore();
  await registered(tunnel, 4);
  assert.equal(await (await fetch(`${tunnel.publicUrl}/page`)).text(), "app=a\n");
  assert.equal((await fetch(traceUrl)).status, 200);
  assert.equal((await ready(connector)).status, 200);
});

test("the connector process: exits 0 on SIGTERM, 2 with one line naming a bad argument", bounded, async (t) => {
  // No edge to reach: it keeps dialling, and still stops cleanly.
  const lonely = await spawnConnector(t, { edge: { host: "127.0.0.1", port: 1 }, app: "http://127.0.0.1:1", id: "x" });
  assert.equal((await ready(lonely)).status, 503);
  lonely.child.kill("SIGTERM");
  assert.deepEqual(await once(lonely.child, "exit"), [0, null]);

  const good = { "--edge": "127.0.0.1:1", "--app": "http://127.0.0.1:1", "--metrics": "127.0.0.1:0", "--id": "x" };
  for (const [change, named] of [
    [{ "--edge": "nowhere" }, "--edge"],
    [{ "--app": "ftp://x" }, "--app"],
    [{ "--metrics": undefined }, "--metrics"],
    [{ "--id": undefined }, "--id"],
    [{ "--ha-connections": "0" }, "--ha-connections"],
    [{ "--colour": "red" }, "--colour"],
  ]) {
    const args = Object.entries({ ...good, ...change }).flatMap(([flag, v]) => (v === undefined ? [] : [flag, v]));
    const run = spawnSync(process.execPath, [connectorPath, ...args], { encoding: "utf8", timeout: 5000 });
    assert.equal(run.status, 2, `${args.join(" ")}: ${run.stderr}`);
    assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
    assert.ok(run.stderr.includes(named), run.stderr);
  }
});
