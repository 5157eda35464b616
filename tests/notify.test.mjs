// Notifications and the history of events: the global checker (the
// HealthChecker Durable Object, SQLite-backed as wrangler.toml declares it)
// in Miniflare, real origins, and a webhook receiver on 127.0.0.1. Short
// HEALTH_INTERVAL_MS and NOTIFY_MIN_INTERVAL_S so each scenario runs in
// seconds; timings are printed, and asserted only as orderings.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startOrigin } from "./support/origin.mjs";
import { startReceiver } from "./support/receiver.mjs";
import { startIsolates, originsVar, eventually, sleep } from "./support/worker.mjs";

const token = "t0ken-t0ken-t0ken";
const KEY = "whsec-Sh4red";
const checker = { HEALTH_CHECKER: { className: "HealthChecker", useSQLite: true } };

// Two origins, a receiver, and one Worker ("a", reached as a.test) with
// the checker; `vars` adds to the bindings.
async function setup(vars, options = {}) {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const receiver = await startReceiver();
  const bindings = {
    ORIGINS: originsVar(primary, replica),
    STATUS_TOKEN: token,
    COLO_HEALTH: "off",
    ATTEMPT_TIMEOUT_MS: "1000",
    ...vars(receiver),
  };
  const isolates = await startIsolates([{ name: "a", bindings, durableObjects: checker }], [], options);
  const close = async () => {
    await isolates.dispose();
    await Promise.all([primary.stop().catch(() => {}), replica.stop(), receiver.stop()]);
  };
  return { primary, replica, receiver, isolates, close };
}

