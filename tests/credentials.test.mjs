// The operator's tokens stay between the operator and the Worker: a
// request that carries STATUS_TOKEN or ADMIN_TOKEN (Bearer, or the
// password of Basic credentials) to a path that is not the Worker's is
// forwarded without its Authorization header; an app's own credentials
// pass untouched. Wrong tokens meet a brake; a short token is a
// configuration error; every answer of the Worker's own says so
// (x-tunnel-failover) and is never sniffed (nosniff).
import { test } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, originsVar } from "./support/worker.mjs";
import { rawRequest } from "./support/raw-http.mjs";

const STATUS = "status-token-of-the-credentials-test";
const ADMIN = "admin-token-of-the-credentials-test";

function basic(credentials) {
  return `Basic ${Buffer.from(credentials, "utf8").toString("base64")}`;
}

async function withWorker(bindings, run, options) {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker({ ORIGINS: originsVar(primary, replica), COLO_HEALTH: "off", ...bindings }, options);
  try {
    await run({ worker, primary, replica });
  } finally {
    await worker.dispose();
    await primary.stop();
    await replica.stop();
  }
}

// What the origin saw as Authorization for the request to `path`.
function seenAuthorization(origin, path) {
  const r = origin.requests.find((x) => x.path === path);
  assert.ok(r, `${path} reached ${origin.name}`);
  return r.headers.authorization;
}

test("a browser's remembered status credentials never reach the app, anywhere on the site", async () => {
  await withWorker({ STATUS_TOKEN: STATUS, ADMIN_TOKEN: ADMIN }, async ({ worker, primary }) => {
    // The browser was asked once on the status page; it now sends the same
    // Basic credentials to every path in that folder (RFC 7617 2.2).
    const page = await worker.fetch("/__failover/status", { headers: { authorization: basic(`ops:${STATUS}`), accept: "application/json" } });
    assert.equal(page.status, 200);
    for (const path of ["/__failover/anything", "/__failover/statusx", "/", "/app/page?x=1"]) {
      const res = await worker.fetch(path, { headers: { authorization: basic(`ops:${STATUS}`) } });
      assert.equal(res.status, 200, path);
      assert.equal(seenAuthorization(primary, path), undefined, `${path}: the status token reached the app`);
    }
  });
});

test("a mistyped status path: the admin token is kept from the app, whatever the method", async () => {
  await withWorker({ STATUS_TOKEN: STATUS, ADMIN_TOKEN: ADMIN }, async ({ worker, primary }) => {
    for (const [method, path] of [
      ["GET", "/__failovr/status/origins"],
      ["POST", "/__failover/Status/origins/primary"],
      ["GET", "/ops/origins"],
    ]) {
      const res = await worker.fetch(path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: method === "POST" ? '{"mode":"drain"}' : undefined });
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get("x-tunnel-failover"), null, `${path}: an app's answer is not marked as the Worker's`);
      assert.ok(res.headers.get("x-served-by"), path);
      assert.equal(seenAuthorization(primary, path), undefined, `${path}: the admin token reached the app`);
    }
    // Bearer in any case, with space around: still the Worker's.
    await worker.fetch("/lower", { headers: { authorization: `  bearer ${STATUS} ` } });
    assert.equal(seenAuthorization(primary, "/lower"), undefined);
  });
});

