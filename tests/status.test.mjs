// The status endpoint: JSON for the right token (an HTML page when a browser
// asks, plain text when a terminal does), 401 otherwise, and an ordinary
// proxied path when no token is configured; and scripts/status.mjs, which
// prints the plain text.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync, spawn } from "node:child_process";
import http from "node:http";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, originsVar, eventually } from "./support/worker.mjs";
import { CLEAR, TITLE, frame, parseArgs } from "../scripts/status.mjs";

test("status endpoint with a token", async () => {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const worker = await startWorker({ ORIGINS: originsVar(primary, replica), STATUS_TOKEN: "s3cret-token-for-the-status" });
  try {
    primary.mode = 530;
    await (await worker.fetch("/warm")).arrayBuffer();

    const res = await worker.fetch("/__failover/status", { headers: { authorization: "Bearer s3cret-token-for-the-status" } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json");
    const doc = await res.json();
    assert.equal(doc.version, "0.1.0");
    assert.match(doc.revision, /^([0-9a-f]{12}(-dirty)?|unknown)$/);
    assert.deepEqual(
      doc.origins.map((o) => [o.name, o.state, o.bad_streak, o.last_error]),
      [
        ["primary", "down", 1, "status 530"],
        ["replica", "up", 0, null],
      ],
    );
    assert.equal(typeof doc.origins[0].last_change_ms, "number");
    assert.equal(primary.hits("/__failover/status") + replica.hits("/__failover/status"), 0, "never proxied");

    for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: "s3cret-token-for-the-status" }, { authorization: "Bearer s3cret-token-for-the-statu" }]) {
      const denied = await worker.fetch("/__failover/status", { headers });
      assert.equal(denied.status, 401, JSON.stringify(headers));
      assert.equal(denied.headers.get("www-authenticate"), "Bearer");
      assert.doesNotMatch(await denied.text(), /primary|replica|127\.0\.0\.1/);
    }
  } finally {
    await worker.dispose();
    await primary.stop();
    await replica.stop();
  }
});

test("without STATUS_TOKEN the status path is proxied like any other", async () => {
  const primary = await startOrigin("primary");
  const worker = await startWorker({ ORIGINS: originsVar(primary) });
  try {
    const res = await worker.fetch("/__failover/status");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-served-by"), "primary");
    assert.equal((await res.json()).path, "/__failover/status");
  } finally {
    await worker.dispose();
    await primary.stop();
  }
});

test("STATUS_PATH is configurable", async () => {
  const primary = await startOrigin("primary");
  const worker = await startWorker({ ORIGINS: originsVar(primary), STATUS_TOKEN: "t-status-token-0123", STATUS_PATH: "/ops/health" });
  try {
    const res = await worker.fetch("/ops/health?pretty=1", { headers: { authorization: "Bearer t-status-token-0123" } });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).origins[0].name, "primary");
    const other = await worker.fetch("/__failover/status");
    assert.equal(other.headers.get("x-served-by"), "primary");
    await other.arrayBuffer();
  } finally {
    await worker.dispose();
    await primary.stop();
  }
});

// --- For a person: the page (text/html), the text (text/plain) and ---------
// --- scripts/status.mjs -----------------------------------------------------

const CHROME_ACCEPT =
  "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
const script = fileURLToPath(new URL("../scripts/status.mjs", import.meta.url));

function runScript(args, env = {}) {
  return new Promise((resolve) => {
    // Async, never spawnSync: the origins the Worker calls live in this process.
    execFile(
      process.execPath,
      [script, ...args],
      { env: { PATH: process.env.PATH, ...env }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }),
    );
  });
}

