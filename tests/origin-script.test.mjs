// scripts/origin.mjs (`make origin`): its arguments, durations and token
// file on their own, hostile ones included; then the script against the
// built Worker with its checker, as an operator runs it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import http from "node:http";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { MAX_FOR_S, checkStatusPath, parseArgs, render, seconds } from "../scripts/origin.mjs";
import { startOrigin } from "./support/origin.mjs";
import { originsVar, startWorker } from "./support/worker.mjs";

const script = fileURLToPath(new URL("../scripts/origin.mjs", import.meta.url));
const dir = mkdtempSync(path.join(tmpdir(), "origin-script-"));

function tokenFile(name, text, mode = 0o600) {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  chmodSync(file, mode);
  return file;
}

test("durations: units largest first, each once, bounded", () => {
  const ok = [
    ["30m", 1800],
    ["1h30m", 5400],
    ["2d", 172_800],
    ["90", 90],
    ["1d2h3m4s", 93_784],
    [" 5m ", 300],
  ];
  for (const [text, s] of ok) assert.equal(seconds(text, "--for", { min: 1, max: MAX_FOR_S }), s, text);
  for (const bad of ["", "m", "30x", "5m1h", "1h1h", "-5m", "1.5h", "31d", "0", "1e9", "99999999999999999999"]) {
    assert.throws(() => seconds(bad, "--for", { min: 1, max: MAX_FOR_S }), /--for/, bad);
  }
});

test("arguments: what is sent, and what is refused before anything is sent", () => {
  const env = { ADMIN_TOKEN: " s3cret\n" };
  const set = parseArgs(["https://www.example.com", "home", "drain", "--for", "30m", "--drain=5m"], env);
  assert.equal(set.url.href, "https://www.example.com/__failover/status/origins/home");
  assert.deepEqual(set.body, { mode: "drain", ttl_s: 1800, drain_s: 300 });
  assert.equal(set.token, "s3cret");
  const custom = parseArgs(["https://x.example/ops/status", "vps", "auto"], env);
  assert.equal(custom.url.href, "https://x.example/ops/status/origins/vps");
  const node = parseArgs(["https://www.example.com", "home", "drain", "--node"], env);
  assert.equal(node.url.href, "https://www.example.com/__failover/status/nodes/home");
  assert.deepEqual(node.body, { mode: "drain" });
  assert.throws(() => parseArgs(["https://x.example", "--node"], env), /--node go with NAME MODE/);
  assert.throws(() => parseArgs(["https://x.example", "a/b", "drain", "--node"], env), /is not a node name/);
  assert.throws(() => parseArgs(["https://x.example", "..", "drain", "--node"], env), /is not a node name/);
  assert.throws(() => parseArgs(["https://x.example", ".", "drain"], env), /is not an origin name/);
  assert.equal(
    render({ node: "home", in_effect: false, origins: { "www-home": { mode: "disable", set_at: "t", in_effect: true, drain_s: 0 } } }, "ignored"),
    "www-home: disable since t, until changed, in effect",
  );
  const list = parseArgs(["https://x.example"], { STATUS_TOKEN: "r" });
  assert.equal(list.url.href, "https://x.example/__failover/status/origins");
  assert.equal(list.body, undefined);
  const refused = [
    [[], env, /no URL/],
    [["https://x.example", "home"], env, /no MODE/],
    [["https://x.example", "home", "sideways"], env, /unknown MODE/],
    [["https://x.example", "home/../x", "drain"], env, /not an origin name/],
    [["https://x.example", "home", "disable", "--drain", "5m"], env, /--drain goes with MODE drain/],
    [["https://x.example", "home", "auto", "--for", "5m"], env, /--for does not go/],
    [["https://x.example", "home", "drain", "--for", "45d"], env, /out of range/],
    [["https://x.example", "home", "drain", "--bogus"], env, /unknown option/],
    [["ftp://x.example", "home", "drain"], env, /not supported/],
    [["https://x.example", "home", "drain"], {}, /no token/],
    [["https://x.example", "home", "drain"], { STATUS_TOKEN: "r" }, /no token/],
  ];
  for (const [argv, e, message] of refused) assert.throws(() => parseArgs(argv, e), message, argv.join(" "));
});

test("the status path: the Worker's grammar, row by row (tests/fixtures/status-path.json)", () => {
  const fixture = JSON.parse(readFileSync(new URL("./fixtures/status-path.json", import.meta.url), "utf8"));
  assert.ok(fixture.rows.length > 20, "rows");
  for (const { path: p, accepted } of fixture.rows) {
    assert.equal(checkStatusPath(p) === null, accepted, `${JSON.stringify(p)}: ${checkStatusPath(p)}`);
  }
});