test("an app's own credentials pass untouched, on the fast path and the full path", async () => {
  const app = ["Bearer the-apps-own-api-token", basic("alice:her-webdav-password"), basic(`${STATUS}:not-the-token`), "Digest username=\"a\""];
  // With tokens set (requests with Authorization take the full path) and
  // without (the fast path takes them).
  for (const bindings of [{ STATUS_TOKEN: STATUS, ADMIN_TOKEN: ADMIN }, {}]) {
    await withWorker(bindings, async ({ worker, primary, replica }) => {
      for (const [i, authorization] of app.entries()) {
        const res = await worker.fetch(`/api/${i}`, { headers: { authorization } });
        assert.equal(res.status, 200);
        assert.equal(seenAuthorization(primary, `/api/${i}`), authorization, JSON.stringify(bindings));
      }
      // A failover replays the request with the app's credentials, and
      // without the Worker's.
      primary.mode = 502;
      await worker.fetch("/walk", { headers: { authorization: app[0] } });
      assert.equal(seenAuthorization(replica, "/walk"), app[0]);
      if (bindings.STATUS_TOKEN !== undefined) {
        await worker.fetch("/walk-token", { headers: { authorization: basic(`x:${ADMIN}`) } });
        assert.equal(seenAuthorization(replica, "/walk-token"), undefined);
      }
    });
  }
});

test("without STATUS_TOKEN and ADMIN_TOKEN nothing is the Worker's: Authorization goes to the app", async () => {
  await withWorker({}, async ({ worker, primary }) => {
    await worker.fetch("/__failover/status", { headers: { authorization: `Bearer ${STATUS}` } });
    assert.equal(seenAuthorization(primary, "/__failover/status"), `Bearer ${STATUS}`);
  });
});

test("a token under 16 characters is a configuration error naming the secret, never its value", async () => {
  for (const [name, value] of [
    ["STATUS_TOKEN", "hunter2hunter2"],
    ["ADMIN_TOKEN", "short-admin"],
  ]) {
    await withWorker({ [name]: value }, async ({ worker, primary }) => {
      const res = await worker.fetch("/");
      const body = await res.text();
      assert.equal(res.status, 500);
      assert.match(body, new RegExp(`${name}: is \\d+ characters long; use at least 16`));
      assert.ok(!body.includes(value), body);
      assert.ok(!worker.logs.some((l) => l.includes(value)), "nor in the log");
      assert.equal(primary.requests.length, 0);
    });
  }
});

test("the Worker's own answers say so and are never sniffed; an app's are not marked", async () => {
  await withWorker({ STATUS_TOKEN: STATUS, ADMIN_TOKEN: ADMIN }, async ({ worker }) => {
    const auth = { authorization: `Bearer ${STATUS}` };
    const cases = [
      ["/__failover/status", { headers: { ...auth, accept: "application/json" } }, 200, "status"],
      ["/__failover/status", { headers: { accept: "application/json" } }, 401, "status"],
      ["/__failover/status", { method: "POST", headers: auth }, 405, "status"],
      ["/__failover/status/origins", { headers: { authorization: "Bearer wrong-but-long-enough" } }, 401, "admin"],
      ["/__failover/status/nothing", { headers: auth }, 404, "admin"],
      ["/__failover/status/origins", { method: "DELETE", headers: auth }, 405, "admin"],
    ];
    for (const [path, init, status, by] of cases) {
      const res = await worker.fetch(path, init);
      assert.equal(res.status, status, `${path} ${init.method ?? "GET"}`);
      assert.equal(res.headers.get("x-tunnel-failover"), by, path);
      assert.equal(res.headers.get("x-content-type-options"), "nosniff", path);
      assert.equal(res.headers.get("x-served-by"), null, path);
    }
    const proxied = await worker.fetch("/");
    assert.equal(proxied.headers.get("x-tunnel-failover"), null);
  });
});

