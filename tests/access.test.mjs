// Cloudflare Access service tokens (access_client_id +
// access_client_secret_var), Access login redirects as failures, and
// per-origin health expectations (health_expect), issue #12, against real
// origins in Miniflare. GETs take the fast path (src/js/entry.mjs), POSTs
// with a body the full path (src/proxy.rs); both are checked.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, eventually, sleep } from "./support/worker.mjs";

const SECRET = "s3cret";
const TOKEN = { access_client_id: "id-1", access_client_secret_var: "PRIMARY_ACCESS_SECRET" };
// What Access answers a request without a valid service token.
const ACCESS_LOGIN = {
  status: 302,
  location: "https://myteam.cloudflareaccess.com/cdn-cgi/access/login/app.example.com?kid=abc&redirect_url=%2Fpage",
};
// A client that sends a service token of its own.
const CLIENT_TOKEN = { "CF-Access-Client-Id": "client-id", "CF-Access-Client-Secret": "client-value" };

function originsJson(...entries) {
  return JSON.stringify(entries.map(([o, extra = {}]) => ({ name: o.name, url: o.url, health_path: "/health", ...extra })));
}

async function setup(entries, vars = {}) {
  const origins = [];
  for (const [name] of entries) origins.push(await startOrigin(name));
  const worker = await startWorker({
    ORIGINS: originsJson(...origins.map((o, i) => [o, entries[i][1]])),
    ...vars,
  });
  const close = async () => {
    await worker.dispose();
    for (const o of origins) await o.stop().catch(() => {});
  };
  return { origins, worker, close };
}

// One request, its body consumed. A POST carries a small body (full path).
async function send(worker, path, { method = "GET", headers = {}, body } = {}) {
  const init = { method, headers };
  if (method === "POST") init.body = body ?? `body of ${path}`;
  const res = await worker.fetch(path, init);
  const text = await res.text();
  return {
    status: res.status,
    servedBy: res.headers.get("x-served-by"),
    failover: res.headers.get("x-failover"),
    location: res.headers.get("location"),
    headers: [...res.headers].map(([k, v]) => `${k}: ${v}`).join("\n"),
    text,
  };
}

const sha = (data) => createHash("sha256").update(data).digest("hex");
const clientRequests = (origin) => origin.requests.filter((r) => r.path !== "/health");
const probes = (origin) => origin.requests.filter((r) => r.path === "/health");
const carriesOurToken = (r) => r.headers["cf-access-client-id"] === "id-1" && r.headers["cf-access-client-secret"] === SECRET;

test("the token origin gets its service token on every attempt and probe, replacing the client's", async () => {
  const { origins, worker, close } = await setup([["guarded", TOKEN], ["open"]], {
    PRIMARY_ACCESS_SECRET: SECRET,
    HEALTH_INTERVAL_MS: "200",
    HEALTH_RISE: "1",
  });
  const [guarded, open] = origins;
  try {
    for (const method of ["GET", "POST"]) {
      for (const headers of [{}, CLIENT_TOKEN]) {
        const r = await send(worker, `/in/${method}`, { method, headers });
        assert.equal(r.servedBy, "guarded");
        const got = guarded.requests.at(-1);
        assert.equal(got.method, method);
        assert.equal(got.headers["cf-access-client-id"], "id-1", `${method} ${JSON.stringify(headers)}`);
        assert.equal(got.headers["cf-access-client-secret"], SECRET, `${method}: ours alone, the client's is gone`);
      }
    }

    // guarded fails: the failed attempt carried the token, the request goes
    // on to open, and open gets nothing of ours.
    guarded.mode = 530;
    const before = guarded.requests.length;
    for (const [method, headers] of [["GET", CLIENT_TOKEN], ["GET", {}], ["POST", CLIENT_TOKEN], ["POST", {}]]) {
      const r = await send(worker, `/out/${method}`, { method, headers });
      assert.equal(r.status, 200);
      assert.equal(r.servedBy, "open");
      assert.equal(r.failover, "open");
    }
    const failed = guarded.requests.slice(before).filter((r) => r.path !== "/health");
    assert.ok(failed.length >= 1, "the first GET tried guarded");
    assert.ok(failed.every(carriesOurToken), "a failed attempt carried the token too");
    assert.equal(clientRequests(open).length, 4);
    for (const r of open.requests) {
      const all = JSON.stringify(r.headers);
      assert.ok(!all.includes(SECRET) && !all.includes("id-1"), `open got our token: ${all}`);
      if (r.headers["cf-access-client-secret"] !== undefined) {
        assert.equal(r.headers["cf-access-client-secret"], "client-value", "only what the client itself sent");
      }
    }
    assert.ok(
      open.requests.some((r) => r.headers["cf-access-client-secret"] === undefined && r.headers["cf-access-client-id"] === undefined),
      "a client without a token arrives at open without one",
    );

    // guarded is probed while down, and every probe carries the token.
    guarded.mode = "ok";
    await eventually(async () => (await send(worker, "/back")).servedBy === "guarded");
    assert.ok(probes(guarded).length >= 1, "guarded was probed");
    assert.ok(probes(guarded).every(carriesOurToken), JSON.stringify(probes(guarded).map((r) => r.headers)));
    assert.ok(clientRequests(guarded).every(carriesOurToken), "every attempt on guarded, fast path and full path");
  } finally {
    await close();
  }
});