// Runs scripts/status.mjs until `done(stdout, stderr)` holds, then stops it
// (a --watch never ends by itself); `tty`: under script(1), so that stdout
// is a terminal.
function watchScript(args, env, done, { tty = false, timeoutMs = 20_000 } = {}) {
  const command = tty
    ? ["script", ["-qec", [process.execPath, script, ...args].map((a) => `'${a}'`).join(" "), "/dev/null"]]
    : [process.execPath, [script, ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(command[0], command[1], { env: { PATH: process.env.PATH, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`status.mjs ${args.join(" ")}: not done in time\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    const check = () => {
      if (done(stdout, stderr)) {
        clearTimeout(timer);
        child.kill();
        resolve({ stdout, stderr, code: null });
      }
    };
    child.stdout.on("data", (c) => ((stdout += c), check()));
    child.stderr.on("data", (c) => ((stderr += c), check()));
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, code });
    });
  });
}

function hasScript() {
  try {
    execFileSync("script", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

// What a browser sends once its user typed the credentials.
function basic(credentials) {
  return `Basic ${Buffer.from(credentials, "utf8").toString("base64")}`;
}

// A GET with exactly these headers: fetch() would add `accept: */*` itself.
function rawGet(url, headers) {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body }));
      })
      .on("error", reject);
  });
}

describe("the status page for a person", () => {
  let primary;
  let replica;
  let worker;
  const auth = { authorization: "Bearer s3cret-token-for-the-status" };
  const statusUrl = () => `${worker.url}/__failover/status`;
  // Each deliberately wrong token from an address of its own: ten from one
  // address brake it (src/guesses.rs), which tests/credentials.test.mjs
  // covers; here every refusal must be the 401 itself.
  let guesser = 0;
  const asGuesser = (headers) => ({ ...headers, "cf-connecting-ip": `198.51.100.${++guesser % 250}` });

  before(async () => {
    primary = await startOrigin("primary");
    replica = await startOrigin("replica");
    worker = await startWorker({ ORIGINS: originsVar(primary, replica), STATUS_TOKEN: "s3cret-token-for-the-status" });
    primary.mode = 530;
    await (await worker.fetch("/warm")).arrayBuffer();
  });

  after(async () => {
    await worker?.dispose();
    await primary?.stop();
    await replica?.stop();
  });

  test("a browser's Accept gets HTML; */*, none and application/json get JSON", async () => {
    const res = await worker.fetch("/__failover/status", { headers: { ...auth, accept: CHROME_ACCEPT } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.equal(res.headers.get("vary"), "accept");
    assert.match(res.headers.get("content-security-policy"), /default-src 'none'/);
    const page = await res.text();
    assert.match(page, /^<!doctype html>/);
    assert.match(page, /<td data-label="Origin"><div>primary<\/div><\/td><td data-label="State"><div class="down">down<\/div>/);
    assert.match(page, /<td data-label="Origin"><div>replica<\/div><\/td><td data-label="State"><div class="up">up<\/div>/);
    assert.match(page, /<div>status 530<\/div>/);
    // The headline first: where traffic goes, since when, why.
    assert.match(page, /<p class="headline tone-failover" id="headline">Serving from replica \(failover\) since \d\d:\d\d UTC — primary down: status 530<\/p>/);
    assert.match(page, /<meta http-equiv="refresh" content="15">/);
    assert.match(page, /<dt>Colo health<\/dt><dd>on: /);
    assert.match(page, /<dt>Global health<\/dt><dd>off: no global checker/);
    // Self-contained, and no more than the JSON shows.
    assert.doesNotMatch(page, /<script|<link|src=|href=|127\.0\.0\.1|s3cret/i);

    for (const accept of ["application/json", "*/*", "text/html;q=0.5, application/json", "application/json, text/html"]) {
      const json = await worker.fetch("/__failover/status", { headers: { ...auth, accept } });
      assert.equal(json.status, 200, accept);
      assert.equal(json.headers.get("content-type"), "application/json", accept);
      assert.equal(json.headers.get("cache-control"), "no-store", accept);
      assert.equal(json.headers.get("vary"), "accept", accept);
      assert.deepEqual(
        (await json.json()).origins.map((o) => [o.name, o.state]),
        [
          ["primary", "down"],
          ["replica", "up"],
        ],
        accept,
      );
    }
    const bare = await rawGet(statusUrl(), auth);
    assert.equal(bare.status, 200);
    assert.equal(bare.headers["content-type"], "application/json");
    assert.equal(JSON.parse(bare.body).origins.length, 2);
  });

  test("the page is as strict about the token as the JSON; a browser is asked for Basic credentials", async () => {
    for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: "s3cret-token-for-the-status" }, { authorization: basic("ops:wrong") }]) {
      const denied = await worker.fetch("/__failover/status", { headers: asGuesser({ ...headers, accept: CHROME_ACCEPT }) });
      assert.equal(denied.status, 401, JSON.stringify(headers));
      assert.equal(denied.headers.get("www-authenticate"), 'Basic realm="tunnel-failover status"');
      assert.equal(denied.headers.get("vary"), "accept");
      assert.equal(denied.headers.get("cache-control"), "no-store");
      assert.match(denied.headers.get("content-type"), /^text\/plain/);
      assert.doesNotMatch(await denied.text(), /primary|replica|127\.0\.0\.1|<html|s3cret/);
    }
    assert.equal(primary.hits("/__failover/status") + replica.hits("/__failover/status"), 0, "never proxied");
  });

  test("Basic credentials with STATUS_TOKEN as the password open every representation, whatever the user name", async () => {
    for (const credentials of ["ops:s3cret-token-for-the-status", ":s3cret-token-for-the-status", "anyone at all:s3cret-token-for-the-status"]) {
      for (const [accept, type] of [
        [CHROME_ACCEPT, "text/html; charset=utf-8"],
        ["application/json", "application/json"],
        ["text/plain", "text/plain; charset=utf-8"],
      ]) {
        const res = await worker.fetch("/__failover/status", { headers: { authorization: basic(credentials), accept } });
        assert.equal(res.status, 200, `${credentials} ${accept}`);
        assert.equal(res.headers.get("content-type"), type);
        await res.arrayBuffer();
      }
    }
    // The Bearer token goes on working, for scripts and monitors.
    const bearer = await worker.fetch("/__failover/status", { headers: auth });
    assert.equal(bearer.status, 200);
    await bearer.arrayBuffer();
  });

  test("hostile or wrong Basic credentials, and a token in the URL, get 401 and nothing else", async () => {
    const b64 = (bytes) => Buffer.from(bytes).toString("base64");
    const good = b64("ops:s3cret-token-for-the-status");
    const refused = [
      ["a wrong password", basic("ops:s3cret-toke")],
      ["the token as the user name", basic("s3cret-token-for-the-status:")],
      ["no colon", basic("s3cret-token-for-the-status")],
      ["not UTF-8", `Basic ${b64(Buffer.from([0x6f, 0x3a, 0x73, 0x33, 0xff, 0xfe]))}`],
      ["unpadded", `Basic ${good.replace(/=+$/, "")}`],
      ["bad padding", `Basic ${good}=`],
      ["padding inside", `Basic ${good.slice(0, 4)}=${good.slice(5)}`],
      ["not base64 at all", "Basic ops:s3cret-token-for-the-status"],
      ["the token in the clear", "Basic s3cret-token-for-the-status"],
      ["no credentials", "Basic"],
      ["huge", `Basic ${b64(`ops:s3cret-token-for-the-status${" ".repeat(6000)}`)}`],
      ["huge, right password", `Basic ${b64(`${"u".repeat(6000)}:s3cret-token-for-the-status`)}`],
    ];
    for (const [what, authorization] of refused) {
      for (const accept of [CHROME_ACCEPT, "application/json"]) {
        const res = await worker.fetch("/__failover/status", { headers: asGuesser({ authorization, accept }) });
        assert.equal(res.status, 401, `${what} (${accept})`);
        assert.equal(res.headers.get("www-authenticate"), accept === CHROME_ACCEPT ? 'Basic realm="tunnel-failover status"' : "Bearer", what);
        assert.doesNotMatch(await res.text(), /primary|replica|127\.0\.0\.1|s3cret/, what);
      }
    }
    // Tokens in URLs end up in logs and browser history: never accepted.
    for (const query of ["?token=s3cret-token-for-the-status", "?access_token=s3cret-token-for-the-status", "?authorization=Bearer%20s3cret-token-for-the-status"]) {
      const res = await worker.fetch(`/__failover/status${query}`, { headers: { accept: CHROME_ACCEPT } });
      assert.equal(res.status, 401, query);
      await res.arrayBuffer();
    }
    assert.equal(primary.hits("/__failover/status") + replica.hits("/__failover/status"), 0, "never proxied");
  });

  test("nothing from the request is reflected into the page", async () => {
    const hostile = "<script>alert(1)</script>";
    const res = await worker.fetch(`/__failover/status?x=${hostile}`, {
      headers: { ...auth, accept: `text/html, ${hostile}`, "user-agent": hostile, referer: `http://e.test/${hostile}` },
    });
    assert.equal(res.status, 200);
    const page = await res.text();
    assert.doesNotMatch(page, /<script|alert/);
  });

  test("text/plain gets the table as text; a tie with JSON or the page does not", async () => {
    const res = await worker.fetch("/__failover/status", { headers: { ...auth, accept: "text/plain" } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/plain; charset=utf-8");
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.equal(res.headers.get("vary"), "accept");
    const text = await res.text();
    const lines = text.split("\n");
    assert.equal(lines[0], TITLE);
    assert.match(lines[1], /^\[FAILOVER\] Serving from replica \(failover\) since \d\d:\d\d UTC — primary down: status 530$/);
    assert.ok(lines.some((l) => /^version 0\.1\.0, revision /.test(l)));
    assert.match(text, /^ORIGIN\s+STATE\s+SINCE\s+LAST ERROR\s+COLO VIEW\s+GLOBAL VIEW$/m);
    assert.match(text, /^primary\s+down\s+.*status 530/m);
    assert.match(text, /^replica\s+up\s+/m);
    assert.match(text, /\n\nsettings\n {2}attempt timeout/);
    assert.ok(text.endsWith("\n"));
    // Aligned: every origin's state starts in the header's STATE column.
    const header = lines.find((l) => l.startsWith("ORIGIN"));
    for (const name of ["primary", "replica"]) {
      const line = lines.find((l) => l.startsWith(name));
      assert.equal(line.search(/\s(up|down)\s/) + 1, header.indexOf("STATE"), line);
    }
    assert.doesNotMatch(text, /127\.0\.0\.1|s3cret/);

    for (const [accept, type] of [
      ["text/plain;q=0.9, */*;q=0.1", "text/plain; charset=utf-8"],
      ["text/plain, application/json", "application/json"],
      ["text/plain, text/html", "text/html; charset=utf-8"],
      ["text/*", "text/html; charset=utf-8"],
    ]) {
      const other = await worker.fetch("/__failover/status", { headers: { ...auth, accept } });
      assert.equal(other.status, 200, accept);
      assert.equal(other.headers.get("content-type"), type, accept);
      assert.equal(other.headers.get("vary"), "accept", accept);
      await other.arrayBuffer();
    }
    for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: "s3cret-token-for-the-status" }]) {
      const denied = await worker.fetch("/__failover/status", { headers: { ...headers, accept: "text/plain" } });
      assert.equal(denied.status, 401, JSON.stringify(headers));
      assert.equal(denied.headers.get("www-authenticate"), "Bearer");
      assert.doesNotMatch(await denied.text(), /primary|replica|127\.0\.0\.1|tunnel-failover status/);
    }
    assert.equal(primary.hits("/__failover/status") + replica.hits("/__failover/status"), 0, "never proxied");
  });

  test("scripts/status.mjs prints the Worker's text, byte for byte", async () => {
    // Two requests a second apart read differently ("as of", "12s ago"):
    // compare only a run that the Worker's answers before and after agree on.
    const text = async () => (await worker.fetch("/__failover/status", { headers: { ...auth, accept: "text/plain" } })).text();
    const { run, answer } = await eventually(async () => {
      const before = await text();
      const run = await runScript([statusUrl()], { STATUS_TOKEN: "s3cret-token-for-the-status" });
      const after = await text();
      return before === after && run.stdout === after && { run, answer: after };
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, "");
    assert.equal(run.stdout, answer);
    assert.doesNotMatch(run.stdout, /\u001b/);

    // A bare host means the default status path; --token works as well.
    const bare = await runScript([worker.url, "--token", "s3cret-token-for-the-status"]);
    assert.equal(bare.code, 0, bare.stderr);
    assert.match(bare.stdout, /^replica\s+up/m);
  });

  test("scripts/status.mjs fails in one line on a refused token, a proxied path, other text or no answer", async () => {
    const denied = await runScript([statusUrl(), "--token", "wrong"]);
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /^status\.mjs: .*401.*\n$/);
    assert.doesNotMatch(denied.stderr, /wrong/, "never prints the token");

    // A path the Worker proxies: the origin's answer, X-Served-By and all.
    const proxied = await runScript([`${worker.url}/elsewhere`], { STATUS_TOKEN: "s3cret-token-for-the-status" });
    assert.equal(proxied.code, 1);
    assert.match(proxied.stderr, /^status\.mjs: .*answered 200 from an origin behind the Worker \(X-Served-By\): not the Worker's status endpoint.*\n$/);

    const plainText = await startOrigin("plain");
    plainText.mode = 200; // answers 200 text/plain
    try {
      // Text, but not ours: something that is not the Worker at all.
      const otherText = await runScript([`${plainText.url}/__failover/status`], { STATUS_TOKEN: "t-status-token-0123" });
      assert.equal(otherText.code, 1);
      assert.match(otherText.stderr, /^status\.mjs: .*answered 200 without the Worker's x-tunnel-failover: status header.*\n$/);
      assert.equal(otherText.stdout, "");
      // Its 401 is no refusal of the token by the Worker either.
      plainText.mode = 401;
      const app401 = await runScript([`${plainText.url}/__failover/status`], { STATUS_TOKEN: "t-status-token-0123" });
      assert.equal(app401.code, 1);
      assert.match(app401.stderr, /answered 401 without the Worker's x-tunnel-failover: status header/);
      assert.doesNotMatch(app401.stderr, /refused the token/);
      // Marked, but not a document: still refused (an impostor's text).
      plainText.mode = { status: 200, headers: { "content-type": "text/plain", "x-tunnel-failover": "status" }, body: "hello\n" };
      const marked = await runScript([`${plainText.url}/__failover/status`], { STATUS_TOKEN: "t-status-token-0123" });
      assert.equal(marked.code, 1);
      assert.match(marked.stderr, /^status\.mjs: .*answered text that is not a status document.*\n$/);
    } finally {
      await plainText.stop();
    }
    const unreachable = await runScript([`${plainText.url}/__failover/status`], { STATUS_TOKEN: "t-status-token-0123" });
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /^status\.mjs: cannot reach .*ECONNREFUSED\n$/);

    const usage = await runScript([statusUrl()]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /no token/);
  });
});

test("scripts/status.mjs --watch [N] and --json: their arguments, and a bad N is a usage error", async () => {
  const env = { STATUS_TOKEN: "t-status-token-0123" };
  const cases = [
    [["https://h"], null, false],
    [["https://h", "--watch"], 2, false],
    [["--watch", "https://h"], 2, false],
    [["https://h", "--watch", "5"], 5, false],
    [["https://h", "--watch", "0.5", "--json"], 0.5, true],
    [["https://h", "--watch=3600"], 3600, false],
    [["--json", "https://h", "--watch", "--json"], 2, true],
  ];
  for (const [argv, watch, json] of cases) {
    const args = parseArgs(argv, env);
    assert.deepEqual([args.watch, args.json, args.url.href], [watch, json, "https://h/__failover/status"], argv.join(" "));
  }
  for (const bad of ["0", "0.4", "-1", "abc", "1e3", "3601", "2s", "", "Infinity", "NaN", "0x10"]) {
    const argv = bad === "" ? ["https://h", "--watch="] : ["https://h", "--watch", bad];
    assert.throws(() => parseArgs(argv, env), /^Error: --watch takes a number of seconds from 0\.5 to 3600; got /, bad);
  }
  const usage = await runScript(["https://h", "--watch", "abc"], env);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /^status\.mjs: --watch takes a number of seconds from 0\.5 to 3600; got "abc"\nusage: /);

  // What a frame prints: the screen cleared only on a terminal.
  const text = `${TITLE}\nrow\n`;
  assert.equal(frame(text, { json: false, watch: null, tty: true, first: true }), text);
  assert.equal(frame(text, { json: false, watch: 2, tty: false, first: true }), text);
  assert.equal(frame(text, { json: false, watch: 2, tty: false, first: false }), `\n${text}`);
  assert.equal(frame(text, { json: false, watch: 2, tty: true, first: false }), `${CLEAR}${text}\n(every 2 s; Ctrl-C to stop)\n`);
  const doc = { version: "1", origins: [], odd: "\u009b\u001b\u007f" };
  assert.equal(frame(doc, { json: true, watch: 2, tty: true, first: false }), '{"version":"1","origins":[],"odd":"\\u009b\\u001b\\u007f"}\n');
  assert.deepEqual(JSON.parse(frame(doc, { json: true, watch: null, tty: false, first: true })), doc);
});

describe("scripts/status.mjs against the Worker: --json and --watch", () => {
  let primary;
  let replica;
  let worker;
  const env = { STATUS_TOKEN: "s3cret-token-for-the-status" };
  const statusUrl = () => `${worker.url}/__failover/status`;

  before(async () => {
    primary = await startOrigin("primary");
    replica = await startOrigin("replica");
    worker = await startWorker({ ORIGINS: originsVar(primary, replica), STATUS_TOKEN: "s3cret-token-for-the-status" });
    primary.mode = 530;
    await (await worker.fetch("/warm")).arrayBuffer();
  });

  after(async () => {
    await worker?.dispose();
    await primary?.stop();
    await replica?.stop();
  });

  test("--json prints the document, indented", async () => {
    const run = await runScript([statusUrl(), "--json"], env);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^\{\n {2}"/);
    const doc = JSON.parse(run.stdout);
    assert.deepEqual(
      doc.origins.map((o) => [o.name, o.state]),
      [
        ["primary", "down"],
        ["replica", "up"],
      ],
    );
    // A proxied path answers JSON too, but not ours.
    const proxied = await runScript([`${worker.url}/elsewhere`, "--json"], env);
    assert.equal(proxied.code, 1);
    assert.match(proxied.stderr, /^status\.mjs: .*answered 200 from an origin behind the Worker \(X-Served-By\): not the Worker's status endpoint.*\n$/);
    const denied = await runScript([statusUrl(), "--json", "--token", "wrong"]);
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /refused the token \(401\)/);
  });

  test("--watch re-prints, a blank line between answers when stdout is not a terminal", async () => {
    const run = await watchScript([statusUrl(), "--watch", "0.5"], env, (out) => out.split(`${TITLE}\n`).length > 3);
    assert.equal(run.stderr, "");
    assert.doesNotMatch(run.stdout, /\u001b/, "no screen clearing into a file or a pipe");
    const frames = run.stdout.split(`\n\n${TITLE}\n`);
    assert.ok(frames.length >= 3, run.stdout);
    assert.ok(frames[0].startsWith(`${TITLE}\n[FAILOVER] Serving from replica`));
    for (const f of frames.slice(1, -1)) assert.match(f, /^\[FAILOVER\] Serving from replica/);

    const json = await watchScript([statusUrl(), "--watch", "0.5", "--json"], env, (out) => out.split("\n").length > 2);
    const lines = json.stdout.split("\n").filter(Boolean);
    for (const line of lines.slice(0, 2)) assert.equal(JSON.parse(line).origins.length, 2);
  });

  test("--watch clears the screen on a terminal", { skip: hasScript() ? false : "no script(1) to give it a terminal" }, async () => {
    const run = await watchScript(
      [statusUrl(), "--watch", "0.5"],
      env,
      (out) => out.split(CLEAR).length > 2,
      { tty: true },
    );
    const frames = run.stdout.split(CLEAR);
    assert.ok(frames.length > 2);
    assert.match(frames[1].replace(/\r/g, ""), new RegExp(`^${TITLE}\n\\[FAILOVER\\] Serving from replica[\\s\\S]*\n\\(every 0\\.5 s; Ctrl-C to stop\\)\n$`));
  });

  test("--watch carries on through failed polls but stops at a refused token", async () => {
    const denied = await watchScript([statusUrl(), "--watch", "0.5", "--token", "wrong"], {}, () => false);
    assert.equal(denied.code, 1, "exits by itself");
    assert.match(denied.stderr, /^status\.mjs: \d\d:\d\d:\d\d UTC: .*refused the token \(401\)/);
    assert.equal(denied.stdout, "");

    const gone = await startOrigin("gone");
    await gone.stop();
    const unreachable = await watchScript([`${gone.url}/__failover/status`, "--watch", "0.5"], env, (_, err) => err.split("\n").length > 2);
    assert.equal(unreachable.code, null, "still running when stopped");
    const lines = unreachable.stderr.split("\n").filter(Boolean);
    assert.ok(lines.length >= 2);
    for (const line of lines) assert.match(line, /^status\.mjs: \d\d:\d\d:\d\d UTC: cannot reach .*ECONNREFUSED$/);
  });
});

test("a hostile origin name never reaches a page: the config refuses it", async () => {
  // Names are checked at config time (letters, digits, - _ .), so this is
  // the only answer such a Worker gives; the page's own escaping is proven
  // in edge/report/page.rs (every_string_is_escaped).
  const primary = await startOrigin("primary");
  const worker = await startWorker({
    ORIGINS: JSON.stringify([{ name: "<script>alert(1)</script>", url: primary.url }]),
    STATUS_TOKEN: "t-status-token-0123",
  });
  try {
    const res = await worker.fetch("/__failover/status", { headers: { authorization: "Bearer t-status-token-0123", accept: CHROME_ACCEPT } });
    assert.equal(res.status, 500);
    assert.match(res.headers.get("content-type"), /^text\/plain/);
    assert.match(await res.text(), /^configuration error in ORIGINS\[0\]\.name: must be 1-64 characters/);
  } finally {
    await worker.dispose();
    await primary.stop();
  }
});

test("scripts/status.mjs keeps control characters off the terminal, whoever answers", async () => {
  // The Worker's renderer replaces them (edge/report/text.rs,
  // no_control_character_reaches_the_terminal) and the config refuses such
  // names; this is the script's own filter, against something that answers
  // like the Worker and is not.
  const impostor = await startOrigin("impostor");
  impostor.mode = {
    status: 200,
    headers: { "content-type": "text/plain; charset=utf-8", "x-tunnel-failover": "status" },
    body: `${TITLE}\n\u001b[2J\u001b]0;pwned\u0007 \u009b31m down\r\nnext line\n`,
  };
  try {
    const run = await runScript([`${impostor.url}/__failover/status`], { STATUS_TOKEN: "t-status-token-0123" });
    assert.equal(run.code, 0, run.stderr);
    assert.doesNotMatch(run.stdout, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    assert.equal(run.stdout, `${TITLE}\n?[2J?]0;pwned? ?31m down?\nnext line\n`);
  } finally {
    await impostor.stop();
  }
});
