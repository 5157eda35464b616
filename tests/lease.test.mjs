// The fast path's pure JS on its own, in Node: the URL join and status-path
// check (src/js/lease.mjs `upstreamUrl`), the response rules
// (src/js/rules.mjs) and which bodies it buffers (src/js/body.mjs), held to
// tests/fixtures/fast-path.json, whose every row
// crates/failover-core/tests/fast_path_fixture.rs holds the Rust twins to.
// The same hostile paths go through the whole Worker in forwarding.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { configure, grant, instance, lease, RETRY_WORK, revoke_lease, takeWork, upstreamUrl, workDone, WORK_LOST_MS } from "../src/js/lease.mjs";
import { attemptEnded, attemptStarted } from "../src/js/silence.mjs";
import { REFUSED, TIMED_OUT, isAccessLogin, isAnswer } from "../src/js/rules.mjs";
import { bufferedLength } from "../src/js/body.mjs";
import { forward_headers, no_connector_js } from "../src/js/attempt.mjs";
import { carriesToken, tokenBytes } from "../src/js/credentials.mjs";
import { siteOf } from "../src/js/sites.mjs";
import { FAST_PATH, corpusPaths, randomPath, seeded, servedPath } from "./support/hostile.mjs";

const ORIGIN = FAST_PATH.origin;
// What the fast path does with a request it leaves to Rust, and what Rust
// does with the status endpoint's: the fixture's two non-URL verdicts.
const FULL_PATH = "full path";
const STATUS_ENDPOINT = "status endpoint";
const WORKERS_OWN = "the Worker's own";

// The instance's part as src/fast.rs `fast_config` sends it, then a lease.
function leased(statusPath) {
  const config = { names: ["primary"], bases: [ORIGIN], timeoutMs: 6000, silenceMs: 0, statusPath, steer: undefined };
  assert.equal(configure(config, 0), true);
  assert.equal(grant({ origin: 0, workDue: Date.now() + 60_000, healthy: undefined }, 0), true);
  assert.equal(lease.base, ORIGIN);
}

// undefined (the full path's) as the fixture spells it.
const fast = (url) => upstreamUrl(url) ?? FULL_PATH;

// The fast path may only take a request the full path would send to the
// same URL: a row that says otherwise describes a disagreement.
function assertCoherent(row) {
  assert.ok(row.fast === FULL_PATH || row.fast === row.full, `the fast path must hand over, or do what the full path does: ${JSON.stringify(row)}`);
}

test("URL cases: the upstream URL, or the full path for a fragment or the status endpoint", () => {
  for (const row of FAST_PATH.urls.cases) {
    assertCoherent(row);
    if (row.full === STATUS_ENDPOINT || row.full === WORKERS_OWN) assert.equal(row.fast, FULL_PATH, "only the full path answers the Worker's own paths");
    leased(row.status_path ?? undefined);
    assert.equal(fast(row.url), row.fast, JSON.stringify(row));
  }
});

test("hostile paths never name another host", () => {
  leased(undefined);
  const { request_origin } = FAST_PATH.hostile;
  for (const row of FAST_PATH.hostile.cases) {
    assert.equal(`${request_origin}${servedPath(request_origin, row.target)}`, row.url, `the runtime's request.url for ${row.target}`);
    assert.equal(new URL(row.upstream).host, new URL(ORIGIN).host, JSON.stringify(row));
    assert.equal(upstreamUrl(row.url), row.upstream, JSON.stringify(row));
  }
});

// The differential fuzz: what both joins must make of one path, by how the
// path was built rather than by either join's way of finding it.
function expectedJoin(path) {
  const hash = path.indexOf("#");
  const full = ORIGIN + (hash < 0 ? path : path.slice(0, hash));
  return { full, fast: hash < 0 ? full : FULL_PATH };
}

test("join corpus: the fixture's random paths are still what the runtime would hand over", () => {
  // A different generator, or a URL parser that serializes differently
  // (Node and workerd share ada), makes a corpus Rust never checked.
  assert.deepEqual(FAST_PATH.join_corpus.paths, corpusPaths(FAST_PATH.join_corpus), "regenerate: node tests/support/hostile.mjs");
});

test("join corpus: the fast path joins every path as Rust does (fast_path_fixture.rs join_corpus)", () => {
  leased(undefined);
  const { request_origin, paths } = FAST_PATH.join_corpus;
  for (const path of paths) {
    const url = `${request_origin}${path}`;
    assert.equal(fast(url), expectedJoin(path).fast, url);
  }
});

