// Steering (STEERING, HASH_KEY, per-origin weight) and session affinity
// (AFFINITY, AFFINITY_TTL_S, AFFINITY_FAILOVER), issue #12, against real
// origins in Miniflare. Bodiless GETs take the fast path (src/js/route.mjs),
// POSTs with a body the full path (failover_core::edge::route): every routing
// claim below is checked on both, since the two must send a request to the
// same origin.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, eventually } from "./support/worker.mjs";

const COOKIE = "__tf_affinity";

// ORIGINS with the per-origin settings the issue added: `extra` is merged
// into each origin's entry (weight, health_expect, ...).
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

// The __tf_affinity Set-Cookie of a response, if any (the test origins set
// cookies of their own, which pass through).
function affinitySetCookie(res) {
  return res.headers.getSetCookie().find((c) => c.startsWith(`${COOKIE}=`));
}

// One request, its body consumed; what the tests look at. A POST carries a
// small body, so it takes the full path.
async function send(worker, path, { method = "GET", headers = {}, body } = {}) {
  const init = { method, headers };
  if (method === "POST") init.body = body ?? `body of ${path}`;
  const res = await worker.fetch(path, init);
  const text = await res.text();
  const setCookie = affinitySetCookie(res);
  return {
    status: res.status,
    servedBy: res.headers.get("x-served-by"),
    failover: res.headers.get("x-failover"),
    setCookie,
    token: setCookie === undefined ? undefined : setCookie.split(";")[0].slice(COOKIE.length + 1),
    text,
  };
}

// Alternates the fast path (GET) and the full path (POST).
const methodFor = (i) => (i % 2 === 0 ? "GET" : "POST");

// Set-Cookie attributes as a map (lower-case names), and the name=value.
function parseSetCookie(line) {
  const [pair, ...attrs] = line.split(";").map((p) => p.trim());
  const map = new Map();
  for (const a of attrs) {
    const eq = a.indexOf("=");
    map.set((eq < 0 ? a : a.slice(0, eq)).toLowerCase(), eq < 0 ? true : a.slice(eq + 1));
  }
  return { pair, attrs: map };
}

function assertAffinityCookie(line, { maxAge = "82800", secure = false } = {}) {
  const { pair, attrs } = parseSetCookie(line);
  assert.match(pair, new RegExp(`^${COOKIE}=[0-9a-f]{16}$`), line);
  assert.equal(attrs.get("path"), "/", line);
  assert.equal(attrs.get("max-age"), maxAge, line);
  assert.equal(attrs.get("httponly"), true, line);
  assert.equal(attrs.get("samesite"), "Lax", line);
  assert.equal(attrs.has("secure"), secure, line);
  assert.equal(attrs.size, secure ? 5 : 4, `no other attributes: ${line}`);
}

test("weighted: weight 1 and weight 3 share traffic 1:3, on both paths, with no x-failover", async () => {
  const { origins, worker, close } = await setup([["light", { weight: 1 }], ["heavy", { weight: 3 }]], { STEERING: "weighted" });
  try {
    // Fast path (GET) and full path (POST) each draw their own random number:
    // both shares must be near 3/4. ±4 standard deviations of a binomial:
    // never flaky, yet "always the primary" (0), "even split" (0.5) and
    // "always the heaviest" (1) are all far outside.
    for (const [method, n] of [["GET", 400], ["POST", 200]]) {
      const served = [];
      for (let i = 0; i < n; i += 10) {
        const batch = await Promise.all(Array.from({ length: 10 }, (_, j) => send(worker, `/w/${i + j}`, { method })));
        served.push(...batch);
      }
      for (const r of served) {
        assert.equal(r.status, 200);
        assert.ok(r.servedBy === "light" || r.servedBy === "heavy", r.servedBy);
        assert.equal(r.failover, null, "all origins up: nothing failed over");
      }
      const share = served.filter((r) => r.servedBy === "heavy").length / n;
      const sd = Math.sqrt((0.75 * 0.25) / n);
      assert.ok(Math.abs(share - 0.75) <= 4 * sd, `${method}: heavy served ${share} of ${n}, expected 0.75 ± ${(4 * sd).toFixed(3)}`);
    }
    assert.equal(origins[0].hits() + origins[1].hits(), 600, "one attempt per request");
  } finally {
    await close();
  }
});

