// The Worker tried as a hostile client and an unlucky app would (issue 21):
// no POST run twice, no verdict on an origin from one request, the app's
// own answers reach the user, nothing forged reaches either side, and no
// other deployment's verdicts are adopted. Real origins, the built Worker in
// Miniflare.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { startOrigin } from "./support/origin.mjs";
import { startIsolates, startWorker, originsVar, eventually, sleep } from "./support/worker.mjs";

async function setup(vars = {}, originsJson) {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker({ ORIGINS: originsJson ? originsJson(primary, replica) : originsVar(primary, replica), ...vars });
  const close = async () => {
    await worker.dispose();
    await primary.stop().catch(() => {});
    await replica.stop().catch(() => {});
  };
  return { primary, replica, worker, close };
}

// Each origin's health path was asked and answered, nobody is down (`why`
// names what must not have marked one down), and the next request is the
// primary's again.
async function nobodyMarkedDown({ primary, replica, worker }, why) {
  await eventually(() => primary.hits("/health") >= 1 && replica.hits("/health") >= 1);
  await sleep(100);
  assert.deepEqual(worker.events("health"), [], `${why} marked an origin down`);
  const fine = await worker.fetch("/fine");
  assert.equal(fine.headers.get("x-served-by"), "primary");
  assert.equal(fine.headers.get("x-failover"), null);
  await fine.arrayBuffer();
}

const affinityCookie = (res) =>
  (res.headers.getSetCookie?.() ?? []).find((c) => c.startsWith("__tf_affinity="))?.split(";")[0];

// --- 1. Only Access's login page is an Access refusal ------------------------

test("an app's redirect to Access's logout page is its answer: the POST runs once, nobody is marked down", async () => {
  const { primary, replica, worker, close } = await setup();
  try {
    const logout = "https://team.cloudflareaccess.com/cdn-cgi/access/logout";
    primary.pathModes["/logout"] = { status: 303, location: logout };
    primary.pathModes["/home"] = { status: 302, location: "https://team.cloudflareaccess.com/" };
    for (const method of ["POST", "GET"]) {
      const res = await worker.fetch("/logout", { method, body: method === "POST" ? "csrf=1" : undefined });
      assert.equal(res.status, 303, method);
      assert.equal(res.headers.get("location"), logout);
      assert.equal(res.headers.get("x-served-by"), "primary");
      assert.equal(res.headers.get("x-failover"), null);
    }
    const home = await worker.fetch("/home");
    assert.equal(home.status, 302);
    assert.equal(home.headers.get("location"), "https://team.cloudflareaccess.com/");
    assert.equal(primary.requests.filter((r) => r.path === "/logout" && r.method === "POST").length, 1, "the POST ran once");
    assert.equal(replica.hits("/logout") + replica.hits("/home"), 0, "nothing was replayed to the replica");
    assert.deepEqual(worker.events("health"), [], "no origin was marked down");
    assert.deepEqual(worker.events("attempt_failed"), []);
  } finally {
    await close();
  }
});

// --- 2. One request's 5xx is not a verdict; the app's answer reaches the user -

test("one broken page: every origin's own 500 is tried, the client gets the last one as sent, nobody is marked down", async () => {
  const { primary, replica, worker, close } = await setup();
  try {
    primary.pathModes["/broken"] = {
      status: 500,
      headers: { "content-type": "application/json", "x-app": "primary" },
      body: '{"error":"primary bug"}',
    };
    replica.pathModes["/broken"] = {
      status: 503,
      headers: { "content-type": "application/json", "retry-after": "120", "x-app": "replica" },
      body: '{"error":"down for maintenance"}',
    };
    const res = await worker.fetch("/broken");
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "120");
    assert.equal(res.headers.get("x-app"), "replica");
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.equal(res.headers.get("x-served-by"), "replica");
    assert.equal(res.headers.get("x-failover"), "replica");
    assert.equal(await res.text(), '{"error":"down for maintenance"}');

    await nobodyMarkedDown({ primary, replica, worker }, "a page's 500");
  } finally {
    await close();
  }
});

