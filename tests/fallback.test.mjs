// FALLBACK: the page a GET or HEAD gets once every origin has failed, in
// front of real origins and a real status host. The status host is an
// https URL (the only kind FALLBACK accepts); Miniflare's outboundService
// carries the Worker's fetches of https://status.test to a loopback origin
// and every other fetch on as it is.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { fetch as mfFetch } from "miniflare";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, originsVar, eventually } from "./support/worker.mjs";

const STATUS_HOST = "status.test";

// outboundService: https://status.test/... goes to `statusHost` (a loopback
// origin) with its path and query as they are; anything else goes where
// it was sent.
function outboundTo(statusHost) {
  return async (req) => {
    const url = new URL(req.url);
    if (url.hostname === STATUS_HOST) {
      url.protocol = "http:";
      url.host = `127.0.0.1:${statusHost.port}`;
    }
    const headers = new Headers(req.headers);
    headers.delete("host");
    const init = { method: req.method, headers, redirect: "manual" };
    if (req.body !== null && req.method !== "GET" && req.method !== "HEAD") {
      init.body = req.body;
      init.duplex = "half";
    }
    return mfFetch(url, init);
  };
}

// Two origins and a status host; `fallback` is FALLBACK's value (an object
// binding, as wrangler.toml's `FALLBACK = { url = ... }` arrives).
async function setup(fallback, vars = {}, statusHost) {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const status = statusHost ?? (await startOrigin("status"));
  const worker = await startWorker(
    { ORIGINS: originsVar(primary, replica), ATTEMPT_TIMEOUT_MS: 1000, FALLBACK: fallback, ...vars },
    { outbound: outboundTo(status) },
  );
  const close = async () => {
    await worker.dispose();
    for (const o of [primary, replica, status]) await o.stop().catch(() => {});
  };
  return { primary, replica, status, worker, close };
}

const PAGE = { status: 200, headers: { "content-type": "text/html; charset=utf-8", "set-cookie": "status=1", "strict-transport-security": "max-age=1", "content-language": "en" }, body: "<p>Back soon.</p>" };

// Both Tunnels lost their connectors: the edge answers 530 (error 1033),
// and the first attempt to each origin marks it down. (A refused
// connection would not do here: through outboundService, Miniflare turns
// it into a 500 of its own.)
function allDown(primary, replica) {
  primary.mode = 530;
  replica.mode = 530;
}

test("every origin down: a GET gets the fallback URL's page as a 503, the request's path and headers never reach it", async () => {
  const { primary, replica, status, worker, close } = await setup({ url: `https://${STATUS_HOST}/down.html?v=1` });
  try {
    status.pathModes["/down.html?v=1"] = PAGE;
    allDown(primary, replica);
    for (const path of ["/", "/account/settings?tab=2", "/../../etc/passwd", "//evil.example/x"]) {
      const res = await worker.fetch(path, { headers: { cookie: "session=secret", authorization: "Bearer client" } });
      assert.equal(res.status, 503, path);
      assert.equal(res.headers.get("x-failover"), "fallback");
      assert.equal(res.headers.get("retry-after"), "15", "HEALTH_INTERVAL_MS in seconds");
      assert.equal(res.headers.get("cache-control"), "no-store");
      assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
      assert.equal(res.headers.get("content-language"), "en");
      assert.equal(res.headers.get("set-cookie"), null, "the status host's cookies are not the site's");
      assert.equal(res.headers.get("strict-transport-security"), null);
      assert.equal(res.headers.get("x-served-by"), null);
      assert.equal(await res.text(), PAGE.body);
    }
    const seen = status.requests;
    assert.equal(seen.length, 4);
    for (const r of seen) {
      assert.equal(r.path, "/down.html?v=1", "fetched as configured, whatever the request's path");
      assert.equal(r.method, "GET");
      assert.equal(r.headers.cookie, undefined, "the client's cookies stay with the site");
      assert.equal(r.headers.authorization, undefined);
    }
    const head = await worker.fetch("/x", { method: "HEAD" });
    assert.equal(head.status, 503);
    assert.equal(head.headers.get("x-failover"), "fallback");
    assert.equal(await head.text(), "");
    assert.equal(status.requests.at(-1).method, "HEAD");
  } finally {
    await close();
  }
});

