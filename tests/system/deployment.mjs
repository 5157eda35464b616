// One whole deployment on loopback for `make system`: the edge simulator,
// nodes (an app, an uplink, a connector double started and stopped by a real
// failover-agent process), the built Worker in Miniflare, and a steady client
// load. Scenarios (tests/system/run.mjs) break parts of it and read the
// client's records.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startApp } from "./app.mjs";
import { startEdge } from "./edge.mjs";
import { startReceiver } from "./receiver.mjs";
import WebSocket from "ws";
import { startUplink } from "./uplink.mjs";
import { startWorker } from "../support/worker.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, "..", "..");
const CONNECTOR = path.join(here, "connector.mjs");
export const AGENT = path.join(
  process.env.CARGO_TARGET_DIR ?? path.join(root, "target"),
  "debug",
  "failover-agent",
);

// The agents' clocks, fast enough for a run of minutes: every check each
// second, take over after 3 misses, fail back after 2 good egress checks,
// app down after 3 failed checks and up after 2 good ones.
export const AGENT_TIMING = { pollMs: 1000, takeoverAfter: 3, failbackAfter: 2, appFall: 3, appRise: 2 };

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A port for a process this run starts later (an agent, a connector's
// metrics). Picked below Linux's ephemeral range (32768-60999): a port the
// kernel handed out for bind(0) can be handed to any other process between
// our close and the agent's bind (seen: "Address already in use" with
// benchmarks running beside the tests), one out of that range only to a
// process that asks for it by number.
const LOW_PORTS = { from: 20000, to: 32000 };

async function bindable(port) {
  const server = net.createServer();
  const ok = await new Promise((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => resolve(true));
  });
  if (ok) await new Promise((resolve) => server.close(resolve));
  return ok;
}