test("a client asking for a broken page as fast as it can: at most one confirmation probe per origin a second", async () => {
  const { primary, replica, worker, close } = await setup();
  try {
    primary.pathModes["/broken"] = 500;
    const started = Date.now();
    for (let i = 0; i < 30; i++) {
      const res = await worker.fetch("/broken");
      assert.equal(res.headers.get("x-served-by"), "replica");
      await res.arrayBuffer();
    }
    const seconds = Math.ceil((Date.now() - started) / 1000);
    await sleep(200);
    assert.ok(primary.hits("/broken") === 30, "every request tried the primary: it is up");
    assert.ok(primary.hits("/health") >= 1, "the app's 500 was checked with a probe");
    assert.ok(primary.hits("/health") <= seconds + 1, `${primary.hits("/health")} probes in ${seconds} s`);
    assert.equal(replica.hits("/health"), 0);
    assert.deepEqual(worker.events("health"), []);
  } finally {
    await close();
  }
});

test("one slow page on every origin: the GET is tried on each, the client gets 504, nobody is marked down", async () => {
  const { primary, replica, worker, close } = await setup({ ATTEMPT_TIMEOUT_MS: "300" });
  try {
    primary.pathModes["/report"] = "hang";
    replica.pathModes["/report"] = "hang";
    const res = await worker.fetch("/report");
    assert.equal(res.status, 504);
    await res.arrayBuffer();
    assert.equal(primary.hits("/report"), 1);
    assert.equal(replica.hits("/report"), 1);
    await nobodyMarkedDown({ primary, replica, worker }, "one slow page");
  } finally {
    await close();
  }
});

test("a POST to a slow handler: 504, not replayed, and the origin stays up", async () => {
  const { primary, replica, worker, close } = await setup({ ATTEMPT_TIMEOUT_MS: "300" });
  try {
    primary.pathModes["/scan"] = "hang";
    const post = await worker.fetch("/scan", { method: "POST", body: "x".repeat(1000) });
    assert.equal(post.status, 504);
    await post.arrayBuffer();
    assert.equal(replica.hits("/scan"), 0, "the POST was replayed after a timeout");
    await eventually(() => primary.hits("/health") >= 1);
    await sleep(100);
    assert.deepEqual(worker.events("health"), []);
    const next = await worker.fetch("/orders", { method: "POST", body: "y" });
    assert.equal(next.headers.get("x-served-by"), "primary");
    await next.arrayBuffer();
  } finally {
    await close();
  }
});

test("an origin's interim 103 or a status of 600 or 101: no crash; a GET is served, a POST runs at most once", async () => {
  const { primary, replica, worker, close } = await setup();
  try {
    primary.pathModes["/hints"] = "early-hints";
    primary.pathModes["/odd"] = 600;
    primary.pathModes["/switch"] = 101; // no Upgrade asked for, no WebSocket
    for (const path of ["/hints", "/odd", "/switch"]) {
      const get = await worker.fetch(path);
      assert.equal(get.status, 200, `GET ${path}`);
      assert.ok(["primary", "replica"].includes(get.headers.get("x-served-by")), `GET ${path}`);
      assert.match(await get.text(), /"path":/);
      const post = await worker.fetch(path, { method: "POST", body: "x" });
      assert.ok(post.status === 200 || post.status === 502, `POST ${path}: ${post.status}`);
      await post.arrayBuffer();
      const ran = primary.requests.filter((r) => r.method === "POST" && r.path === path).length;
      const replayed = replica.requests.filter((r) => r.method === "POST" && r.path === path).length;
      assert.ok(ran + replayed === 1, `POST ${path} ran ${ran + replayed} times`);
    }
    // An odd status is one page's: nobody is marked down for it.
    await sleep(200);
    assert.deepEqual(worker.events("health"), []);
  } finally {
    await close();
  }
});

test("TRACE is answered 405 by the Worker and never reaches an origin (it would echo an Access service token)", async () => {
  const { primary, replica, worker, close } = await setup({ STATUS_TOKEN: "status-t0ken-0123456" });
  try {
    // fetch() refuses to send TRACE: node:http does.
    const trace = (path) =>
      new Promise((resolve, reject) => {
        const req = http.request(`${worker.url}${path}`, { method: "TRACE" }, (res) => {
          res.resume();
          res.on("end", () => resolve(res));
        });
        req.on("error", reject);
        req.end();
      });
    for (const path of ["/", "/x?y=1", "/__failover/status"]) {
      const res = await trace(path);
      assert.equal(res.statusCode, 405, path);
      assert.match(res.headers.allow ?? "", /GET/);
      assert.equal(res.headers["x-served-by"], undefined);
    }
    assert.equal(primary.requests.filter((r) => r.method === "TRACE").length, 0);
    assert.equal(replica.requests.filter((r) => r.method === "TRACE").length, 0);
    const get = await worker.fetch("/after");
    assert.equal(get.headers.get("x-served-by"), "primary");
    await get.arrayBuffer();
  } finally {
    await close();
  }
});