for (const policy of ["weighted", "hash"]) {
  test(`${policy}: a weight-0 origin serves only when every other origin is down`, async () => {
    // The weight-0 origin is first in priority order, so a Worker that
    // ignored weights (or fell back to failover order) would send it traffic.
    const { origins, worker, close } = await setup(
      [["standby", { weight: 0 }], ["b", { weight: 1 }], ["c", { weight: 1 }]],
      { STEERING: policy, HASH_KEY: "header:x-user" },
    );
    const [standby, b, c] = origins;
    try {
      for (let i = 0; i < 60; i++) {
        const r = await send(worker, `/z/${i}`, { method: methodFor(i), headers: { "x-user": `user-${i}` } });
        assert.equal(r.status, 200);
        assert.notEqual(r.servedBy, "standby", `request ${i}`);
        assert.equal(r.failover, null);
      }
      assert.equal(standby.hits(), 0, "a weight-0 origin is not tried while others are up");
      assert.ok(b.hits() > 0 && c.hits() > 0, `b ${b.hits()}, c ${c.hits()}`);

      // One refuses connections, the other's tunnel has no connector (530):
      // both are down at once, and the standby takes over, marked as a failover (the policy meant b or c).
      await b.stop();
      c.mode = 530;
      for (let i = 0; i < 10; i++) {
        const r = await send(worker, `/down/${i}`, { method: i === 0 ? "GET" : methodFor(i), headers: { "x-user": `user-${i}` } });
        assert.equal(r.status, 200, `request ${i}: ${r.text}`);
        assert.equal(r.servedBy, "standby", `request ${i}`);
        assert.equal(r.failover, "standby", `request ${i}`);
      }
    } finally {
      await close();
    }
  });
}

test("hash on a header: a user stays on one origin; only the failed origin's users move, and they come back", async () => {
  const { origins, worker, close } = await setup([["a"], ["b"]], {
    STEERING: "hash",
    HASH_KEY: "header:x-user",
    HEALTH_INTERVAL_MS: "200",
    HEALTH_RISE: "1",
  });
  const [a] = origins;
  const users = Array.from({ length: 30 }, (_, i) => `user-${i}`);
  const as = (user) => ({ "x-user": user });
  try {
    // Five requests per user, GET and POST alternating: one origin each.
    const home = new Map();
    for (const user of users) {
      const seen = new Set();
      for (let i = 0; i < 5; i++) {
        const r = await send(worker, `/u/${i}`, { method: methodFor(i), headers: as(user), body: `${user} order ${i}` });
        assert.equal(r.status, 200);
        assert.equal(r.failover, null);
        seen.add(r.servedBy);
      }
      assert.equal(seen.size, 1, `${user} was served by ${[...seen]}`);
      home.set(user, [...seen][0]);
    }
    const onA = users.filter((u) => home.get(u) === "a");
    const onB = users.filter((u) => home.get(u) === "b");
    assert.ok(onA.length > 0 && onB.length > 0, `users spread over both origins: a ${onA.length}, b ${onB.length}`);

    // No key: steered as weighted, so over 40 requests both origins serve.
    const keyless = new Set();
    for (let i = 0; i < 40; i++) {
      const r = await send(worker, `/anon/${i}`, { method: i % 4 === 3 ? "POST" : "GET" });
      assert.equal(r.status, 200);
      assert.equal(r.failover, null);
      keyless.add(r.servedBy);
    }
    assert.deepEqual([...keyless].sort(), ["a", "b"], "requests without the header are spread, not hashed to one origin");

    // a's tunnel loses its connector (530, which the edge says before the
    // request reaches a): a is down at once, and every method goes to b.
    a.mode = 530;
    for (const user of users) {
      for (const method of ["GET", "POST", "GET"]) {
        const r = await send(worker, `/during`, { method, headers: as(user) });
        assert.equal(r.status, 200, `${user} ${method}: ${r.text}`);
        assert.equal(r.servedBy, "b", `${user} ${method}`);
        assert.equal(r.failover, home.get(user) === "a" ? "b" : null, `${user} ${method}: x-failover only for a's users`);
      }
    }

    // a recovers: one good probe (HEALTH_RISE 1) brings it back, and every
    // user is back on its own origin.
    a.mode = "ok";
    await eventually(async () => (await send(worker, "/back", { headers: as(onA[0]) })).servedBy === "a");
    for (const user of users) {
      for (let i = 0; i < 2; i++) {
        const r = await send(worker, `/after/${i}`, { method: methodFor(i), headers: as(user) });
        assert.equal(r.servedBy, home.get(user), `${user} ${methodFor(i)} after recovery`);
        assert.equal(r.failover, null);
      }
    }
  } finally {
    await close();
  }
});

