// Overrides at runtime (issue 18, part 1): the admin API under the status
// path, with the global checker (a Durable Object) as the one writer, in
// front of real origins. Each mode is shown by counting the requests each
// origin got; hostile requests by what they got back and what reached an
// origin (nothing, ever).
import { test } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { startIsolates, originsVar, eventually, sleep } from "./support/worker.mjs";

const STATUS = "status-t0ken-0123456";
const ADMIN = "admin-t0ken-0123456";
const checker = { HEALTH_CHECKER: "HealthChecker" };

async function site(vars = {}, { durableObjects = checker } = {}) {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const bindings = {
    ORIGINS: originsVar(primary, replica),
    STATUS_TOKEN: STATUS,
    ADMIN_TOKEN: ADMIN,
    ATTEMPT_TIMEOUT_MS: "1000",
    HEALTH_INTERVAL_MS: "1000",
    ...vars,
  };
  for (const [k, v] of Object.entries(bindings)) if (v === undefined) delete bindings[k];
  const isolates = await startIsolates([{ name: "a", bindings, durableObjects: durableObjects ?? undefined }]);
  return {
    primary,
    replica,
    fetch: (p, init) => isolates.fetch("a", p, init),
    // An operator's change, as `make origin` sends it.
    set(name, body, { token = ADMIN, raw } = {}) {
      return isolates.fetch("a", `/__failover/status/origins/${name}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: raw ?? JSON.stringify(body),
      });
    },
    async list(token = ADMIN) {
      const res = await isolates.fetch("a", "/__failover/status/origins", { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
      return (await res.json()).overrides;
    },
    async status() {
      const res = await isolates.fetch("a", "/__failover/status", { headers: { authorization: `Bearer ${STATUS}` } });
      assert.equal(res.status, 200);
      return res.json();
    },
    logs: isolates.logs,
    async close() {
      await isolates.dispose();
      await primary.stop();
      await replica.stop();
    },
  };
}

// `n` GETs of `path` (with `headers`); how many each origin served, and how
// many said x-failover.
async function spread(s, n, path = "/page", headers = {}) {
  const served = { primary: 0, replica: 0, failover: 0 };
  for (let i = 0; i < n; i++) {
    const res = await s.fetch(path, { headers });
    assert.equal(res.status, 200, `request ${i}`);
    served[res.headers.get("x-served-by")]++;
    if (res.headers.get("x-failover") !== null) served.failover++;
    await res.arrayBuffer();
  }
  return served;
}

// No request under the status path ever reaches an origin.
function assertNoAdminPathReachedAnOrigin(s) {
  for (const o of [s.primary, s.replica]) {
    const leaked = o.requests.filter((r) => r.path.startsWith("/__failover"));
    assert.deepEqual(leaked, [], `${o.name} got a request for the Worker's own path`);
  }
}

test("drain: no new requests go to the drained origin; auto brings them back", async () => {
  const s = await site();
  try {
    assert.deepEqual(await spread(s, 5), { primary: 5, replica: 0, failover: 0 });
    const res = await s.set("primary", { mode: "drain", ttl_s: 3600, drain_s: 300 });
    assert.equal(res.status, 200);
    const stored = await res.json();
    assert.equal(stored.origin, "primary");
    assert.equal(stored.mode, "drain");
    assert.equal(stored.drain_s, 300);
    assert.equal(stored.expires_at_ms - stored.set_at_ms, 3_600_000);
    assert.match(stored.set_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(stored.in_effect, false, "the drain has 300 s to run");
    const before = s.primary.hits("/page");
    // Moved on purpose: served by the replica, and no x-failover.
    assert.deepEqual(await spread(s, 20), { primary: 0, replica: 20, failover: 0 });
    assert.equal(s.primary.hits("/page"), before);
    const listed = await s.list(STATUS);
    assert.equal(listed.primary.mode, "drain");
    assert.equal(listed.replica.mode, "auto");
    assert.equal((await s.status()).overrides.primary.mode, "drain", "the status document shows it");
    assert.equal((await s.set("primary", { mode: "auto" })).status, 200);
    assert.deepEqual(await spread(s, 5), { primary: 5, replica: 0, failover: 0 });
    assert.ok(s.logs.some((l) => l.includes('"event":"override"') && l.includes('"mode":"drain"')), "the change is logged");
    // Each change is an event of the checker's history (and so a
    // notification: tests/notify.test.mjs shows the history feeds them).
    const doc = await s.status();
    assert.equal(doc.events_view, "global");
    const changes = doc.events.filter((e) => e.type === "origin.override" && e.origin === "primary");
    assert.deepEqual(
      changes.map((e) => e.reason.split(" ")[0]),
      ["auto", "drain"],
      `newest first: ${JSON.stringify(doc.events)}`,
    );
    assertNoAdminPathReachedAnOrigin(s);
  } finally {
    await s.close();
  }
});

test("drain under affinity: pinned clients keep the origin for drain_s, then move; new ones move at once", async () => {
  const s = await site({ AFFINITY: "cookie" });
  try {
    const first = await s.fetch("/page");
    assert.equal(first.headers.get("x-served-by"), "primary");
    // The origins set cookies of their own: ours is the __tf_affinity one.
    const cookie = first.headers.getSetCookie().find((c) => c.startsWith("__tf_affinity=")).split(";")[0];
    await first.arrayBuffer();
    assert.equal((await s.set("primary", { mode: "drain", drain_s: 3 })).status, 200);
    const drainedAt = Date.now();
    // Within drain_s the pinned client stays; a new one goes elsewhere.
    assert.deepEqual(await spread(s, 5, "/pinned", { cookie }), { primary: 5, replica: 0, failover: 0 });
    assert.deepEqual(await spread(s, 5, "/fresh"), { primary: 0, replica: 5, failover: 0 });
    assert.ok(Date.now() - drainedAt < 3000, "the machine was too slow to check inside drain_s");
    // After it, none: the pinned client is served by the replica.
    await sleep(Math.max(0, drainedAt + 3200 - Date.now()));
    const after = await spread(s, 5, "/late", { cookie });
    assert.equal(after.primary, 0, JSON.stringify(after));
    assert.equal(after.replica, 5);
  } finally {
    await s.close();
  }
});

test("disable: used only when every other origin is down, and then first", async () => {
  const s = await site();
  try {
    assert.equal((await s.set("primary", { mode: "disable" })).status, 200);
    assert.deepEqual(await spread(s, 10), { primary: 0, replica: 10, failover: 0 });
    // The replica dies: the disabled primary serves rather than a 502.
    s.replica.mode = 530;
    const res = await s.fetch("/page");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-served-by"), "primary");
    await res.arrayBuffer();
    const replicaPages = s.replica.hits("/page");
    // With the replica known down, the held primary goes first: no attempt
    // at the dead replica, no waiting for it.
    const later = await spread(s, 10);
    assert.equal(later.primary, 10);
    assert.equal(later.failover, 10, "served by an origin the request was not meant for");
    assert.equal(s.replica.hits("/page"), replicaPages);
  } finally {
    await s.close();
  }
});

test("force-up: an origin the checks call down is served regardless, and the status says so", async () => {
  const s = await site({ HEALTH_INTERVAL_MS: "300", HEALTH_FALL: "2" });
  try {
    // The primary's health check fails while its pages work: a false
    // positive the checker acts on.
    s.primary.pathModes["/health"] = 503;
    // Only the status is asked meanwhile: a page the primary serves would
    // be a live answer, which beats the checker's hint.
    await eventually(async () => (await s.status()).origins[0].local.state === "down", { timeoutMs: 15000, everyMs: 100 });
    assert.equal((await s.status()).origins[0].local.decided_by, "global");
    assert.deepEqual(await spread(s, 3), { primary: 0, replica: 3, failover: 3 });
    const res = await s.set("primary", { mode: "force-up", ttl_s: 600 });
    assert.equal(res.status, 200);
    assert.ok((await res.json()).warning, "force-up carries a warning");
    assert.deepEqual(await spread(s, 10), { primary: 10, replica: 0, failover: 0 });
    const doc = await s.status();
    assert.equal(doc.origins[0].global.state, "down", "the checker still says down");
    assert.equal(doc.overrides.primary.mode, "force-up");
    assert.match(doc.overrides.primary.warning, /regardless of health/);
  } finally {
    await s.close();
  }
});

test("ttl_s: an override returns to auto by itself", async () => {
  const s = await site();
  try {
    const res = await s.set("primary", { mode: "disable", ttl_s: 1 });
    assert.equal(res.status, 200);
    const { expires_at_ms } = await res.json();
    assert.deepEqual(await spread(s, 3), { primary: 0, replica: 3, failover: 0 });
    await sleep(Math.max(0, expires_at_ms + 100 - Date.now()));
    // The fast path sends the request that finds the expiry due on the lease
    // it has (the expiry is periodic work, beside it): one request late.
    const first = await spread(s, 1);
    assert.equal(first.primary + first.replica, 1);
    assert.deepEqual(await spread(s, 3), { primary: 3, replica: 0, failover: 0 });
    const listed = await s.list();
    assert.equal(listed.primary.mode, "auto");
    assert.equal(listed.primary.set_at_ms, expires_at_ms, "auto since its expiry");
  } finally {
    await s.close();
  }
});

test("steering: a disabled origin gets no weighted share on the fast path, and no x-failover", async () => {
  const s = await site({ STEERING: "weighted" });
  try {
    const before = await spread(s, 40);
    assert.ok(before.primary > 0 && before.replica > 0, JSON.stringify(before));
    assert.equal((await s.set("replica", { mode: "disable" })).status, 200);
    assert.deepEqual(await spread(s, 40), { primary: 40, replica: 0, failover: 0 });
  } finally {
    await s.close();
  }
});

test("hostile requests: 400 naming the field, 401, 404, 405, 503; none reaches an origin", async () => {
  const s = await site();
  try {
    const cases = [
      { body: { mode: "sideways" }, field: "mode" },
      { body: {}, field: "mode" },
      { body: { mode: "drain", ttl_s: -1 }, field: "ttl_s" },
      { body: { mode: "drain", ttl_s: 0 }, field: "ttl_s" },
      { body: { mode: "drain", ttl_s: 1e12 }, field: "ttl_s" },
      { body: { mode: "drain", ttl_s: "3600" }, field: "ttl_s" },
      { body: { mode: "drain", drain_s: 86401 }, field: "drain_s" },
      { body: { mode: "drain", ttl: 60 }, field: "body" },
      { raw: "mode=drain", field: "body" },
      { raw: "", field: "body" },
      { raw: "[1,2]", field: "body" },
      { raw: JSON.stringify({ mode: "drain", pad: "x".repeat(5000) }), field: "body" },
      { name: "nosuch", body: { mode: "drain" }, field: "origin" },
      { name: "PRIMARY", body: { mode: "drain" }, field: "origin" },
      { name: "%00", body: { mode: "drain" }, field: "origin" },
    ];
    for (const c of cases) {
      const res = await s.set(c.name ?? "primary", c.body, { raw: c.raw });
      const what = JSON.stringify(c).slice(0, 120);
      assert.equal(res.status, 400, what);
      assert.match(res.headers.get("content-type"), /application\/json/);
      const err = await res.json();
      assert.equal(err.field, c.field, `${what}: ${err.error}`);
      assert.ok(err.error.startsWith(`${c.field}: `), err.error);
    }
    // A chunked body past the bound (no Content-Length to refuse it by).
    const chunked = await s.fetch("/__failover/status/origins/primary", {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}` },
      body: new ReadableStream({
        start(c) {
          for (let i = 0; i < 64; i++) c.enqueue(new TextEncoder().encode("x".repeat(1024)));
          c.close();
        },
      }),
      duplex: "half",
    });
    assert.equal(chunked.status, 400);
    assert.equal((await chunked.json()).field, "body");
    // Tokens: the status token reads but cannot change; a wrong one neither.
    for (const token of [STATUS, "wrong", "", `${ADMIN}x`]) {
      const res = await s.set("primary", { mode: "drain" }, { token });
      assert.equal(res.status, 401, `token ${JSON.stringify(token)}`);
      assert.equal(res.headers.get("www-authenticate"), "Bearer");
      await res.arrayBuffer();
    }
    const noToken = await s.fetch("/__failover/status/origins");
    assert.equal(noToken.status, 401);
    await noToken.arrayBuffer();
    // Methods and unknown paths under the status path are the Worker's own.
    const table = [
      ["GET", "/__failover/status/origins/primary", 405],
      ["PUT", "/__failover/status/origins/primary", 405],
      ["DELETE", "/__failover/status/origins", 405],
      ["GET", "/__failover/status/", 404],
      ["GET", "/__failover/status/nope", 404],
      ["POST", "/__failover/status/origins/a/b", 404],
      ["OPTIONS", "/__failover/status/origins", 405],
    ];
    for (const [method, path, status] of table) {
      const res = await s.fetch(path, { method, headers: { authorization: `Bearer ${ADMIN}` } });
      assert.equal(res.status, status, `${method} ${path}`);
      await res.arrayBuffer();
    }
    assert.equal((await s.list()).primary.mode, "auto", "no hostile request changed anything");
    assertNoAdminPathReachedAnOrigin(s);
  } finally {
    await s.close();
  }
});

test("without ADMIN_TOKEN the admin API is 404 (the list still reads with STATUS_TOKEN); never proxied", async () => {
  const s = await site({ ADMIN_TOKEN: undefined });
  try {
    const res = await s.set("primary", { mode: "drain" }, { token: STATUS });
    assert.equal(res.status, 404);
    await res.arrayBuffer();
    assert.equal((await s.list(STATUS)).primary.mode, "auto");
    assertNoAdminPathReachedAnOrigin(s);
  } finally {
    await s.close();
  }
  // ADMIN_TOKEN equal to STATUS_TOKEN is no admin token.
  const same = await site({ ADMIN_TOKEN: STATUS });
  try {
    const res = await same.set("primary", { mode: "drain" }, { token: STATUS });
    assert.equal(res.status, 404);
    await res.arrayBuffer();
  } finally {
    await same.close();
  }
});

test("STATUS_PATH itself, any method but GET and HEAD: 405, and the token never reaches an origin", async () => {
  for (const [vars, getStatus] of [
    [{}, 200],
    [{ STATUS_TOKEN: undefined }, 404], // the admin API alone: no status page
  ]) {
    const s = await site(vars);
    try {
      // An operator who left out /origins/{name}, or a browser's preflight.
      for (const [method, path] of [
        ["POST", "/__failover/status"],
        ["PUT", "/__failover/status?x=1"],
        ["DELETE", "/__failover/status"],
        ["OPTIONS", "/__failover/status"],
      ]) {
        const res = await s.fetch(path, {
          method,
          headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
          body: method === "POST" || method === "PUT" ? '{"mode":"drain"}' : undefined,
        });
        assert.equal(res.status, 405, `${method} ${path}`);
        assert.equal(res.headers.get("allow"), "GET, HEAD");
        assert.equal(res.headers.get("x-served-by"), null);
        await res.arrayBuffer();
      }
      const get = await s.fetch("/__failover/status", { headers: { authorization: `Bearer ${STATUS}` } });
      assert.equal(get.status, getStatus);
      await get.arrayBuffer();
      assertNoAdminPathReachedAnOrigin(s);
      for (const o of [s.primary, s.replica]) {
        const carried = o.requests.filter((r) => String(r.headers?.authorization ?? "").includes(ADMIN));
        assert.deepEqual(carried, [], `${o.name} got ADMIN_TOKEN`);
      }
    } finally {
      await s.close();
    }
  }
});

test("without the HEALTH_CHECKER binding the admin API answers 503 naming it", async () => {
  const s = await site({}, { durableObjects: null });
  try {
    for (const res of [await s.set("primary", { mode: "drain" }), await s.fetch("/__failover/status/origins", { headers: { authorization: `Bearer ${ADMIN}` } })]) {
      assert.equal(res.status, 503);
      assert.match(await res.text(), /HEALTH_CHECKER/);
    }
    // Still checked before the binding: a bad token is 401 all the same.
    const res = await s.set("primary", { mode: "drain" }, { token: "wrong" });
    assert.equal(res.status, 401);
    await res.arrayBuffer();
    assert.deepEqual(await spread(s, 3), { primary: 3, replica: 0, failover: 0 });
    assertNoAdminPathReachedAnOrigin(s);
  } finally {
    await s.close();
  }
});