async function status(isolates) {
  const res = await isolates.fetch("a", "/__failover/status", { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  return res.json();
}

async function get(isolates, p) {
  const res = await isolates.fetch("a", p);
  await res.arrayBuffer();
  return res;
}

// The checker's first round has run (it probes the replica every round).
async function checkerRunning({ isolates, replica }) {
  await get(isolates, "/warm");
  await eventually(() => replica.hits("/health") >= 1);
}

// What a receiver got about the primary, in order: [type, raw request].
function primaryEvents(receiver, p, typeOf) {
  return receiver
    .events(p)
    .map((r) => [typeOf(r), r])
    .filter(([type]) => type !== null);
}

const typeOf = {
  "/json": (r) => {
    const e = JSON.parse(r.body);
    return e.origin === "primary" ? e.type : null;
  },
  "/slack": (r) => sentenceType(JSON.parse(r.body).text),
  "/discord": (r) => sentenceType(JSON.parse(r.body).content),
  "/ntfy": (r) => sentenceType(r.body),
};

function sentenceType(text) {
  if (text.includes("origin primary is down")) return "origin.down";
  if (text.includes("origin primary is up again")) return "origin.up";
  return null;
}

test("an outage in four formats: one origin.down and one origin.up each, the json one signed, the first within seconds of the first failed request", async () => {
  const s = await setup((r) => ({
    HEALTH_INTERVAL_MS: "2500",
    HEALTH_FALL: "2",
    HEALTH_RISE: "2",
    NOTIFY_MIN_INTERVAL_S: "1",
    // As wrangler.toml's [vars] hands it over: an array, not a string.
    NOTIFY: [
      { format: "json", url_var: "HOOK_JSON", secret_var: "HOOK_KEY" },
      { format: "slack", url_var: "HOOK_SLACK" },
      { format: "discord", url_var: "HOOK_DISCORD" },
      { format: "ntfy", url_var: "HOOK_NTFY" },
    ],
    HOOK_JSON: r.url("/json"),
    HOOK_KEY: KEY,
    HOOK_SLACK: r.url("/slack"),
    HOOK_DISCORD: r.url("/discord"),
    HOOK_NTFY: r.url("/ntfy"),
  }));
  const { primary, replica, receiver, isolates } = s;
  try {
    await checkerRunning(s);
    await primary.stop();
    const failed = await get(isolates, "/page");
    const failedAt = Date.now();
    assert.equal(failed.headers.get("x-served-by"), "replica");
    const roundsBefore = replica.hits("/health");
    const down = await eventually(() => primaryEvents(receiver, "/json", typeOf["/json"]).find(([t]) => t === "origin.down"), { timeoutMs: 15000 });
    const rounds = replica.hits("/health") - roundsBefore;
    console.log(`# first origin.down ${down[1].at - failedAt} ms after the first failed request (${rounds} probe round(s) in between)`);
    // Rounds alone need HEALTH_FALL = 2 probes, two rounds apart: the
    // isolate's report made the checker probe at once.
    assert.ok(rounds < 2, `the down waited for ${rounds} rounds`);

    await primary.start();
    for (const p of Object.keys(typeOf)) {
      await eventually(() => primaryEvents(receiver, p, typeOf[p]).some(([t]) => t === "origin.up"), { timeoutMs: 15000 });
    }
    await sleep(500); // room for a stray duplicate or extra message
    for (const [p, type] of Object.entries(typeOf)) {
      const got = primaryEvents(receiver, p, type).map(([t]) => t);
      assert.deepEqual(got, ["origin.down", "origin.up"], p);
      assert.equal(receiver.events(p).length, 2, `${p}: nothing about the replica or all origins`);
    }
    const [downReq, upReq] = receiver.events("/json");
    const event = JSON.parse(downReq.body);
    assert.equal(event.type, "origin.down");
    // A closed port: refused, or a failed connection as workerd reports it.
    assert.match(event.reason, /^connection (refused|failed) from probe$/);
    assert.equal(event.site, "a.test");
    assert.match(event.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(downReq.headers["x-tunnel-failover-id"], event.id);
    assert.notEqual(JSON.parse(upReq.body).id, event.id);
    for (const req of [downReq, upReq]) {
      const mac = createHmac("sha256", KEY).update(req.body).digest("hex");
      assert.equal(req.headers["x-tunnel-failover-signature"], `sha256=${mac}`);
      const ts = Number(req.headers["x-tunnel-failover-timestamp"]);
      assert.ok(Math.abs(ts - Date.now() / 1000) < 120, `timestamp ${ts}`);
      assert.equal(req.headers["content-type"], "application/json");
    }
    for (const p of ["/slack", "/discord", "/ntfy"]) {
      assert.equal(receiver.events(p)[0].headers["x-tunnel-failover-signature"], undefined, `${p} is not signed`);
    }
    assert.equal(receiver.events("/ntfy")[0].headers.title, "tunnel-failover: origin.down");
  } finally {
    await s.close();
  }
});

// The fast path sends a small POST from JS (src/js/entry.mjs reads its body
// into a buffer); its failure must end where a failed GET's does: in the
// full path's failure handling, which tells the checker at once.
test("a small POST that fails on the fast path tells the checker at once, as a failed GET does", async () => {
  const s = await setup((r) => ({
    HEALTH_INTERVAL_MS: "2500",
    HEALTH_FALL: "2",
    NOTIFY_MIN_INTERVAL_S: "1",
    NOTIFY: JSON.stringify([{ format: "json", url_var: "HOOK" }]),
    HOOK: r.url("/json"),
  }));
  const { primary, replica, receiver, isolates } = s;
  try {
    // The warm-up GET leaves the lease held: the POST takes the fast path.
    await checkerRunning(s);
    await primary.stop();
    // With its length (a body without one is streamed by the full path, and
    // a broken upload is no evidence against the origin).
    const res = await isolates.fetch("a", "/form", { method: "POST", headers: { "content-length": "512" }, body: "x".repeat(512) });
    await res.arrayBuffer();
    // Refused and cut after sending look the same to workerd: not replayed.
    assert.notEqual(res.headers.get("x-served-by"), "primary");
    const failedAt = Date.now();
    const roundsBefore = replica.hits("/health");
    const down = await eventually(() => primaryEvents(receiver, "/json", typeOf["/json"]).find(([t]) => t === "origin.down"), { timeoutMs: 15000 });
    const rounds = replica.hits("/health") - roundsBefore;
    console.log(`# first origin.down ${down[1].at - failedAt} ms after the failed POST (${rounds} probe round(s) in between)`);
    assert.ok(rounds < 2, `the down waited for ${rounds} rounds: the POST's failure was not reported`);
  } finally {
    await s.close();
  }
});

test("a receiver answering 500 for a while still gets every event once it recovers", async () => {
  const s = await setup((r) => ({
    HEALTH_INTERVAL_MS: "300",
    HEALTH_FALL: "1",
    HEALTH_RISE: "1",
    NOTIFY_MIN_INTERVAL_S: "0",
    NOTIFY: JSON.stringify([{ format: "json", url_var: "HOOK" }]),
    HOOK: r.url("/flaky"),
  }));
  const { primary, receiver } = s;
  try {
    receiver.modes["/flaky"] = 500;
    await checkerRunning(s);
    primary.mode = 503;
    await eventually(() => receiver.tries("/flaky").length >= 1, { timeoutMs: 10000 });
    primary.mode = "ok";
    await eventually(() => receiver.tries("/flaky").length >= 3, { timeoutMs: 15000 });
    receiver.modes["/flaky"] = "ok";
    const recoveredAt = Date.now();
    await eventually(() => receiver.events("/flaky").length >= 2, { timeoutMs: 20000 });
    console.log(`# every event delivered ${Date.now() - recoveredAt} ms after the receiver recovered`);
    const types = receiver.events("/flaky").map((r) => JSON.parse(r.body).type);
    assert.deepEqual(types, ["origin.down", "origin.up"]);
    const downId = receiver.events("/flaky")[0].headers["x-tunnel-failover-id"];
    const tries = receiver.tries("/flaky").filter((r) => r.headers["x-tunnel-failover-id"] === downId);
    assert.ok(tries.length >= 2, `tried ${tries.length} times`);
    assert.ok(new Set(tries.map((r) => JSON.parse(r.body).id)).size === 1, "the same id on every try");
    await sleep(1000);
    assert.equal(receiver.tries("/flaky").filter((r) => r.answered === 204).length, 2, "nothing sent again once taken");
  } finally {
    await s.close();
  }
});

test("a ten-flip storm gives at most two messages per origin, the last telling the state", async () => {
  const s = await setup((r) => ({
    HEALTH_INTERVAL_MS: "150",
    HEALTH_FALL: "1",
    HEALTH_RISE: "1",
    NOTIFY_MIN_INTERVAL_S: "3",
    NOTIFY: JSON.stringify([{ format: "slack", url_var: "HOOK" }]),
    HOOK: r.url("/slack"),
  }));
  const { primary, receiver, isolates } = s;
  try {
    await checkerRunning(s);
    for (let flip = 0; flip < 10; flip++) {
      primary.mode = flip % 2 === 0 ? 503 : "ok";
      await sleep(400);
    }
    const flips = (await status(isolates)).events.filter((e) => e.origin === "primary").length;
    assert.ok(flips >= 6, `the checker saw ${flips} flips`);
    // The guard lets the held-back state out once its interval has passed.
    await eventually(() => primaryEvents(receiver, "/slack", typeOf["/slack"]).some(([t]) => t === "origin.up"), { timeoutMs: 10000 });
    await sleep(1000);
    const messages = primaryEvents(receiver, "/slack", typeOf["/slack"]);
    console.log(`# ${flips} flips, ${messages.length} messages: ${messages.map(([t]) => t).join(", ")}`);
    assert.ok(messages.length <= 2, `${messages.length} messages`);
    const last = JSON.parse(messages.at(-1)[1].body).text;
    assert.match(last, /origin primary is up again/);
    assert.match(last, /and \d+ more changes?/);
  } finally {
    await s.close();
  }
});

test("the status JSON lists the checker's events newest first after three outages, and they survive a restart of the checker", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "tf-checker-"));
  const vars = () => ({ HEALTH_INTERVAL_MS: "150", HEALTH_FALL: "1", HEALTH_RISE: "1" });
  const s = await setup(vars, { durableObjectsPersist: dir });
  let again;
  try {
    await checkerRunning(s);
    for (let outage = 0; outage < 3; outage++) {
      s.primary.mode = 503;
      await eventually(async () => (await status(s.isolates)).events.filter((e) => e.origin === "primary").length === outage * 2 + 1);
      s.primary.mode = "ok";
      await eventually(async () => (await status(s.isolates)).events.filter((e) => e.origin === "primary").length === outage * 2 + 2);
    }
    const doc = await status(s.isolates);
    assert.equal(doc.events_view, "global");
    assert.deepEqual(
      doc.events.map((e) => e.type),
      ["origin.up", "origin.down", "origin.up", "origin.down", "origin.up", "origin.down"],
    );
    const at = doc.events.map((e) => e.at_ms);
    assert.deepEqual(at, [...at].sort((x, y) => y - x), "newest first");
    assert.equal(new Set(doc.events.map((e) => e.id)).size, 6);
    for (const e of doc.events) assert.equal(e.site, "a.test");
    await s.isolates.dispose();

    // A new runtime over the same storage: a new checker object, which has
    // only its storage to remember anything by.
    again = await startIsolates(
      [{ name: "a", bindings: { ORIGINS: originsVar(s.primary, s.replica), STATUS_TOKEN: token, COLO_HEALTH: "off", ...vars() }, durableObjects: checker }],
      [],
      { durableObjectsPersist: dir },
    );
    const after = await status(again);
    assert.equal(after.events_view, "global");
    assert.deepEqual(after.events.slice(0, 6).map((e) => e.id), doc.events.map((e) => e.id));
  } finally {
    await again?.dispose();
    await Promise.all([s.primary.stop(), s.replica.stop(), s.receiver.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
});

test("without the checker the status JSON shows the isolate's own flips, labelled as its view", async () => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const isolates = await startIsolates([{ name: "a", bindings: { ORIGINS: originsVar(primary, replica), STATUS_TOKEN: token, COLO_HEALTH: "off" } }]);
  try {
    assert.deepEqual((await status(isolates)).events, []);
    primary.mode = 530;
    assert.equal((await get(isolates, "/page")).headers.get("x-served-by"), "replica");
    const doc = await status(isolates);
    assert.equal(doc.events_view, "isolate");
    assert.deepEqual(
      doc.events.map((e) => [e.type, e.origin, e.reason, e.from, e.to]),
      [["origin.down", "primary", "status 530", "up", "down"]],
    );
  } finally {
    await isolates.dispose();
    await primary.stop();
    await replica.stop();
  }
});

test("hostile receivers: one hangs, one redirects, one throttles, one answers a huge body; the others still hear, the redirect is neither followed nor retried, no URL is logged", async () => {
  const secretPath = (name) => `/${name}-Tok3n`;
  const s = await setup((r) => ({
    HEALTH_INTERVAL_MS: "300",
    HEALTH_FALL: "1",
    HEALTH_RISE: "1",
    NOTIFY_MIN_INTERVAL_S: "0",
    NOTIFY: JSON.stringify([
      { format: "json", url_var: "HOOK_HANG" },
      { format: "slack", url_var: "HOOK_REDIRECT" },
      { format: "discord", url_var: "HOOK_HUGE" },
      { format: "ntfy", url_var: "HOOK_GOOD" },
      { format: "json", url_var: "HOOK_THROTTLED" },
    ]),
    HOOK_HANG: r.url(secretPath("hang")),
    HOOK_REDIRECT: r.url(secretPath("redirect")),
    HOOK_HUGE: r.url(secretPath("huge")),
    HOOK_GOOD: r.url(secretPath("good")),
    HOOK_THROTTLED: r.url(secretPath("throttled")),
  }));
  const { primary, receiver, isolates } = s;
  receiver.modes[secretPath("hang")] = "hang";
  receiver.modes[secretPath("redirect")] = { redirect: receiver.url("/stolen") };
  receiver.modes[secretPath("huge")] = "huge";
  receiver.modes[secretPath("throttled")] = { status: 429, headers: { "retry-after": "3600" } };
  try {
    await checkerRunning(s);
    primary.mode = 503;
    await eventually(() => receiver.events(secretPath("good")).length >= 1, { timeoutMs: 15000 });
    await eventually(() => receiver.tries(secretPath("huge")).length >= 1, { timeoutMs: 15000 });
    await eventually(() => receiver.tries(secretPath("redirect")).length >= 1);
    await eventually(() => receiver.tries(secretPath("hang")).length >= 1);
    await eventually(() => receiver.tries(secretPath("throttled")).length >= 1);
    await sleep(2500); // a retry of the redirect or the throttled would come after 2 s
    assert.equal(receiver.tries("/stolen").length, 0, "a redirect is never followed");
    // A redirect can never become a delivery: dropped after its one try
    // (one event here: the primary's down), logged once with why.
    assert.equal(receiver.tries(secretPath("redirect")).length, 1, "a redirect is refused for good, not retried");
    const refused = isolates.logs.filter((l) => l.includes('"event":"notify"') && l.includes("HOOK_REDIRECT"));
    assert.equal(refused.length, 1, refused.join("\n"));
    assert.match(refused[0], /"result":"refused"/);
    assert.match(refused[0], /"why":"[^"]*redirect/);
    assert.equal(receiver.tries(secretPath("throttled")).length, 1, "asked again before its Retry-After");
    assert.equal(receiver.tries(secretPath("huge")).length, 1, "the huge answer was a 200: taken once");
    assert.match(receiver.events(secretPath("good"))[0].body, /origin primary is down/);
    // The Worker still serves and reports.
    const doc = await status(isolates);
    assert.deepEqual(
      doc.notify.map((n) => [n.format, n.url_var]),
      [
        ["json", "HOOK_HANG"],
        ["slack", "HOOK_REDIRECT"],
        ["discord", "HOOK_HUGE"],
        ["ntfy", "HOOK_GOOD"],
        ["json", "HOOK_THROTTLED"],
      ],
    );
    const shown = JSON.stringify(doc) + isolates.logs.join("\n");
    assert.ok(!shown.includes("Tok3n") && !shown.includes(`:${receiver.port}`), "a receiver's URL was shown");
    assert.ok(isolates.logs.some((l) => l.includes('"event":"notify"') && l.includes("HOOK_GOOD")), "deliveries are logged by var name");
  } finally {
    await s.close();
  }
});

test("bad NOTIFY entries: every request gets 500 naming the entry, never the URL or secret", async () => {
  const url = "https://hooks.example.com/services/Tok3n";
  const cases = [
    ["format", { NOTIFY: '[{"format":"teams","url_var":"HOOK"}]', HOOK: url }, true, /NOTIFY\[0\]\.format: is not accepted; expected one of json, slack, discord, ntfy/],
    ["missing", { NOTIFY: '[{"format":"slack","url_var":"NOPE"}]' }, true, /NOTIFY\[0\]\.url_var: names a var that is missing or empty/],
    ["plainhttp", { NOTIFY: '[{"format":"slack","url_var":"HOOK"}]', HOOK: "http://hooks.example.com/Tok3n" }, true, /NOTIFY\[0\]\.url_var: names a secret whose URL is http:\/\/, which is allowed only to localhost or 127\.0\.0\.1/],
    ["signedchat", { NOTIFY: '[{"format":"slack","url_var":"HOOK","secret_var":"KEY"}]', HOOK: url, KEY: "Tok3n" }, true, /NOTIFY\[0\]\.secret_var: applies only to format json/],
    ["nochecker", { NOTIFY: '[{"format":"slack","url_var":"HOOK"}]', HOOK: url }, false, /NOTIFY: needs the HEALTH_CHECKER Durable Object binding/],
  ];
  const isolates = await startIsolates(
    cases.map(([name, vars, bound]) => ({
      name,
      bindings: { ORIGINS: JSON.stringify([{ name: "primary", url: "http://127.0.0.1:9" }]), ...vars },
      durableObjects: bound ? checker : undefined,
    })),
  );
  try {
    for (const [name, , , expected] of cases) {
      const res = await isolates.fetch(name, "/");
      assert.equal(res.status, 500, name);
      const text = await res.text();
      assert.match(text, expected, name);
      assert.ok(!text.includes("Tok3n"), `${name}: ${text}`);
    }
    const logged = isolates.logs.filter((l) => l.includes("config_error"));
    assert.equal(logged.length, cases.length);
    assert.ok(!logged.join("\n").includes("Tok3n"), "the log shows a URL or secret");
  } finally {
    await isolates.dispose();
  }
});