test("hash on a cookie: the same sid lands on the same origin, whatever other cookies ride along", async () => {
  const { worker, close } = await setup([["a"], ["b"]], { STEERING: "hash", HASH_KEY: "cookie:sid" });
  try {
    const homes = new Set();
    for (let u = 0; u < 20; u++) {
      const jars = [`sid=session-${u}`, `theme=dark; sid=session-${u}; x=1`, `sid="session-${u}"; lang=en`, `a=1;sid=session-${u}`];
      const seen = new Set();
      for (let i = 0; i < jars.length; i++) {
        const r = await send(worker, `/c/${i}`, { method: methodFor(i), headers: { cookie: jars[i] } });
        assert.equal(r.status, 200);
        assert.equal(r.failover, null);
        seen.add(r.servedBy);
      }
      assert.equal(seen.size, 1, `session-${u} served by ${[...seen]}`);
      homes.add([...seen][0]);
    }
    assert.deepEqual([...homes].sort(), ["a", "b"], "sessions spread over both origins");
    // No sid (or an empty one): steered as weighted, still answered.
    for (const cookie of ["other=1", "sid=", undefined]) {
      for (const method of ["GET", "POST"]) {
        const r = await send(worker, "/nosid", { method, headers: cookie === undefined ? {} : { cookie } });
        assert.equal(r.status, 200, `${cookie} ${method}`);
        assert.ok(r.servedBy === "a" || r.servedBy === "b");
      }
    }
  } finally {
    await close();
  }
});

// Fresh clients (no cookie) until each origin has pinned one: its token.
async function tokensByOrigin(worker, names) {
  const tokens = new Map();
  for (let i = 0; i < 80 && tokens.size < names.length; i++) {
    const r = await send(worker, `/fresh/${i}`, { method: methodFor(i) });
    assert.equal(r.status, 200);
    assert.ok(r.setCookie, `a fresh client is pinned (request ${i}, ${methodFor(i)})`);
    const known = tokens.get(r.servedBy);
    assert.ok(known === undefined || known === r.token, `one token per origin: ${r.servedBy} got ${known} and ${r.token}`);
    tokens.set(r.servedBy, r.token);
  }
  assert.deepEqual([...tokens.keys()].sort(), [...names].sort(), "fresh clients were pinned to every origin");
  assert.equal(new Set(tokens.values()).size, names.length, "each origin has its own token");
  return tokens;
}