test("wrong tokens meet a brake; a request without credentials is no guess", async () => {
  await withWorker({ STATUS_TOKEN: STATUS, ADMIN_TOKEN: ADMIN }, async ({ worker }) => {
    const json = { accept: "application/json" };
    // A browser's first look carries no credentials: never braked.
    for (let i = 0; i < 15; i++) assert.equal((await worker.fetch("/__failover/status", { headers: json })).status, 401);
    assert.equal((await worker.fetch("/__failover/status", { headers: { ...json, authorization: `Bearer ${STATUS}` } })).status, 200);
    // Ten wrong tokens, on either endpoint, brake this client.
    for (let i = 0; i < 10; i++) {
      const path = i % 2 === 0 ? "/__failover/status" : "/__failover/status/origins";
      const res = await worker.fetch(path, { headers: { ...json, authorization: `Bearer guess-number-${i}-xxxxxxxx` } });
      assert.equal(res.status, 401, `guess ${i}`);
    }
    for (const authorization of ["Bearer another-guess-xxxxxxxxxx", `Bearer ${STATUS}`, basic(`ops:${ADMIN}`)]) {
      for (const path of ["/__failover/status", "/__failover/status/origins"]) {
        const res = await worker.fetch(path, { headers: { ...json, authorization } });
        assert.equal(res.status, 429, `${path}: braked, even with the right token`);
        const wait = Number(res.headers.get("retry-after"));
        assert.ok(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
        assert.equal(res.headers.get("x-tunnel-failover"), path.endsWith("origins") ? "admin" : "status");
      }
    }
    // The site itself is not braked.
    assert.equal((await worker.fetch("/")).status, 200);
  });
});

test("with a Rate Limiting binding, the location's count brakes sooner", async () => {
  const ratelimits = { TOKEN_GUESS_LIMITER: { namespace_id: "1001", simple: { limit: 2, period: 60 } } };
  await withWorker(
    { STATUS_TOKEN: STATUS },
    async ({ worker }) => {
      const wrong = { accept: "application/json", authorization: "Bearer a-wrong-guess-xxxxxxxx" };
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await worker.fetch("/__failover/status", { headers: wrong })).status);
      assert.deepEqual(statuses, [401, 401, 401, 429], "the third miss is over the binding's limit of 2");
      const right = await worker.fetch("/__failover/status", { headers: { accept: "application/json", authorization: `Bearer ${STATUS}` } });
      assert.equal(right.status, 429);
    },
    { ratelimits },
  );
});

test("the Worker's own tokens on the wrong endpoint are no guesses: a browser's status credentials never brake", async () => {
  await withWorker({ STATUS_TOKEN: STATUS, ADMIN_TOKEN: ADMIN }, async ({ worker }) => {
    // The browser re-sends the page's Basic credentials to the admin API's
    // folder; a script sends ADMIN_TOKEN as a status page password.
    for (let i = 0; i < 15; i++) {
      const admin = await worker.fetch("/__failover/status/origins", { method: "POST", headers: { authorization: basic(`ops:${STATUS}`) }, body: "{}" });
      assert.notEqual(admin.status, 429, `request ${i}`);
      await admin.arrayBuffer();
      const page = await worker.fetch("/__failover/status", { headers: { authorization: basic(`ops:${ADMIN}`), accept: "application/json" } });
      assert.notEqual(page.status, 429, `request ${i}`);
      await page.arrayBuffer();
    }
    const ok = await worker.fetch("/__failover/status", { headers: { authorization: `Bearer ${STATUS}`, accept: "application/json" } });
    assert.equal(ok.status, 200);
  });
});

test("non-ASCII in Authorization takes the full path, which keeps the Worker's token from the app", async () => {
  await withWorker({ STATUS_TOKEN: STATUS }, async ({ worker, primary }) => {
    await (await worker.fetch("/warm")).arrayBuffer();
    // U+0085 (NEL) as its UTF-8 bytes: whitespace to Rust's trim, not to
    // JS's, so the header carries the token though a JS trim says it does
    // not. A fetch client refuses the bytes; a socket sends them.
    for (const path of ["/nel-1", "/nel-2"]) {
      const res = await rawRequest(worker.url, { path, headers: [["Authorization", `Bearer ${STATUS}\u0085`]] });
      assert.equal(res.status, 200, path);
      const seen = primary.requests.find((r) => r.path === path);
      assert.ok(seen, path);
      assert.equal(seen.headers.authorization, undefined, `${path}: the token reached the app`);
    }
  });
});