test("an app whose health path agrees is marked down, and POSTs get its own 500 without a replay", async () => {
  const { primary, replica, worker, close } = await setup();
  try {
    primary.mode = 500; // every path, /health included
    const post = await worker.fetch("/orders", { method: "POST", body: "x" });
    assert.equal(post.status, 500);
    assert.equal(post.headers.get("x-served-by"), "primary");
    assert.equal(await post.text(), "primary says 500\n");
    assert.equal(replica.hits("/orders"), 0, "the POST was not replayed");
    await eventually(() => worker.events("health").length > 0);
    assert.equal(worker.events("health")[0].reason, "status 500 from the app, then the probe: status 500");
    const after = await worker.fetch("/orders", { method: "POST", body: "y" });
    assert.equal(after.headers.get("x-served-by"), "replica");
    await after.arrayBuffer();
  } finally {
    await close();
  }
});

// --- 3. A weight-0 backup keeps nobody once a weighted origin is back ------

for (const failover of ["temporary", "sticky"]) {
  test(`AFFINITY_FAILOVER=${failover}: a weight-0 backup pins only while no weighted origin is up`, async () => {
    const origins = (a, b) =>
      JSON.stringify([
        { name: "main", url: a.url, weight: 1, health_path: "/health" },
        { name: "backup", url: b.url, weight: 0, health_path: "/health" },
      ]);
    const { primary: main, worker, close } = await setup(
      { STEERING: "weighted", AFFINITY: "cookie", AFFINITY_FAILOVER: failover, HEALTH_INTERVAL_MS: "200", HEALTH_RISE: "1" },
      origins,
    );
    try {
      const first = await worker.fetch("/first");
      const mainPin = affinityCookie(first);
      assert.ok(mainPin, "a new client is pinned to main");
      await first.arrayBuffer();

      // main fails mid-request while still up: the backup serves, pins nobody.
      main.mode = 530;
      const during = await worker.fetch("/during");
      assert.equal(during.headers.get("x-served-by"), "backup");
      assert.equal(affinityCookie(during), undefined, "pinned to the backup while main was up");
      await during.arrayBuffer();

      // main is down: a new client may be pinned to the backup.
      const outage = await worker.fetch("/outage");
      assert.equal(outage.headers.get("x-served-by"), "backup");
      const backupPin = affinityCookie(outage);
      assert.ok(backupPin, "no weighted origin is up: the backup may pin");
      await outage.arrayBuffer();

      main.mode = "ok";
      await eventually(async () => {
        const r = await worker.fetch("/probe-back");
        await r.arrayBuffer();
        return r.headers.get("x-served-by") === "main";
      });
      // The backup's pin is ignored on both paths, and the client is moved back.
      for (const method of ["GET", "POST", "GET"]) {
        const res = await worker.fetch("/back", { method, body: method === "POST" ? "x" : undefined, headers: { cookie: `theme=dark; ${backupPin}` } });
        assert.equal(res.headers.get("x-served-by"), "main", method);
        assert.equal(res.headers.get("x-failover"), null, method);
        assert.equal(affinityCookie(res), mainPin, `${method}: re-pinned to main`);
        await res.arrayBuffer();
      }
    } finally {
      await close();
    }
  });
}

// --- 4. A slow upload is not a silent origin -------------------------------

test("SILENCE_MS: a client trickling an upload does not make a healthy origin silent", async () => {
  const { primary, worker, close } = await setup({ SILENCE_MS: "200", ATTEMPT_TIMEOUT_MS: "5000" });
  try {
    const u = new URL(worker.url);
    const upload = new Promise((resolve, reject) => {
      const req = http.request(
        { host: u.hostname, port: u.port, path: "/upload", method: "POST", headers: { "transfer-encoding": "chunked" } },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (c) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode, servedBy: res.headers["x-served-by"], text }));
        },
      );
      req.on("error", reject);
      let n = 0;
      const timer = setInterval(() => {
        req.write(`chunk ${n}\n`);
        if (++n === 8) {
          clearInterval(timer);
          req.end();
        }
      }, 150);
    });
    await sleep(700); // the upload has been going on for more than SILENCE_MS
    for (const path of ["/meanwhile", "/meanwhile2"]) {
      const res = await worker.fetch(path);
      assert.equal(res.headers.get("x-served-by"), "primary", path);
      assert.equal(res.headers.get("x-failover"), null, `${path}: routed around a healthy origin`);
      await res.arrayBuffer();
    }
    const done = await upload;
    assert.equal(done.status, 200);
    assert.equal(done.servedBy, "primary");
    assert.equal(JSON.parse(done.text).bodyLength, "chunk 0\n".length * 8);
    assert.equal(primary.hits("/upload"), 1);
  } finally {
    await close();
  }
});

