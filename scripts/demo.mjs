// `make demo`: the product's main job on a laptop, no Cloudflare account.
// Two local origins, the built Worker under `wrangler dev`, and a walk
// through failover and fail-back shown with `curl -I`. Waits for Enter
// between steps on a terminal; runs straight through otherwise.
import http from "node:http";
import net from "node:net";
import fs from "node:fs";
import path from "node:path";
import { spawn, execFile } from "node:child_process";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { COMPAT_DATE } from "./compat-date.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const interactive = process.stdin.isTTY;
const children = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function say(text) {
  process.stdout.write(`\n\x1b[1m${text}\x1b[0m\n`);
}

async function pause() {
  if (!interactive) return;
  process.stdout.write("\n[press Enter to continue, Ctrl-C to quit] ");
  await new Promise((resolve) => process.stdin.once("data", resolve));
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// A stand-in for a service behind a Tunnel: answers / and /health.
function origin(name, port) {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/plain", "x-origin": name });
    res.end(`hello from ${name}\n`);
  });
  return {
    name,
    port,
    start: () => new Promise((resolve) => server.listen(port, "127.0.0.1", resolve)),
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// Async on purpose: the origins live in this process, and a synchronous
// child would freeze their event loop mid-demo.
async function curlHead(url) {
  try {
    const { stdout } = await promisify(execFile)("curl", ["-sS", "-I", "--max-time", "15", url], { encoding: "utf8" });
    return stdout;
  } catch (e) {
    return `(curl failed: ${e.message.split("\n")[0]})\n`;
  }
}

async function show(url) {
  process.stdout.write(`$ curl -I ${url}\n`);
  const out = await curlHead(url);
  process.stdout.write(out.replace(/\r/g, ""));
  return out;
}

function cleanup() {
  for (const child of children) {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {}
  }
}
process.on("SIGINT", () => {
  cleanup();
  process.stdout.write("\nstopped everything the demo started\n");
  process.exit(130);
});
process.on("exit", cleanup);

async function waitFor(url, deadlineMs) {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      return true;
    } catch {
      await sleep(300);
    }
  }
  return false;
}

const [primaryPort, replicaPort, workerPort] = await Promise.all([freePort(), freePort(), freePort()]);
const primary = origin("primary", primaryPort);
const replica = origin("replica", replicaPort);
await primary.start();
await replica.start();

const demoDir = path.join(root, "target", "demo");
fs.mkdirSync(demoDir, { recursive: true });
const intervalMs = 1000;
const rise = 2;
fs.writeFileSync(
  path.join(demoDir, "wrangler.toml"),
  `# written by scripts/demo.mjs
name = "tunnel-failover-demo"
main = "${path.join(root, "build", "index.js")}"
compatibility_date = "${COMPAT_DATE}"

[vars]
ORIGINS = '[{"name":"primary","url":"http://127.0.0.1:${primaryPort}","health_path":"/health"},{"name":"replica","url":"http://127.0.0.1:${replicaPort}","health_path":"/health"}]'
ATTEMPT_TIMEOUT_MS = 2000
HEALTH_INTERVAL_MS = ${intervalMs}
HEALTH_RISE = ${rise}
STATUS_TOKEN = "demo-status-token-0123"
`,
);

say(`Origins: primary on 127.0.0.1:${primaryPort}, replica on 127.0.0.1:${replicaPort}. Starting the Worker under wrangler dev...`);
const wrangler = spawn(
  path.join(root, "node_modules", ".bin", "wrangler"),
  ["dev", "--config", path.join(demoDir, "wrangler.toml"), "--ip", "127.0.0.1", "--port", String(workerPort), "--log-level", "warn"],
  { cwd: demoDir, detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" } },
);
children.push(wrangler);
let wranglerOutput = "";
wrangler.stdout.on("data", (d) => (wranglerOutput += d));
wrangler.stderr.on("data", (d) => (wranglerOutput += d));

const url = `http://127.0.0.1:${workerPort}/`;
if (!(await waitFor(url, 60000))) {
  process.stderr.write(`wrangler dev did not start within 60 s. Its output:\n${wranglerOutput}\n`);
  process.exit(1);
}

say("1. Both origins up: the primary serves (X-Served-By: primary).");
const first = await show(url);
await pause();

say("2. The primary goes down. The next request fails over to the replica (x-failover: replica).");
await primary.stop();
const second = await show(url);
await pause();

say(`3. The primary comes back. Down origins are probed every ${intervalMs} ms in the background; after ${rise} good probes in a row traffic returns.`);
await primary.start();
let third = "";
for (let i = 0; i < 20; i++) {
  await sleep(intervalMs / 2);
  const res = await fetch(url, { method: "HEAD" });
  if (res.headers.get("x-served-by") === "primary") break;
}
third = await show(url);

say("4. What the Worker knows: the status endpoint (GET /__failover/status with the bearer token).");
// The form to copy: the header on stdin keeps a real token out of ps.
process.stdout.write(`$ curl -H @- ${url}__failover/status <<<"Authorization: Bearer demo-status-token-0123"\n`);
try {
  const res = await fetch(`${url}__failover/status`, { headers: { authorization: "Bearer demo-status-token-0123" } });
  const doc = await res.json();
  for (const o of doc.origins) {
    process.stdout.write(`  ${o.name.padEnd(8)} ${o.state.padEnd(5)} last error: ${o.last_error ?? "none"}\n`);
  }
} catch (e) {
  process.stdout.write(`(status unavailable: ${e.message})\n`);
}

const ok =
  /x-served-by: primary/i.test(first) && /x-failover: replica/i.test(second) && /x-served-by: primary/i.test(third) && !/x-failover/i.test(third);
say(ok ? "Done: failover and fail-back, with no one paged." : "The walkthrough did not go as expected; see the output above.");
cleanup();
await primary.stop().catch(() => {});
await replica.stop().catch(() => {});
process.exit(ok ? 0 : 1);