test("a URL whose path is not the Worker's STATUS_PATH as typed is refused before anything is sent", () => {
  const env = { ADMIN_TOKEN: "s3cret" };
  for (const typed of ["https://x.example", "https://x.example/", " https://x.example/ops/status "]) {
    const args = parseArgs([typed, "home", "auto"], env);
    assert.match(args.url.href, /^https:\/\/x\.example\/(__failover|ops)\/status\/origins\/home$/, typed);
  }
  // Each parses (new URL resolves or encodes it) to a clean-looking path
  // the Worker never answers at.
  const refused = [
    "https://x.example/a/../b",
    "https://x.example/a/./b",
    "https://x.example//a",
    "https://x.example/a%2e",
    "https://x.example/%2e%2e/status",
    "https://x.example/a b",
    "https://x.example/a/",
    "https://x.example/__failover/status/",
    "https://x.example\\__failover\\status",
    "https://x.example/\u00e9tat",
  ];
  for (const typed of refused) {
    assert.throws(() => parseArgs([typed, "home", "auto"], env), /STATUS_PATH exactly/, typed);
    assert.throws(() => parseArgs([typed], env), /STATUS_PATH exactly/, typed);
  }
});

test("token files: owner-only, one line, bounded", () => {
  const good = tokenFile("good", "s3cret\n");
  assert.equal(parseArgs(["https://x.example", "home", "auto"], { ADMIN_TOKEN_FILE: good }).token, "s3cret");
  const bad = [
    [tokenFile("loose", "s3cret", 0o644), /readable by others/],
    [tokenFile("empty", "\n"), /token alone/],
    [tokenFile("two", "a b\n"), /token alone/],
    [tokenFile("huge", "x".repeat(10_000)), /over 4096 bytes/],
    [path.join(dir, "missing"), /cannot read the token file .*ENOENT/],
    [dir, /not a file/],
  ];
  for (const [file, message] of bad) {
    assert.throws(() => parseArgs(["https://x.example", "home", "auto", "--token-file", file], {}), message, file);
  }
});

test("rendering: one line per origin, and a warning for force-up", () => {
  const doc = {
    overrides: {
      home: { mode: "drain", set_at: "2026-01-01T00:00:00Z", expires_at: null, drain_s: 300, in_effect: false, in_effect_at: "2026-01-01T00:05:00Z" },
      vps: { mode: "force-up", set_at: "2026-01-01T00:00:00Z", expires_at: "2026-01-01T01:00:00Z", drain_s: 0, in_effect: true },
      spare: { mode: "auto", set_at: null },
    },
  };
  assert.equal(
    render(doc),
    "home: drain since 2026-01-01T00:00:00Z, until changed, pinned requests for 300 s, in effect at 2026-01-01T00:05:00Z\n" +
      "vps: force-up since 2026-01-01T00:00:00Z, until 2026-01-01T01:00:00Z, in effect\n  WARNING: vps is served regardless of health\n" +
      "spare: auto (health decides)",
  );
  assert.throws(() => render({ nope: 1 }), /not the admin API/);
});

function run(args, env) {
  return new Promise((resolve) => {
    // Async: the Worker's origins live in this process.
    execFile(process.execPath, [script, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? error.code : 0, stdout, stderr }),
    );
  });
}