test("a failover onto the token origin carries its token (the full path's walk after a fast-path failure)", async () => {
  const { origins, worker, close } = await setup([["open"], ["guarded", TOKEN]], { PRIMARY_ACCESS_SECRET: SECRET });
  const [open, guarded] = origins;
  try {
    open.mode = 530;
    for (const method of ["GET", "GET", "POST"]) {
      const r = await send(worker, "/walk", { method, headers: CLIENT_TOKEN });
      assert.equal(r.status, 200);
      assert.equal(r.servedBy, "guarded");
      assert.equal(r.failover, "guarded");
    }
    assert.equal(clientRequests(guarded).length, 3);
    assert.ok(clientRequests(guarded).every(carriesOurToken), JSON.stringify(guarded.requests.map((r) => r.headers)));
    assert.ok(open.requests.every((r) => !JSON.stringify(r.headers).includes(SECRET)));
  } finally {
    await close();
  }
});

test("the secret never appears in a response, the status endpoint or the logs", async () => {
  const { origins, worker, close } = await setup([["guarded", TOKEN], ["open"]], {
    PRIMARY_ACCESS_SECRET: SECRET,
    STATUS_TOKEN: "tok-status-token-01",
    HEALTH_INTERVAL_MS: "200",
  });
  const [guarded, open] = origins;
  try {
    const seen = [];
    const look = async (path, init) => {
      const r = await send(worker, path, init);
      seen.push(`${path} ${r.status}\n${r.headers}\n${r.text}`);
      return r;
    };
    // guarded answers without echoing what it got (an echo would be the
    // origin's own doing, not a leak).
    guarded.mode = 200;
    assert.equal((await look("/plain")).servedBy, "guarded");
    assert.equal((await look("/plain", { method: "POST", headers: CLIENT_TOKEN })).servedBy, "guarded");
    guarded.mode = ACCESS_LOGIN;
    assert.equal((await look("/login")).servedBy, "open");
    guarded.mode = 503;
    assert.equal((await look("/failed", { method: "POST" })).servedBy, "open"); // open echoes what it got
    open.mode = 502;
    // Both answer with their own 5xx: the client gets the last one as it was sent.
    assert.equal((await look("/none")).status, 503);
    await sleep(300); // a probe of guarded (now due) runs and logs
    await look("/none", { method: "POST" });
    for (const accept of ["application/json", "text/html"]) {
      const r = await look("/__failover/status", { headers: { authorization: "Bearer tok-status-token-01", accept } });
      assert.equal(r.status, 200, accept);
      assert.match(r.text, /guarded/);
      if (accept === "application/json") assert.equal(JSON.parse(r.text).origins[0].access_token, true);
    }
    assert.ok(worker.events("health").length >= 1 && worker.events("attempt_failed").length >= 1, "there were log lines to check");
    for (const text of [...seen, ...worker.logs]) assert.ok(!text.includes(SECRET), `leaked: ${text.slice(0, 300)}`);
  } finally {
    await close();
  }
});