test("other methods get today's error, never the fallback", async () => {
  const { primary, replica, status, worker, close } = await setup({ url: `https://${STATUS_HOST}/` });
  try {
    allDown(primary, replica);
    for (const method of ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"]) {
      const body = method === "OPTIONS" || method === "DELETE" ? undefined : "x=1";
      const res = await worker.fetch("/form", { method, body });
      assert.equal(res.status, 502, method);
      assert.equal(res.headers.get("x-failover"), null, method);
      assert.match(await res.text(), /no origin is available/);
    }
    assert.equal(status.requests.length, 0, "the status host was never asked");
  } finally {
    await close();
  }
});

test("a fallback page kept in a var (html_var), for GET and HEAD", async () => {
  const page = "<!doctype html><title>Down</title><p>Back soon.</p>";
  const { primary, replica, worker, close } = await setup(
    { html_var: "DOWN_PAGE" },
    { DOWN_PAGE: page, HEALTH_INTERVAL_MS: 2500, STATUS_TOKEN: "t0ken-for-the-status-test" },
  );
  try {
    // The status document says which kind is configured, never the page.
    const doc = await worker.fetch("/__failover/status", { headers: { authorization: "Bearer t0ken-for-the-status-test" } });
    const text = await doc.text();
    assert.equal(JSON.parse(text).fallback, "html_var");
    assert.ok(!text.includes("Back soon"), text);
    allDown(primary, replica);
    const res = await worker.fetch("/anything");
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(res.headers.get("retry-after"), "3");
    assert.equal(res.headers.get("x-failover"), "fallback");
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.equal(await res.text(), page);
    const head = await worker.fetch("/anything", { method: "HEAD" });
    assert.equal(head.status, 503);
    assert.equal(await head.text(), "");
  } finally {
    await close();
  }
});

test("an origin up, or one page's 5xx on every origin, is no reason for the fallback", async () => {
  const { primary, replica, status, worker, close } = await setup({ url: `https://${STATUS_HOST}/` });
  try {
    status.mode = PAGE;
    primary.mode = 530;
    const ok = await worker.fetch("/page");
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get("x-served-by"), "replica");
    await ok.arrayBuffer();
    // Both apps answer /broken with their own 500; their health paths are fine.
    replica.pathModes["/broken"] = { status: 500, headers: { "retry-after": "7" }, body: "replica's own error" };
    const broken = await worker.fetch("/broken");
    assert.equal(broken.status, 500);
    assert.equal(await broken.text(), "replica's own error");
    assert.equal(broken.headers.get("x-served-by"), "replica");
    assert.equal(status.requests.length, 0);
  } finally {
    await close();
  }
});

test("every app answering 5xx: its own answer until the probes call every origin down, then the fallback", async () => {
  const { primary, replica, status, worker, close } = await setup({ url: `https://${STATUS_HOST}/` });
  try {
    status.mode = PAGE;
    primary.mode = 503;
    replica.mode = 502;
    const first = await worker.fetch("/page");
    assert.equal(first.status, 502, "the last app's own answer, as without a fallback");
    assert.equal(await first.text(), "replica says 502\n");
    await eventually(() => worker.events("health").filter((e) => e.to === "down").length === 2);
    const res = await worker.fetch("/page");
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("x-failover"), "fallback");
    assert.equal(await res.text(), PAGE.body);
  } finally {
    await close();
  }
});

test("a fallback that redirects is followed on https, at most 3 times", async () => {
  const { primary, replica, status, worker, close } = await setup({ url: `https://${STATUS_HOST}/a` });
  try {
    allDown(primary, replica);
    status.pathModes["/a"] = { status: 301, location: "/b" };
    status.pathModes["/b"] = { status: 302, location: `//${STATUS_HOST}/c?x=1` };
    status.pathModes["/c?x=1"] = { status: 307, location: `https://${STATUS_HOST}/page` };
    status.pathModes["/page"] = PAGE;
    const res = await worker.fetch("/");
    assert.equal(res.status, 503);
    assert.equal(await res.text(), PAGE.body);
    assert.deepEqual(
      status.requests.map((r) => r.path),
      ["/a", "/b", "/c?x=1", "/page"],
    );
    // One more hop is one too many: today's error.
    status.pathModes["/page"] = { status: 308, location: "/end" };
    status.pathModes["/end"] = PAGE;
    const tooMany = await worker.fetch("/");
    assert.equal(tooMany.status, 502);
    assert.match(await tooMany.text(), /no origin is available/);
    // A redirect to clear text, or to an Access login, is never followed.
    status.pathModes["/a"] = { status: 302, location: `http://${STATUS_HOST}/page` };
    const clear = await worker.fetch("/");
    assert.equal(clear.status, 502);
    await clear.arrayBuffer();
    status.pathModes["/a"] = { status: 302, location: "https://team.cloudflareaccess.com/cdn-cgi/access/login/status.test" };
    const login = await worker.fetch("/");
    assert.equal(login.status, 502);
    await login.arrayBuffer();
    const reasons = worker.events("fallback_failed").map((e) => e.reason);
    assert.deepEqual(reasons, [
      "more than 3 redirects",
      "a redirect the fallback does not follow: must start with https://: the page is served under the site's own name",
      "access login",
    ]);
    assert.ok(!JSON.stringify(worker.events("fallback_failed")).includes(STATUS_HOST), "no URL in the log");
  } finally {
    await close();
  }
});