test("affinity cookie: the first answer pins the client, later requests stay pinned and set no new cookie; forged and stale pins are ignored", async () => {
  const { origins, worker, close } = await setup([["a"], ["b"]], { STEERING: "weighted", AFFINITY: "cookie" });
  try {
    const first = await worker.fetch("/first");
    await first.arrayBuffer();
    assert.equal(first.status, 200);
    assertAffinityCookie(affinitySetCookie(first));

    const tokens = await tokensByOrigin(worker, ["a", "b"]);
    for (const [origin, token] of tokens) {
      for (let i = 0; i < 20; i++) {
        const r = await send(worker, `/pinned/${i}`, { method: i % 3 === 2 ? "POST" : "GET", headers: { cookie: `x=1; ${COOKIE}=${token}; y=2` } });
        assert.equal(r.status, 200);
        assert.equal(r.servedBy, origin, `pinned to ${origin}, request ${i}`);
        assert.equal(r.failover, null);
        assert.equal(r.setCookie, undefined, `no new affinity cookie (request ${i})`);
      }
    }

    // Forged, stale and malformed pins are ignored: an ordinary answer and a
    // fresh, valid pin for the origin that served.
    const valid = new Map([...tokens].map(([o, t]) => [t, o]));
    const forged = [
      `${COOKIE}=a`,
      `${COOKIE}=b`,
      `${COOKIE}=primary`,
      `${COOKIE}=garbage%00;;==`,
      `${COOKIE}=`,
      `${COOKIE}`,
      `${COOKIE}="`,
      `${COOKIE}=0123456789abcdef`,
      `${COOKIE}=${tokens.get("b").toUpperCase()}`,
      `${COOKIE}=${"f".repeat(5000)}`,
    ];
    for (const cookie of forged) {
      for (const method of ["GET", "POST"]) {
        const r = await send(worker, "/forged", { method, headers: { cookie } });
        assert.equal(r.status, 200, `${cookie.slice(0, 40)} ${method}: ${r.text}`);
        assert.ok(r.setCookie, `${cookie.slice(0, 40)} ${method}: a fresh pin`);
        assertAffinityCookie(r.setCookie);
        assert.equal(valid.get(r.token), r.servedBy, `${cookie.slice(0, 40)} ${method}: the pin names the origin that served`);
      }
    }

    // A config change (an origin added) voids every old pin: a client with
    // one is steered afresh and re-pinned, never refused.
    const c = await startOrigin("c");
    const changed = await startWorker({
      ORIGINS: JSON.stringify(["a", "b"].map((n, i) => ({ name: n, url: origins[i].url })).concat([{ name: "c", url: c.url }])),
      STEERING: "weighted",
      AFFINITY: "cookie",
    });
    try {
      for (const [origin, token] of tokens) {
        for (const method of ["GET", "POST", "GET"]) {
          const r = await send(changed, "/stale", { method, headers: { cookie: `${COOKIE}=${token}` } });
          assert.equal(r.status, 200, `${origin} ${method}`);
          assert.ok(r.setCookie, `a stale pin for ${origin} is re-pinned (${method})`);
          assert.notEqual(r.token, token, "the new config's tokens differ");
        }
      }
    } finally {
      await changed.dispose();
      await c.stop();
    }
  } finally {
    await close();
  }
});

test("affinity cookie: AFFINITY_TTL_S sets Max-Age, and an https request gets Secure", async () => {
  const { worker, close } = await setup([["a"], ["b"]], { STEERING: "weighted", AFFINITY: "cookie", AFFINITY_TTL_S: "600" });
  try {
    for (const method of ["GET", "POST"]) {
      const plain = await send(worker, "/ttl", { method });
      assertAffinityCookie(plain.setCookie, { maxAge: "600" });
      const init = { method, redirect: "manual" };
      if (method === "POST") init.body = "x";
      const res = await worker.mf.dispatchFetch("https://tf.example/ttl", init);
      await res.arrayBuffer();
      assert.equal(res.status, 200);
      assertAffinityCookie(affinitySetCookie(res), { maxAge: "600", secure: true });
    }
  } finally {
    await close();
  }
});