const tokenConfigCases = [
  ["no binding for the secret var", TOKEN, {}, "ORIGINS[0].access_client_secret_var", /names a var that is missing or empty/],
  ["an empty secret", TOKEN, { PRIMARY_ACCESS_SECRET: " \n" }, "ORIGINS[0].access_client_secret_var", /names a var that is missing or empty/],
  ["only access_client_id", { access_client_id: "id-1" }, { PRIMARY_ACCESS_SECRET: SECRET }, "ORIGINS[0].access_client_secret_var", /missing/],
  ["only access_client_secret_var", { access_client_secret_var: "PRIMARY_ACCESS_SECRET" }, { PRIMARY_ACCESS_SECRET: SECRET }, "ORIGINS[0].access_client_id", /missing/],
  ["a secret that cannot be a header value", TOKEN, { PRIMARY_ACCESS_SECRET: `bad\u007f${SECRET}` }, "ORIGINS[0].access_client_secret_var", /./],
];

for (const [name, token, vars, setting, expected] of tokenConfigCases) {
  test(`bad Access token config: ${name}`, async () => {
    const worker = await startWorker({
      ORIGINS: JSON.stringify([{ name: "guarded", url: "http://127.0.0.1:9", ...token }]),
      ...vars,
    });
    try {
      for (const method of ["GET", "POST"]) {
        const res = await worker.fetch("/x", { method, body: method === "POST" ? "x" : undefined });
        assert.equal(res.status, 500);
        const text = await res.text();
        assert.equal(text.trim().split("\n").length, 1, text);
        assert.ok(text.startsWith(`configuration error in ${setting}: `), text);
        assert.match(text, expected);
        assert.ok(!text.includes(SECRET), `the error shows the secret: ${text}`);
      }
      assert.ok(worker.logs.every((l) => !l.includes(SECRET)));
    } finally {
      await worker.dispose();
    }
  });
}

test("a redirect to an Access login fails a GET over, and probes redirected there keep the origin down", async () => {
  const { origins, worker, close } = await setup([["locked", TOKEN], ["open"]], {
    PRIMARY_ACCESS_SECRET: SECRET,
    HEALTH_INTERVAL_MS: "200",
    HEALTH_RISE: "1",
  });
  const [locked, open] = origins;
  try {
    // A fresh isolate's first request takes the full path; the GET below
    // must take the fast path.
    assert.equal((await send(worker, "/warm")).servedBy, "locked");
    locked.mode = ACCESS_LOGIN;
    const r = await send(worker, "/page");
    assert.equal(r.status, 200, "the client never sees the login redirect");
    assert.equal(r.location, null);
    assert.equal(r.servedBy, "open");
    assert.equal(r.failover, "open");
    assert.equal(locked.hits("/page"), 1);
    const failed = worker.events("attempt_failed").find((e) => e.origin === "locked");
    assert.deepEqual(failed, { event: "attempt_failed", origin: "locked", method: "GET", failure: "access login", next: "try open" });
    assert.equal(worker.events("health").find((e) => e.origin === "locked")?.reason, "access login");

    // Down, probed, still redirected: it stays down.
    const probesBefore = locked.hits("/health");
    const until = Date.now() + 1200;
    for (let i = 0; Date.now() < until; i++) {
      const r = await send(worker, "/while", { method: i % 2 === 0 ? "GET" : "POST" });
      assert.equal(r.servedBy, "open");
      await sleep(50);
    }
    assert.ok(locked.hits("/health") - probesBefore >= 3, `probes: ${locked.hits("/health") - probesBefore}`);
    assert.equal(worker.events("health").filter((e) => e.origin === "locked" && e.to === "up").length, 0);
    assert.equal(locked.hits("/while"), 0, "no client request went to the down origin");
    assert.ok(open.hits() > 1);

    // /health answers 200 again: it is back.
    locked.mode = "ok";
    await eventually(async () => (await send(worker, "/back")).servedBy === "locked");
  } finally {
    await close();
  }
});