test("fresh random paths: the same expectation, and never another host", () => {
  // Beyond the corpus, so a new case can turn up; one that fails here
  // belongs in the fixture's urls, where Rust checks it too.
  leased(undefined);
  const { request_origin } = FAST_PATH.join_corpus;
  const next = seeded(Date.now());
  for (let i = 0; i < 5000; i++) {
    const path = servedPath(request_origin, randomPath(next));
    const url = `${request_origin}${path}`;
    const joined = fast(url);
    assert.equal(joined, expectedJoin(path).fast, url);
    if (joined !== FULL_PATH) assert.equal(new URL(joined).host, new URL(ORIGIN).host, `${url} -> ${joined}`);
  }
});

test("responses: an answer, or a failed attempt (isAnswer, classify_response)", () => {
  for (const row of FAST_PATH.responses.cases) {
    assert.ok(["answer", "failure"].includes(row.expect), JSON.stringify(row));
    assert.equal(row.expect === "failure", typeof row.label === "string", `a failure has a label, an answer none: ${JSON.stringify(row)}`);
    assert.equal(isAnswer(row.status, row.location), row.expect === "answer", JSON.stringify(row));
  }
});

test("Access login hosts (isAccessLogin, is_access_login)", () => {
  for (const row of FAST_PATH.access_login.cases) {
    assert.equal(isAccessLogin(row.location), row.login, JSON.stringify(row));
  }
  assert.equal(isAccessLogin(null), false, "no Location header");
});

test("bodies: the fast path buffers a subset of what Rust buffers (bufferedLength, BodyPlan::choose)", () => {
  const { cap, cases } = FAST_PATH.bodies;
  for (const row of cases) {
    if (row.fast !== FULL_PATH) {
      assert.equal(row.plan, "buffered", `the fast path buffers only what the full path would: ${JSON.stringify(row)}`);
      assert.ok(row.method !== "GET" && row.method !== "HEAD", JSON.stringify(row));
    }
    assert.equal(bufferedLength(row.method, row.content_length, cap) ?? FULL_PATH, row.fast, JSON.stringify(row));
  }
});

test("attempt results are named as in Rust (classify::ATTEMPT_*)", () => {
  assert.equal(TIMED_OUT, FAST_PATH.attempt_results.TIMED_OUT);
  assert.equal(REFUSED, FAST_PATH.attempt_results.REFUSED);
});

test("a revoked lease is asked for again", () => {
  leased(undefined);
  assert.equal(lease.valid, true);
  revoke_lease();
  assert.equal(lease.valid, false);
  assert.equal(grant(undefined, 0), false);
});

test("a lease from another Wasm instance than the configured one is refused", () => {
  leased(undefined);
  assert.equal(instance.id, 0);
  assert.equal(grant({ origin: 0, workDue: 0 }, 1), false, "instance 1 was never configured");
  assert.equal(configure(undefined, 1), false, "a broken config configures nothing");
});

test("periodic work is taken by one request at a time, and is due again when Rust says", () => {
  leased(undefined);
  grant({ origin: 0, workDue: 1_000, coloDue: Number.MAX_SAFE_INTEGER }, 0);
  assert.equal(takeWork(999), false, "not yet due");
  assert.equal(takeWork(1_000), true, "due: this request starts it");
  assert.equal(takeWork(5_000), false, "one run at a time");
  workDone({ workDue: 1_250, coloDue: Number.MAX_SAFE_INTEGER });
  assert.equal(takeWork(1_249), false);
  assert.equal(takeWork(1_250), true);
  workDone(RETRY_WORK); // a failed run: the next request tries again
  assert.equal(takeWork(10_000), true);
  // A run that never reports back (its waitUntil task was cancelled) is
  // presumed lost after WORK_LOST_MS, or periodic work would stop for good.
  assert.equal(takeWork(10_000 + WORK_LOST_MS - 1), false);
  assert.equal(takeWork(10_000 + WORK_LOST_MS), true);
  assert.equal(lease.valid, true, "work, due or done, never ends the lease");
});

test("a request that finds an attempt kept waiting starts the work from coloDue on (a colo read)", () => {
  leased(undefined);
  const t = 1_000_000;
  grant({ origin: 0, workDue: t + 60_000, coloDue: t + 100 }, 0);
  instance.suspectMs = 250;
  attemptStarted(0, t);
  assert.equal(takeWork(t + 249), false, "the attempt has not waited suspectMs yet");
  assert.equal(takeWork(t + 250), true, "it has: this request starts the work");
  assert.equal(takeWork(t + 300), false, "one run at a time");
  workDone({ workDue: t + 60_000, coloDue: t + 550 });
  assert.equal(takeWork(t + 500), false, "Rust reads the colo at most once a period");
  assert.equal(takeWork(t + 550), true);
  workDone({ workDue: t + 60_000, coloDue: t + 800 });
  attemptEnded(0, t, true, t + 700);
  assert.equal(takeWork(t + 900), false, "nothing waits any more");
});