export async function freePort() {
  for (let tries = 0; tries < 50; tries++) {
    const port = LOW_PORTS.from + Math.floor(Math.random() * (LOW_PORTS.to - LOW_PORTS.from));
    if (await bindable(port)) return port;
  }
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// Not under /tmp, /var/tmp or /home: the agent refuses a maintenance flag
// there (the packaged unit hides those from it); /dev/shm is on every Linux.
// The key of the notifications' signatures (each node's secret_file).
const NOTIFY_SECRET = `system-notify-${process.pid}`;
// The Worker's ADMIN_TOKEN, and each agent's [worker] admin_token_file.
export const ADMIN_TOKEN = `system-admin-token-${process.pid}`;
// The Worker's STATUS_PATH (its default) and STATUS_TOKEN.
export const STATUS_PATH = "/__failover/status";
const STATUS_TOKEN = `system-status-token-${process.pid}`;

export function scratch() {
  const root = existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir();
  const dir = mkdtempSync(path.join(root, "tunnel-failover-system-"));
  writeFileSync(path.join(dir, "token"), `system-${process.pid}-${Date.now()}\n`, { mode: 0o600 });
  writeFileSync(path.join(dir, "notify-secret"), `${NOTIFY_SECRET}\n`, { mode: 0o600 });
  writeFileSync(path.join(dir, "admin-token"), `${ADMIN_TOKEN}\n`, { mode: 0o600 });
  return dir;
}

// One node: its app, its uplink to the edge (the tunnel's connect address
// and the edge's trace endpoint), and a real agent that starts and stops
// the connector double through shell commands, as it would cloudflared.
// `worker`: the Worker's URL, for [worker] (the drain before a planned
// stop); `drainTimeoutMs` its drain_timeout.
export async function startNode({ name, dir, edge, tunnel, topology, role, agentPort, peerAgentPort, worker, drainTimeoutMs }) {
  const app = await startApp(name);
  // Where this node's agent tells its decisions ([notify]).
  const receiver = await startReceiver(NOTIFY_SECRET);
  const stateDir = path.join(dir, `${name}.state`);
  mkdirSync(stateDir, { recursive: true });
  const uplink = await startUplink([
    { host: "127.0.0.1", port: edge.tunnel(tunnel).connectPort },
    { host: edge.traceHost, port: edge.tracePort },
  ]);
  const metricsPort = await freePort();
  const pidFile = path.join(dir, `${name}.connector.pid`);
  const connectorLog = path.join(dir, `${name}.connector.log`);
  const config = path.join(dir, `${name}.toml`);
  const [toEdge, toTrace] = uplink.addrs;
  const q = (s) => `'${s.replaceAll("'", "'\\''")}'`;
  const start =
    `${q(process.execPath)} ${q(CONNECTOR)} --edge 127.0.0.1:${toEdge.port} --app ${app.url} ` +
    `--metrics 127.0.0.1:${metricsPort} --id ${name} >> ${q(connectorLog)} 2>&1 & echo $! > ${q(pidFile)}`;
  // As `systemctl stop`: SIGTERM, then wait (bounded) for the connector's
  // graceful shutdown, which lets requests in flight finish.
  const stop =
    `if [ -f ${q(pidFile)} ]; then pid=$(cat ${q(pidFile)}); kill $pid 2>/dev/null; ` +
    `for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done; ` +
    `kill -9 $pid 2>/dev/null; rm -f ${q(pidFile)}; fi; true`;
  const status = `[ -f ${q(pidFile)} ] && kill -0 $(cat ${q(pidFile)}) 2>/dev/null`;
  const lines = [
    topology === "tunnel-per-node" ? `topology = "tunnel-per-node"` : `role = "${role}"`,
    `name = "${name}"`,
    `listen = "127.0.0.1:${agentPort}"`,
    `token_file = "${path.join(dir, "token")}"`,
    `maintenance_flag = "${path.join(dir, `${name}.maintenance`)}"`,
    `state_dir = "${stateDir}"`,
    `poll_interval = "${AGENT_TIMING.pollMs}ms"`,
    `failback_interval = "${AGENT_TIMING.pollMs}ms"`,
    `takeover_after = ${AGENT_TIMING.takeoverAfter}`,
    `failback_after = ${AGENT_TIMING.failbackAfter}`,
    `probe_timeout = "700ms"`,
    ``,
    `[connector]`,
    `ready_url = "http://127.0.0.1:${metricsPort}/ready"`,
    `control = "command"`,
    `start_command = ${JSON.stringify(start)}`,
    `stop_command = ${JSON.stringify(stop)}`,
    `status_command = ${JSON.stringify(status)}`,
    `command_timeout = "10s"`,
    ``,
    `[app]`,
    `health_url = "${app.url}/health"`,
    `interval = "${AGENT_TIMING.pollMs}ms"`,
    `fall = ${AGENT_TIMING.appFall}`,
    `rise = ${AGENT_TIMING.appRise}`,
    ``,
    `[egress]`,
    `url = "http://127.0.0.1:${toTrace.port}/cdn-cgi/trace"`,
    ``,
    `[notify]`,
    `url = "${receiver.url}"`,
    `format = "json"`,
    `secret_file = "${path.join(dir, "notify-secret")}"`,
  ];
  if (peerAgentPort) lines.push("", "[peer]", `agent_url = "http://127.0.0.1:${peerAgentPort}"`);
  if (worker) {
    // Fast: pinned requests for 2 s, quiet for 1 s; the wait long enough
    // for scenario 4's streaming download to finish on this node.
    lines.push(
      "",
      "[worker]",
      `url = "${worker}"`,
      `admin_token_file = "${path.join(dir, "admin-token")}"`,
      `origin = "${name}"`,
      `drain = "2s"`,
      `quiet_for = "1s"`,
      `drain_timeout = "${drainTimeoutMs ?? 30000}ms"`,
    );
  }
  // Owner-only: a config with a webhook URL in it must not be readable by
  // everyone (the agent refuses it otherwise).
  writeFileSync(config, lines.join("\n") + "\n", { mode: 0o600 });
  const check = spawnSync(AGENT, ["--config", config, "check-config"], { encoding: "utf8" });
  if (check.status !== 0) throw new Error(`${name}: check-config failed: ${check.stderr}`);

  const node = {
    name,
    app,
    uplink,
    receiver,
    agent: null,
    agentPort,
    metricsPort,
    agentLog: path.join(dir, `${name}.agent.log`),
    connectorPid() {
      try {
        return Number(readFileSync(pidFile, "utf8").trim()) || null;
      } catch {
        return null;
      }
    },
    startAgent() {
      const out = openLog(this.agentLog);
      this.agent = spawn(AGENT, ["--config", config, "run"], { stdio: ["ignore", out, out] });
    },
    async killAgent() {
      if (!this.agent || this.agent.exitCode !== null) return;
      const exited = new Promise((resolve) => this.agent.once("exit", resolve));
      this.agent.kill("SIGKILL");
      await exited;
    },
    // The node dies: its agent, its connector (no graceful shutdown) and
    // its app, all at once.
    async die() {
      await this.killAgent();
      const pid = this.connectorPid();
      if (pid) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {}
        rmSync(pidFile, { force: true });
      }
      await this.app.stop();
    },
    async boot() {
      await this.app.start();
      this.startAgent();
    },
    maintenance(on) {
      const r = spawnSync(AGENT, ["--config", config, "maintenance", on ? "on" : "off"], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(`${name}: maintenance ${on}: ${r.stderr}`);
    },
    async health() {
      try {
        const r = await fetch(`http://127.0.0.1:${agentPort}/health`, { signal: AbortSignal.timeout(2000) });
        return await r.json();
      } catch {
        return null;
      }
    },
    async close() {
      await this.die().catch(() => {});
      await this.uplink.close();
      await this.receiver.close();
    },
  };
  node.startAgent();
  return node;
}

// A plain fd, appended to: the agent's log survives its restarts.
function openLog(file) {
  return openSync(file, "a");
}

// The Worker in Miniflare in front of the tunnels' public URLs, with fast
// health settings so a run takes minutes.
export async function startFrontWorker(origins) {
  return startWorker({
    ORIGINS: JSON.stringify(origins.map(({ name, url }) => ({ name, url, health_path: "/health" }))),
    ATTEMPT_TIMEOUT_MS: "3000",
    HEALTH_INTERVAL_MS: "500",
    HEALTH_RISE: "2",
    COLO_HEALTH: "off",
    STATUS_TOKEN,
    ADMIN_TOKEN,
    // The global checker stores the overrides the agents' drain sets; its
    // own probes run too, as in a deployment that uses overrides.
  }, { durableObjects: { HEALTH_CHECKER: "HealthChecker" } });
}

// The Worker in front of the same two tunnels with SITES: `sites` names,
// each a site with an origin on each node (`node` = the tunnel's name), its
// host `<name>.example`.
export async function startSitesWorker(sites, tunnels) {
  const SITES = sites.map((site) => ({
    name: site,
    hosts: [`${site}.example`],
    origins: tunnels.map(({ name, url }) => ({ name: `${site}-${name}`, url, health_path: "/health", node: name })),
  }));
  return startWorker({
    SITES: JSON.stringify(SITES),
    ATTEMPT_TIMEOUT_MS: "3000",
    HEALTH_INTERVAL_MS: "500",
    HEALTH_RISE: "2",
    COLO_HEALTH: "off",
    STATUS_TOKEN,
  });
}

// Whether the Worker calls every origin up, in its own map and (when it
// has heard from it) in the global checker's: the steady state a scenario
// starts from. The checker probes from the Worker's first request on, so
// at start-up it has seen the tunnels without connectors (530) and holds
// them down until its probes prove them back; a scenario that began then
// would measure the start-up, not the failure it injects.
export async function workerSeesAllUp(worker) {
  try {
    const r = await fetch(`${worker.url}${STATUS_PATH}`, {
      headers: { authorization: `Bearer ${STATUS_TOKEN}`, accept: "application/json" },
      signal: AbortSignal.timeout(5000),
    });
    if (r.status !== 200) return false;
    const { origins } = await r.json();
    return origins.every((o) => o.state === "up" && (o.global === null || o.global?.state === "up"));
  } catch {
    return false;
  }
}

// Whether the Worker answers the admin API (`GET {STATUS_PATH}/origins`
// with the admin token: 200 and {"overrides": ...}); else why not, in words.
export async function adminApi(worker) {
  try {
    const r = await fetch(`${worker.url}${STATUS_PATH}/origins`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      signal: AbortSignal.timeout(5000),
    });
    const text = await r.text();
    let body = null;
    try {
      body = JSON.parse(text);
    } catch {}
    if (r.status === 200 && body && typeof body.overrides === "object") return { ok: true };
    return { ok: false, why: `the Worker answered HTTP ${r.status}${body ? "" : " (not JSON)"} at ${STATUS_PATH}/origins` };
  } catch (e) {
    return { ok: false, why: `the Worker did not answer at ${STATUS_PATH}/origins: ${e.message}` };
  }
}