// --- 5. x-failover and X-Served-By are ours; X-Forwarded-* are the truth -----

for (const [name, vars] of [
  ["failover", {}],
  ["weighted (the steered fast path)", { STEERING: "weighted" }],
]) {
  test(`${name}: an origin's x-failover never reaches the client; X-Forwarded-Host/-Proto are set, never the client's`, async () => {
    const { primary, replica, worker, close } = await setup(vars);
    try {
      const forged = { "x-failover": "evil", "x-served-by": "evil" };
      primary.extraHeaders = forged;
      replica.extraHeaders = forged;
      const host = new URL(worker.url).host;
      const lies = { "x-forwarded-host": "evil.example", "x-forwarded-proto": "gopher" };
      const weighted = vars.STEERING === "weighted";
      for (const method of ["GET", "POST", "GET"]) {
        const res = await worker.fetch(`/${method}`, { method, headers: lies, body: method === "POST" ? "x" : undefined });
        const served = res.headers.get("x-served-by");
        assert.ok(served === "primary" || (weighted && served === "replica"), `${method}: ${served}`);
        assert.equal(res.headers.get("x-failover"), null, method);
        const seen = (await res.json()).headers;
        assert.equal(seen["x-forwarded-host"], host, method);
        assert.equal(seen["x-forwarded-proto"], "http", method);
      }
      // After a failover the marker names the origin that served, not the origin's claim.
      primary.mode = 530;
      replica.extraHeaders = forged;
      for (const method of ["GET", "POST"]) {
        const res = await worker.fetch(`/after-${method}`, { method, headers: lies, body: method === "POST" ? "x" : undefined });
        assert.equal(res.headers.get("x-served-by"), "replica");
        if (!weighted) assert.equal(res.headers.get("x-failover"), "replica");
        else assert.notEqual(res.headers.get("x-failover"), "evil");
        const seen = (await res.json()).headers;
        assert.equal(seen["x-forwarded-host"], host);
        assert.equal(seen["x-forwarded-proto"], "http");
      }
    } finally {
      await close();
    }
  });
}

// --- 7. A huge Cookie header costs a linear parse ----------------------------

test("a 120 KiB Cookie of ';' is parsed (affinity and a cookie hash key) and answered", async () => {
  const { worker, close } = await setup({ STEERING: "hash", HASH_KEY: "cookie:sid", AFFINITY: "cookie" });
  try {
    const cookie = `${";".repeat(120 * 1024)}sid=abc`;
    for (let i = 0; i < 3; i++) {
      const res = await worker.fetch("/big-cookie", { headers: { cookie } });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    }
  } finally {
    await close();
  }
});

// --- 8. Colo verdicts belong to one deployment -----------------------------

test("colo: a staging Worker's 'primary' going down is never adopted by production's 'primary'", async () => {
  const stagingPrimary = await startOrigin("primary");
  const productionPrimary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const token = "t0ken-t0ken-t0ken";
  const isolates = await startIsolates([
    { name: "staging", bindings: { ORIGINS: originsVar(stagingPrimary, replica), STATUS_TOKEN: token } },
    { name: "production", bindings: { ORIGINS: originsVar(productionPrimary, replica), STATUS_TOKEN: token } },
  ]);
  const status = async (name) => (await isolates.fetch(name, "/__failover/status", { headers: { authorization: `Bearer ${token}` } })).json();
  try {
    await stagingPrimary.stop(); // refused: staging marks its primary down and shares that
    const res = await isolates.fetch("staging", "/page");
    assert.equal(res.headers.get("x-served-by"), "replica");
    await res.arrayBuffer();
    await eventually(async () => (await status("staging")).origins[0].colo?.state === "down");
    await sleep(300); // production's colo read is due
    for (let i = 0; i < 3; i++) {
      const r = await isolates.fetch("production", `/page${i}`);
      assert.equal(r.headers.get("x-served-by"), "primary", "production adopted staging's verdict");
      assert.equal(r.headers.get("x-failover"), null);
      await r.arrayBuffer();
      await sleep(300);
    }
    const doc = await status("production");
    assert.equal(doc.origins[0].local.state, "up");
    assert.equal(doc.origins[0].colo, null, "production read staging's cache entry");
  } finally {
    await isolates.dispose();
    await productionPrimary.stop();
    await replica.stop();
  }
});