test("affinity temporary: a pinned client is served elsewhere while its origin is down, cookie untouched, and returns", async () => {
  const { origins, worker, close } = await setup([["a"], ["b"]], {
    STEERING: "weighted",
    AFFINITY: "cookie",
    HEALTH_INTERVAL_MS: "200",
    HEALTH_RISE: "1",
  });
  const [, b] = origins;
  try {
    // Pinned to b, the second origin: "always the primary" cannot pass.
    const tokens = await tokensByOrigin(worker, ["a", "b"]);
    const pinnedToB = { cookie: `${COOKIE}=${tokens.get("b")}` };
    b.mode = 530;
    for (let i = 0; i < 6; i++) {
      const r = await send(worker, `/away/${i}`, { method: methodFor(i), headers: pinnedToB });
      assert.equal(r.status, 200, `request ${i}: ${r.text}`);
      assert.equal(r.servedBy, "a", `request ${i}`);
      assert.equal(r.failover, "a", `request ${i}: the pinned origin was down`);
      assert.equal(r.setCookie, undefined, `request ${i}: temporary keeps the client's pin`);
    }
    b.mode = "ok";
    await eventually(async () => (await send(worker, "/back", { headers: pinnedToB })).servedBy === "b");
    for (let i = 0; i < 6; i++) {
      const r = await send(worker, `/home/${i}`, { method: methodFor(i), headers: pinnedToB });
      assert.equal(r.servedBy, "b", `request ${i}`);
      assert.equal(r.failover, null);
      assert.equal(r.setCookie, undefined);
    }
  } finally {
    await close();
  }
});

test("affinity sticky: a pinned client served elsewhere is re-pinned there, and stays after its old origin recovers", async () => {
  const { origins, worker, close } = await setup([["a"], ["b"]], {
    STEERING: "weighted",
    AFFINITY: "cookie",
    AFFINITY_FAILOVER: "sticky",
    HEALTH_INTERVAL_MS: "200",
    HEALTH_RISE: "1",
  });
  const [, b] = origins;
  try {
    const tokens = await tokensByOrigin(worker, ["a", "b"]);
    const pinnedToB = { cookie: `${COOKIE}=${tokens.get("b")}` };
    b.mode = 530;
    let moved;
    for (let i = 0; i < 4; i++) {
      const r = await send(worker, `/away/${i}`, { method: methodFor(i), headers: pinnedToB });
      assert.equal(r.status, 200, `request ${i}: ${r.text}`);
      assert.equal(r.servedBy, "a");
      assert.equal(r.failover, "a");
      assert.ok(r.setCookie, `request ${i}: sticky re-pins`);
      assertAffinityCookie(r.setCookie);
      assert.equal(r.token, tokens.get("a"), "the new pin names the origin that served");
      moved = r.token;
    }
    const pinnedToA = { cookie: `${COOKIE}=${moved}` };
    const r = await send(worker, "/moved", { headers: pinnedToA });
    assert.deepEqual([r.servedBy, r.failover, r.setCookie], ["a", null, undefined]);

    // b recovers (the old pin reaches it again: that proves it is up) ...
    b.mode = "ok";
    await eventually(async () => (await send(worker, "/back", { headers: pinnedToB })).servedBy === "b");
    // ... and the re-pinned client stays on a.
    for (let i = 0; i < 8; i++) {
      const r = await send(worker, `/stay/${i}`, { method: methodFor(i), headers: pinnedToA });
      assert.equal(r.servedBy, "a", `request ${i}`);
      assert.equal(r.failover, null);
      assert.equal(r.setCookie, undefined);
    }
  } finally {
    await close();
  }
});