test("a POST that Access redirected to its login is replayed, whole, to the next origin", async () => {
  const { origins, worker, close } = await setup([["locked", TOKEN], ["open"]], { PRIMARY_ACCESS_SECRET: SECRET });
  const [locked] = origins;
  try {
    locked.mode = ACCESS_LOGIN;
    const body = "o".repeat(20_000);
    const res = await worker.fetch("/orders", { method: "POST", body });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-served-by"), "open");
    assert.equal(res.headers.get("x-failover"), "open");
    const echo = await res.json();
    assert.equal(echo.bodyLength, body.length);
    assert.equal(echo.bodySha, sha(body));
    assert.equal(locked.hits("/orders"), 1);
    assert.ok(worker.events("attempt_failed").some((e) => e.origin === "locked" && e.method === "POST" && e.failure === "access login"));
  } finally {
    await close();
  }
});

test("a redirect anywhere else (a look-alike host included) is the origin's answer", async () => {
  const { origins, worker, close } = await setup([["a"], ["b"]], { STEERING: "failover" });
  const [a, b] = origins;
  try {
    assert.equal((await send(worker, "/warm")).servedBy, "a"); // the GETs below take the fast path
    for (const location of [
      "https://example.com/login",
      "/cdn-cgi/access/login/x",
      "https://myteam.cloudflareaccess.com.evil.example/cdn-cgi/access/login/x",
      "https://evil.example/?next=https://myteam.cloudflareaccess.com/",
    ]) {
      a.mode = { status: 302, location };
      for (const method of ["GET", "POST"]) {
        const r = await send(worker, "/r", { method });
        assert.equal(r.status, 302, `${method} ${location}`);
        assert.equal(r.location, location);
        assert.equal(r.servedBy, "a");
        assert.equal(r.failover, null);
      }
    }
    assert.equal(b.hits(), 0);
    assert.equal(worker.events("health").length, 0);
  } finally {
    await close();
  }
});

// The origin is made to fail once (so it is down and probed), then its
// /health answers 204 for a while, then 200.
async function downThenProbedWith204(expect) {
  const { origins, worker, close } = await setup([["picky", expect === undefined ? {} : { health_expect: expect }], ["spare"]], {
    HEALTH_INTERVAL_MS: "200",
    HEALTH_RISE: "1",
  });
  const [picky] = origins;
  // Warm-up: a fresh isolate's first request takes the full path.
  assert.equal((await send(worker, "/warm")).servedBy, "picky");
  // Client requests are judged by the failure rules, not the expectation:
  // a 204 to a client is an answer, on either path.
  picky.mode = 204;
  for (const method of ["GET", "POST", "GET"]) {
    const r = await send(worker, "/n", { method });
    assert.deepEqual([r.status, r.servedBy, r.failover], [204, "picky", null], method);
  }
  assert.equal(worker.events("health").length, 0, "a 204 to a client marks nothing down");

  picky.mode = 530;
  assert.equal((await send(worker, "/fail")).servedBy, "spare");
  picky.mode = 204;
  const before = picky.hits("/health");
  const served = [];
  const until = Date.now() + 1200;
  while (Date.now() < until) {
    served.push((await send(worker, "/while")).servedBy);
    await sleep(50);
  }
  return { picky, worker, close, served, probes: picky.hits("/health") - before };
}

test('health_expect "200": an origin whose /health answers 204 stays down until it answers 200', async () => {
  const { picky, worker, close, served, probes } = await downThenProbedWith204("200");
  try {
    assert.ok(probes >= 3, `probes: ${probes}`);
    assert.ok(served.every((s) => s === "spare"), `served: ${served}`);
    const ups = worker.events("health").filter((e) => e.origin === "picky" && e.to === "up");
    assert.equal(ups.length, 0, "a 204 probe is not healthy by this expectation");
    picky.mode = "ok";
    await eventually(async () => (await send(worker, "/back")).servedBy === "picky");
  } finally {
    await close();
  }
});

test("without health_expect the same 204 probes bring the origin back (the expectation is what kept it down)", async () => {
  const { worker, close, served } = await downThenProbedWith204(undefined);
  try {
    assert.equal(served.at(-1), "picky", `served: ${served}`);
    assert.ok(worker.events("health").some((e) => e.origin === "picky" && e.to === "up"));
  } finally {
    await close();
  }
});