test("the script against the Worker: set, list, and every refusal in one line", async () => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker(
    { ORIGINS: originsVar(primary, replica), STATUS_TOKEN: "st-status-token-0123", ADMIN_TOKEN: "ad-admin-token-01234", HEALTH_INTERVAL_MS: "1000" },
    { durableObjects: { HEALTH_CHECKER: "HealthChecker" } },
  );
  try {
    const admin = { ADMIN_TOKEN: "ad-admin-token-01234" };
    const set = await run([worker.url, "primary", "drain", "--for", "1h", "--drain", "0"], admin);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /^primary: drain since \S+Z, until \S+Z, pinned requests for 0 s, in effect at \S+Z\n$/);
    const res = await worker.fetch("/page");
    assert.equal(res.headers.get("x-served-by"), "replica");
    await res.arrayBuffer();
    const list = await run([worker.url], { STATUS_TOKEN: "st-status-token-0123" });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^primary: drain .*\nreplica: auto \(health decides\)\n$/);
    const refusals = [
      [[worker.url, "nosuch", "drain"], admin, /refused: origin: no origin is named "nosuch"/],
      [[worker.url, "primary", "drain"], { ADMIN_TOKEN: "wrong" }, /refused the token \(401\)/],
      [[worker.url, "primary", "drain"], { ADMIN_TOKEN: "st-status-token-0123" }, /refused the token \(401\)/],
      [["http://127.0.0.1:1", "primary", "drain"], admin, /cannot reach http:\/\/127\.0\.0\.1:1\/__failover\/status\/origins\/primary/],
    ];
    for (const [args, env, message] of refusals) {
      const r = await run(args, env);
      assert.equal(r.code, 1, `${args.join(" ")}: ${r.stdout}`);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.ok(!r.stderr.includes("ad\n") && !r.stderr.includes("wrong"), "never the token");
    }
    const usage = await run([worker.url, "primary", "sideways"], admin);
    assert.equal(usage.code, 2);
    assert.equal((await run([worker.url, "primary", "auto"], admin)).code, 0);
    assert.deepEqual(
      [...primary.requests, ...replica.requests].filter((r) => r.path.startsWith("/__failover")),
      [],
      "no admin request reached an origin",
    );
  } finally {
    await worker.dispose();
    await primary.stop();
    await replica.stop();
  }
});

test("whatever answers instead of the Worker, the terminal gets one plain line", async () => {
  const answers = [
    { status: 200, body: "\u001b[2J\u001b]0;pwned\u0007not json" },
    { status: 500, body: "\u001b[31mboom\nsecond line" },
    { status: 200, body: "x".repeat(100_000) },
    { status: 302, body: "" },
  ];
  let next = 0;
  const server = http.createServer((req, res) => {
    const a = answers[next++];
    res.writeHead(a.status, { "content-type": "application/json", location: "https://elsewhere.example/" });
    res.end(a.body);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}`;
  try {
    for (let i = 0; i < answers.length; i++) {
      const r = await run([url, "primary", "drain"], { ADMIN_TOKEN: "ad-admin-token-01234" });
      assert.equal(r.code, 1, `answer ${i}`);
      assert.ok(!/[\u0000-\u0009\u000b-\u001f\u007f]/.test(r.stderr), JSON.stringify(r.stderr));
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.ok(r.stderr.length < 400, r.stderr);
    }
  } finally {
    server.close();
  }
});

// A stand-in that answers every request with `status` and a plausible
// admin API body, with `headers`: the Worker itself when they carry its
// mark, an app (a mistyped path, another site) when they do not.
async function standIn(headers, status = 200) {
  const requests = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const drain = { mode: "drain", set_at: "2026-01-01T00:00:00Z", expires_at: null, drain_s: 0, in_effect: true };
    const body = req.method === "GET" ? { overrides: { primary: drain } } : { origin: "primary", ...drain };
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}`, requests, close: () => server.close() };
}

test("only the Worker's own answer counts: a plausible 200 from anything else exits 1 and names the cause", async () => {
  const worker = await standIn({ "x-tunnel-failover": "admin" });
  const app = await standIn({});
  const forged = await standIn({ "x-tunnel-failover": "admin", "x-served-by": "primary" });
  const appRefusing = await standIn({ "www-authenticate": "Basic" }, 401);
  try {
    const admin = { ADMIN_TOKEN: "ad" };
    // The check lets the Worker's answer through.
    const ok = await run([worker.url, "primary", "drain"], admin);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal((await run([worker.url], admin)).code, 0);
    const cases = [
      [app, /answered 200 without the Worker's x-tunnel-failover: admin header: not the Worker's admin API \(the URL's path is not the Worker's STATUS_PATH/],
      [forged, /answered 200 from an origin behind the Worker \(x-served-by\): not the Worker's admin API/],
      [appRefusing, /answered 401 without the Worker's x-tunnel-failover: admin header/],
    ];
    for (const [server, message] of cases) {
      for (const args of [[server.url, "primary", "drain"], [server.url]]) {
        const r = await run(args, admin);
        assert.equal(r.code, 1, `${args.join(" ")}: ${r.stdout}`);
        assert.match(r.stderr, message);
        assert.equal(r.stdout, "", "nothing reads as done");
        assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
        assert.ok(!r.stderr.includes("refused the token"), r.stderr);
      }
    }
  } finally {
    for (const s of [worker, app, forged, appRefusing]) s.close();
  }
});