test("status endpoint shows the steering policy, hash key, affinity and each origin's settings", async () => {
  const { worker, close } = await setup(
    [
      ["a", { weight: 7, health_expect: "2xx,304", access_client_id: "id-1", access_client_secret_var: "A_SECRET" }],
      ["b", { weight: 0 }],
      ["c"],
    ],
    {
      STATUS_TOKEN: "tok-status-token-01",
      A_SECRET: "hush-hush",
      STEERING: "hash",
      HASH_KEY: "header:X-User",
      AFFINITY: "cookie",
      AFFINITY_TTL_S: "3600",
      AFFINITY_FAILOVER: "sticky",
    },
  );
  try {
    const res = await worker.fetch("/__failover/status", { headers: { authorization: "Bearer tok-status-token-01" } });
    assert.equal(res.status, 200);
    const doc = await res.json();
    assert.equal(doc.steering, "hash");
    assert.equal(doc.hash_key, "header:x-user");
    assert.deepEqual(doc.affinity, { mode: "cookie", ttl_s: 3600, failover: "sticky" });
    assert.deepEqual(
      doc.origins.map((o) => [o.name, o.weight, o.health_expect, o.access_token]),
      [
        ["a", 7, "2xx,304", true],
        ["b", 0, "not 5xx", false],
        ["c", 1, "not 5xx", false],
      ],
    );
  } finally {
    await close();
  }

  // The defaults, spelled out.
  const plain = await setup([["a"]], { STATUS_TOKEN: "tok-status-token-01" });
  try {
    const doc = await (await plain.worker.fetch("/__failover/status", { headers: { authorization: "Bearer tok-status-token-01" } })).json();
    assert.equal(doc.steering, "failover");
    assert.equal(doc.hash_key, "ip");
    assert.deepEqual(doc.affinity, { mode: "off", ttl_s: 82800, failover: "temporary" });
  } finally {
    await plain.close();
  }
});

// Every bad value: 500 in one line naming the setting, on either path.
const base = [{ name: "a", url: "http://127.0.0.1:9" }, { name: "b", url: "http://127.0.0.1:9" }];
const second = (extra) => JSON.stringify([base[0], { ...base[1], ...extra }]);
// [name, vars, setting, problem, value]: the body names the setting and
// the problem; the value is logged, never shown to a visitor.
const badCases = [
  ["weight -1", { ORIGINS: second({ weight: -1 }) }, "ORIGINS[1].weight", /is out of range/, "-1"],
  ["weight 1001", { ORIGINS: second({ weight: 1001 }) }, "ORIGINS[1].weight", /is out of range/, "1001"],
  ["STEERING=rr", { ORIGINS: second({}), STEERING: "rr" }, "STEERING", /is not accepted/, '"rr"'],
  ["HASH_KEY=body", { ORIGINS: second({}), HASH_KEY: "body" }, "HASH_KEY", /is not accepted/, '"body"'],
  ["health_expect abc", { ORIGINS: second({ health_expect: "abc" }) }, "ORIGINS[1].health_expect", /is not a list of statuses/, '"abc"'],
  ["AFFINITY_TTL_S=0", { ORIGINS: second({}), AFFINITY_TTL_S: "0" }, "AFFINITY_TTL_S", /is out of range/, "0"],
  ["AFFINITY=yes", { ORIGINS: second({}), AFFINITY: "yes" }, "AFFINITY", /is not accepted/, '"yes"'],
  ["AFFINITY_FAILOVER=never", { ORIGINS: second({}), AFFINITY_FAILOVER: "never" }, "AFFINITY_FAILOVER", /is not accepted/, '"never"'],
];

for (const [name, vars, setting, problem, value] of badCases) {
  test(`bad config: ${name}`, async () => {
    const worker = await startWorker(vars);
    try {
      for (const method of ["GET", "POST", "GET"]) {
        const res = await worker.fetch("/any", { method, body: method === "POST" ? "x" : undefined });
        assert.equal(res.status, 500, method);
        const text = await res.text();
        assert.equal(text.trim().split("\n").length, 1, text);
        assert.ok(text.startsWith(`configuration error in ${setting}: `), text);
        assert.match(text, problem);
        if (value.length > 2) assert.ok(!text.includes(value), `the response shows the value: ${text}`);
      }
      const logged = worker.events("config_error");
      assert.equal(logged.length, 1, "logged once, not per request");
      assert.ok(logged[0].value.includes(value), JSON.stringify(logged[0]));
    } finally {
      await worker.dispose();
    }
  });
}