// A download through the Worker that lasts `seconds`: resolves with what
// the client got (status, whether it saw the app's "done", which node).
export async function download(url, seconds) {
  const started = Date.now();
  try {
    const r = await fetch(`${url}/stream?s=${seconds}`, { signal: AbortSignal.timeout((seconds + 30) * 1000) });
    const text = await r.text();
    return { status: r.status, complete: text.endsWith("done\n"), node: /app=(\w+)/.exec(text)?.[1] ?? null, ms: Date.now() - started };
  } catch (e) {
    return { status: null, complete: false, node: null, error: e.name, ms: Date.now() - started };
  }
}

// A steady load through the Worker: `concurrency` loops, each alternating a
// GET and a POST that carries a unique x-request-id. Every answer is
// recorded with the node that served it (the app names itself in the body).
// `fetchFn`: how a request is sent (a Miniflare `dispatchFetch`, to reach
// the Worker under a site's hostname); global fetch by default. `name`
// keeps the request ids of several loads at once apart.
export function startLoad(url, { concurrency = 4, pauseMs = 10, fetchFn = fetch, name = "" } = {}) {
  const records = [];
  let running = true;
  let n = 0;
  const one = async (method) => {
    const id = `req-${process.pid}-${name}${++n}`;
    const started = Date.now();
    const record = { t: started, method, id, status: null, node: null, error: null, failover: false };
    try {
      const r = await fetchFn(url + (method === "GET" ? `/item/${n}` : "/orders"), {
        method,
        headers: method === "POST" ? { "x-request-id": id, "content-type": "application/json" } : {},
        body: method === "POST" ? JSON.stringify({ order: n }) : undefined,
        redirect: "manual",
        signal: AbortSignal.timeout(15000),
      });
      const text = await r.text();
      record.status = r.status;
      record.failover = r.headers.has("x-failover");
      if (r.status < 500) {
        const m = /app=(\w+)/.exec(text) ?? /"app":"(\w+)"/.exec(text);
        record.node = m ? m[1] : null;
      }
    } catch (e) {
      record.error = e.name === "TimeoutError" ? "timeout" : "network";
    }
    record.done = Date.now();
    records.push(record);
  };
  const loops = Array.from({ length: concurrency }, async () => {
    while (running) {
      await one("GET");
      await one("POST");
      await sleep(pauseMs);
    }
  });
  return {
    records,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

export function agentLogs(nodes) {
  return nodes
    .map((n) => `----- ${n.name} agent -----\n${existsSync(n.agentLog) ? readFileSync(n.agentLog, "utf8") : ""}`)
    .join("\n");
}

// A WebSocket through the Worker, open for `seconds`: a message each second,
// each echoed by the app, then a clean close from this side. Resolves with
// what the client saw: messages sent and echoed, the node that echoed, how
// it closed.
export function websocketSession(url, seconds) {
  return new Promise((resolve) => {
    const got = { opened: false, sent: 0, echoed: 0, node: null, closeCode: null, error: null };
    const ws = new WebSocket(`${url.replace(/^http/, "ws")}/ws`);
    let timer = null;
    const done = () => {
      clearInterval(timer);
      resolve(got);
    };
    ws.on("open", () => {
      got.opened = true;
      timer = setInterval(() => {
        if (got.sent >= seconds) {
          clearInterval(timer);
          return ws.close(1000, "done");
        }
        ws.send(`m${++got.sent}`);
      }, 1000);
    });
    ws.on("message", (data) => {
      const [node, message] = String(data).split(":");
      if (message === `m${got.echoed + 1}`) got.echoed++;
      got.node = node;
    });
    ws.on("error", (e) => (got.error = e.message));
    ws.on("close", (code) => {
      got.closeCode = code;
      done();
    });
  });
}