test("hop-by-hop: an attempt's headers drop what the fixture says, and nothing else (hop_by_hop::to_drop)", () => {
  const named = ["connection", "upgrade", "keep-alive", "proxy-connection", "te", "trailer", "close", "x-hop", "x-a", "x-b", "authorization", "cookie", "host", "content-length", "transfer-encoding", "x-other"];
  for (const row of FAST_PATH.hop_by_hop.cases) {
    const client = new Headers();
    for (const name of named) client.set(name, "v");
    if (row.connection === null) client.delete("connection");
    else client.set("connection", row.connection);
    const sent = forward_headers(client, "https://site.example/x");
    const present = [...client.keys()];
    const gone = present.filter((name) => !sent.has(name));
    const expected = row.drop.filter((name) => present.includes(name));
    assert.deepEqual(gone.sort(), [...expected].sort(), JSON.stringify(row));
  }
});

test("forward_headers drops Authorization only when told to (the full path's decision)", () => {
  const client = new Headers({ authorization: "Bearer app-token", cookie: "a=1" });
  assert.equal(forward_headers(client, "https://site.example/").get("authorization"), "Bearer app-token");
  assert.equal(forward_headers(client, "https://site.example/", undefined, undefined, false).get("authorization"), "Bearer app-token");
  const dropped = forward_headers(client, "https://site.example/", "id", "secret", true);
  assert.equal(dropped.get("authorization"), null);
  assert.equal(dropped.get("cookie"), "a=1");
  assert.equal(dropped.get("cf-access-client-id"), "id");
});

test("the Worker's own tokens in Authorization: the fast path decides as Rust does (secret::carries_any)", () => {
  const { tokens, cases } = FAST_PATH.workers_tokens;
  const bytes = tokenBytes(tokens);
  for (const row of cases) {
    // ASCII: exactly Rust's answer; otherwise "may carry" (the full path decides).
    const expected = /[^\x00-\x7f]/.test(row.header) ? true : row.carries;
    assert.equal(carriesToken(row.header, bytes), expected, JSON.stringify(row));
  }
  // Whitespace Rust trims and a Latin-1 trim would not: the full path's.
  for (const ws of ["\u0085", "\u3000", "\u2028", "\u1680", "\u205f"]) {
    assert.equal(carriesToken(`Bearer ${tokens[0]}${ws}`, bytes), true, JSON.stringify(ws));
  }
  // No token configured, or an empty one: nothing carries it.
  assert.equal(carriesToken("Bearer ", tokenBytes([""])), false);
  assert.equal(carriesToken("Bearer x", []), false);
});

test("several sites: the fast path finds a request's site as Rust does (HostTable::site_for)", () => {
  const { table, cases } = FAST_PATH.hosts;
  const hosts = { names: new Map(Object.entries(table.names)), wildcards: new Map(Object.entries(table.wildcards)), any: table.any };
  for (const row of cases) assert.equal(siteOf(row.url, hosts), row.site, row.url);
  const none = { names: new Map([["a.example", 0]]), wildcards: new Map(), any: -1 };
  assert.equal(siteOf("https://b.example/", none), -1, "no site: the full path answers 421");
});

test("a 530 is evidence against its node only with the edge's error 1033 (attempt.mjs no_connector_js)", async () => {
  const answer = (status, body, headers = {}) => new Response(body, { status, headers });
  const yes = [
    answer(530, "error code: 1033"),
    answer(530, '{"error_code": 1033, "retryable": true}', { "content-type": "application/json" }),
    answer(530, "<html><title>Argo Tunnel error | Error 1033</title></html>", { "content-type": "text/html" }),
  ];
  const no = [
    answer(530, ""),
    answer(530, "error code: 1016"),
    answer(530, "error code: 10330"),
    answer(502, "error code: 1033"),
    // The sign past the 4 KiB read: an app's huge 530 is not read whole.
    answer(530, `${"x".repeat(8192)} error code: 1033`),
    null,
  ];
  for (const res of yes) assert.equal(await no_connector_js(res), true, await res.clone().text());
  for (const res of no) assert.equal(await no_connector_js(res), false, res === null ? "null" : String(res.status));
  // The answer itself stays readable: only a clone was read.
  const kept = answer(530, "error code: 1033");
  await no_connector_js(kept);
  assert.equal(await kept.text(), "error code: 1033");
});