for (const [name, mode, reason] of [
  ["answers 5xx", 500, "status 500"],
  ["answers 404", 404, "status 404"],
  ["hangs (bounded by ATTEMPT_TIMEOUT_MS)", "hang", "timeout"],
]) {
  test(`a fallback that ${name} gives today's error`, async () => {
    const { primary, replica, status, worker, close } = await setup({ url: `https://${STATUS_HOST}/` });
    try {
      allDown(primary, replica);
      status.mode = mode;
      const res = await worker.fetch("/page");
      assert.equal(res.status, 502);
      assert.equal(res.headers.get("x-failover"), null);
      assert.match(await res.text(), /no origin is available|could not be reached/);
      assert.deepEqual(worker.events("fallback_failed").map((e) => e.reason), [reason]);
    } finally {
      await close();
    }
  });
}

test("a fallback page of any size streams through, never held whole", async () => {
  // The status host sends one chunk, then waits for the client to have read
  // it before sending more: a Worker that held the body would never let
  // the client read the first chunk, and the test would time out.
  let release;
  const released = new Promise((r) => (release = r));
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/octet-stream" });
    res.write(Buffer.alloc(64 * 1024, 0x61));
    released.then(() => {
      // 16 MiB more, which nothing may hold in full.
      let left = 256;
      const more = () => {
        while (left > 0) {
          left--;
          if (!res.write(Buffer.alloc(64 * 1024, 0x62))) return res.once("drain", more);
        }
        res.end();
      };
      more();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const statusHost = { port: server.address().port, stop: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
  const { primary, replica, worker, close } = await setup({ url: `https://${STATUS_HOST}/big` }, {}, statusHost);
  try {
    allDown(primary, replica);
    const res = await worker.fetch("/");
    assert.equal(res.status, 503);
    const reader = res.body.getReader();
    let read = 0;
    while (read < 64 * 1024) {
      const { value, done } = await reader.read();
      assert.ok(!done, "ended early");
      read += value.length;
    }
    release();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      read += value.length;
    }
    assert.equal(read, 64 * 1024 * 257);
  } finally {
    release();
    await close();
  }
});

test("a hostile or broken FALLBACK is a config error naming the setting; the value is in the log alone", async () => {
  const cases = [
    [{ url: "http://status.example/hunter2" }, "FALLBACK.url", /must start with https:\/\//],
    [{ url: "https://admin:hunter2@status.example/" }, "FALLBACK.url", /credentials/],
    [{ html_var: "HUNTER2_PAGE" }, "FALLBACK.html_var", /names a var that is missing or empty/],
    [{ url: "https://status.example/", html_var: "HUNTER2" }, "FALLBACK", /exactly one of url and html_var/],
    ["hunter2", "FALLBACK", /is not valid JSON/],
  ];
  for (const [value, setting, problem] of cases) {
    const worker = await startWorker({ ORIGINS: JSON.stringify([{ name: "a", url: "http://127.0.0.1:9" }]), FALLBACK: value });
    try {
      const res = await worker.fetch("/");
      assert.equal(res.status, 500);
      const text = await res.text();
      assert.ok(text.startsWith(`configuration error in ${setting}: `), text);
      assert.match(text, problem);
      assert.ok(!/hunter2/i.test(text), `the response shows the value: ${text}`);
      const [logged] = worker.events("config_error");
      assert.match(logged.value, /hunter2/i, JSON.stringify(logged));
    } finally {
      await worker.dispose();
    }
  }
});
