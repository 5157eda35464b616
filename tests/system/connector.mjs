// A cloudflared double for the system run: it keeps --ha-connections
// persistent connections to a tunnel's connect address on the edge simulator
// (tests/system/edge.mjs), serves the requests the edge sends down them by
// forwarding each to the node's app, and reports readiness on cloudflared's
// metrics `/ready`, and the requests it is proxying now on `/metrics` as
// cloudflared's gauge `cloudflared_tunnel_concurrent_requests_per_tunnel`
// (what the agent's drain before a stop waits on). Like cloudflared, it
// does not watch its app: with the app dead it stays registered and
// answers 502 for it, and `/ready` stays 200.
//
// usage: node tests/system/connector.mjs --edge HOST:PORT
//          --app http://127.0.0.1:PORT --metrics HOST:PORT --id NAME
//          [--ha-connections N]
// --metrics may use port 0; the bound address is the first line it prints.
// It prints one JSON line per event (listening, registered, unregistered)
// on stdout, and exits 0 on SIGTERM/SIGINT, 2 on a bad argument.
//
// What the model leaves out: QUIC, TLS and the real control stream (a
// registration is the edge's `GET /__connector` on a plain HTTP/2
// connection); cloudflared's own heartbeats (it learns of a lost connection
// only when the socket closes, which the uplink double always makes
// happen); ingress rules (one app serves every hostname); pooled
// connections to the app (cloudflared pools them and Go re-sends a request
// that failed on a stale pooled one; here each request gets a fresh
// connection, so there is nothing to re-send); the empty 502 marked
// `cf-cloudflared-response-meta: {"src":"cloudflared"}` that the real edge
// turns into its own error page (this 502 carries cloudflared's log line
// instead, so a test can tell a connector's 502 from the edge's);
// upgrades other than WebSocket (a WebSocket is one stream, in flight
// while it is open: see edge.mjs). Graceful shutdown is modelled as
// cloudflared does it: SIGTERM sends each edge connection a GOAWAY (the edge
// stops routing new requests to it at once), lets the requests in flight
// finish, and exits once they have or when --grace-period (cloudflared's
// flag; 30 s there, 5 s here) runs out. SIGKILL is the ungraceful death.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { endToEndHeaders } from "./edge.mjs";

// A dial or handshake that has not registered by then is abandoned: an
// uplink that black-holes packets must not hold a connection slot forever.
const REGISTER_TIMEOUT_MS = 2000;
const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 2000;
// cloudflared gives up on an app that sends no response headers.
const APP_HEADERS_TIMEOUT_MS = 30000;
const GRACE_PERIOD_MS = 5000;
const UNREACHABLE =
  "Unable to reach the origin service. The service may be down or it may not be responding to traffic from cloudflared";

// `edge` and `metrics` are {host, port}, `app` a URL. Resolves once the
// metrics listener is bound (before any registration: a connector that is
// up but not connected must be observable as such).
export async function startConnector({ edge, app, metrics, id, haConnections = 4, log = () => {} }) {
  const state = { id, edge, app, log, stopped: false, ready: new Set(), sockets: new Set(), sessions: new Set(), inFlight: 0 };
  const server = http.createServer((req, res) => answerReady(state, req, res));
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(metrics.port, metrics.host, resolve);
  });
  const bound = server.address();
  log({ event: "listening", metrics: `${bound.address}:${bound.port}` });
  for (let slot = 0; slot < haConnections; slot++) keepConnected(state, slot);
  return {
    stop() {
      state.stopped = true;
      for (const socket of state.sockets) socket.destroy();
      server.closeAllConnections();
      server.close();
    },
    // GOAWAY on every edge connection, then wait (bounded) for the requests
    // in flight; resolves once every connection has closed.
    async drain(graceMs = GRACE_PERIOD_MS) {
      state.stopped = true;
      const closed = [...state.sessions].map((session) => new Promise((resolve) => session.close(resolve)));
      await Promise.race([Promise.all(closed), new Promise((resolve) => setTimeout(resolve, graceMs))]);
      this.stop();
    },
  };
}

// One connection slot: dial, wait for the edge to register it, serve until
// the socket closes, then dial again after a backoff that doubles on each
// failed attempt and starts over after a registration.
function keepConnected(state, slot) {
  let backoff = BACKOFF_FIRST_MS;
  const dial = () => {
    if (state.stopped) return;
    const socket = net.connect(state.edge.port, state.edge.host);
    state.sockets.add(socket);
    let registered = false;
    const deadline = setTimeout(() => socket.destroy(), REGISTER_TIMEOUT_MS);
    const server = http2.createServer((req, res) => {
      if (req.url !== "/__connector") return forward(state, req, res);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: state.id }));
      if (registered) return;
      registered = true;
      clearTimeout(deadline);
      backoff = BACKOFF_FIRST_MS;
      state.ready.add(socket);
      state.log({ event: "registered", slot, readyConnections: state.ready.size });
    });
    server.on("session", (session) => {
      state.sessions.add(session);
      session.on("close", () => state.sessions.delete(session));
    });
    socket.setNoDelay(true);
    socket.on("connect", () => server.emit("connection", socket));
    // The "close" that follows any error is where the slot recovers.
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(deadline);
      state.sockets.delete(socket);
      if (state.ready.delete(socket)) {
        state.log({ event: "unregistered", slot, readyConnections: state.ready.size });
      }
      if (state.stopped) return;
      setTimeout(dial, backoff);
      if (!registered) backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    });
  };
  dial();
}

// cloudflared's metrics `/ready`: readiness means a live edge registration,
// not a running process. `/metrics`: the gauge of requests in flight (the
// one line of cloudflared's many that the agent reads).
function answerReady(state, req, res) {
  const pathname = new URL(req.url, "http://metrics").pathname;
  if (pathname === "/metrics") {
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
    return res.end(
      "# HELP cloudflared_tunnel_concurrent_requests_per_tunnel Concurrent requests proxied through each tunnel\n" +
        "# TYPE cloudflared_tunnel_concurrent_requests_per_tunnel gauge\n" +
        `cloudflared_tunnel_concurrent_requests_per_tunnel ${state.inFlight}\n`,
    );
  }
  if (pathname !== "/ready") {
    res.writeHead(404, { "content-type": "text/plain" });
    return res.end("404 page not found\n");
  }
  const readyConnections = state.ready.size;
  const status = readyConnections >= 1 ? 200 : 503;
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ status, readyConnections, connectorId: state.id }));
}

// One request from the edge to the app, bodies streamed both ways and
// nothing retried: a request that may have reached the app is never sent
// twice by the connector.
function forward(state, req, res) {
  // In flight from the edge's request to the end of our answer, as
  // cloudflared counts it.
  state.inFlight++;
  let counted = true;
  res.on("close", () => {
    if (counted) state.inFlight--;
    counted = false;
  });
  if (req.headers["x-sim-upgrade"] === "websocket") return forwardUpgrade(state, req, res);
  const { host, ...rest } = endToEndHeaders(req.headers);
  const toApp = http.request({
    host: state.app.hostname,
    port: state.app.port,
    method: req.method,
    path: req.url,
    headers: { ...rest, host: req.headers[":authority"] ?? host },
    agent: false,
  });
  const unreachable = () => {
    if (res.headersSent || res.stream.destroyed) return;
    res.writeHead(502, { "content-type": "text/plain; charset=utf-8" });
    res.end(UNREACHABLE);
  };
  const headersDeadline = setTimeout(() => toApp.destroy(), APP_HEADERS_TIMEOUT_MS);
  // Whichever comes first: refused, reset, or destroyed at the deadline.
  toApp.on("error", unreachable);
  toApp.on("close", unreachable);
  toApp.on("response", (appRes) => {
    clearTimeout(headersDeadline);
    res.writeHead(appRes.statusCode, endToEndHeaders(appRes.headers));
    appRes.pipe(res);
    // The app died mid-body: reset the stream so the edge cuts the client
    // off instead of ending a short body as if it were whole.
    appRes.on("close", () => {
      if (!appRes.complete && !res.stream.destroyed) res.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    });
  });
  req.pipe(toApp);
  // The edge gave up on the request (its client went away): so does the app's.
  res.on("close", () => {
    clearTimeout(headersDeadline);
    toApp.destroy();
  });
}

// A WebSocket from the edge to the app: the handshake on a fresh
// connection, then the stream and the app's socket piped both ways.
function forwardUpgrade(state, req, res) {
  const { host, "x-sim-upgrade": _, ...rest } = endToEndHeaders(req.headers);
  const toApp = http.request({
    host: state.app.hostname,
    port: state.app.port,
    method: "GET",
    path: req.url,
    headers: { ...rest, host: req.headers[":authority"] ?? host, connection: "Upgrade", upgrade: "websocket" },
    agent: false,
  });
  const refused = () => {
    if (res.headersSent || res.stream.destroyed) return;
    res.writeHead(502, { "content-type": "text/plain; charset=utf-8" });
    res.end(UNREACHABLE);
  };
  toApp.on("error", refused);
  toApp.on("response", (appRes) => {
    res.writeHead(appRes.statusCode, endToEndHeaders(appRes.headers));
    appRes.pipe(res);
  });
  toApp.on("upgrade", (appRes, socket, head) => {
    const headers = endToEndHeaders(appRes.headers);
    res.writeHead(200, { ...headers, "x-sim-upgrade-status": "101" });
    if (head.length) res.write(head);
    socket.on("error", () => {});
    socket.pipe(res.stream);
    req.pipe(socket);
    socket.on("close", () => res.stream.close());
    res.on("close", () => socket.destroy());
  });
  toApp.end();
}

function parse(argv) {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      edge: { type: "string" },
      app: { type: "string" },
      metrics: { type: "string" },
      id: { type: "string" },
      "ha-connections": { type: "string", default: "4" },
    },
  });
  const app = URL.canParse(values.app ?? "") ? new URL(values.app) : null;
  if (!app || app.protocol !== "http:") {
    throw new Error(`--app: ${JSON.stringify(values.app ?? "")} is not an http:// URL, e.g. http://127.0.0.1:8080`);
  }
  if (!values.id) throw new Error("--id: missing; a name for this connector, e.g. --id node-a");
  const haConnections = Number(values["ha-connections"]);
  if (!Number.isInteger(haConnections) || haConnections < 1 || haConnections > 16) {
    throw new Error(`--ha-connections: ${JSON.stringify(values["ha-connections"])} is not a whole number from 1 to 16`);
  }
  return {
    edge: hostPort("--edge", values.edge),
    app,
    metrics: hostPort("--metrics", values.metrics),
    id: values.id,
    haConnections,
  };
}

function hostPort(flag, value) {
  const match = /^([^:]+):(\d{1,5})$/.exec(value ?? "");
  const port = match ? Number(match[2]) : -1;
  if (!match || port > 65535) {
    throw new Error(`${flag}: ${JSON.stringify(value ?? "")} is not HOST:PORT, e.g. 127.0.0.1:7844`);
  }
  return { host: match[1], port };
}

async function main() {
  let options;
  try {
    options = parse(process.argv.slice(2));
  } catch (err) {
    console.error(`connector: ${err.message.split("\n")[0]}`);
    process.exit(2);
  }
  const log = (event) => console.log(JSON.stringify({ at: new Date().toISOString(), connector: options.id, ...event }));
  let connector;
  try {
    connector = await startConnector({ ...options, log });
  } catch (err) {
    const { host, port } = options.metrics;
    console.error(`connector: --metrics: cannot listen on ${host}:${port}: ${err.code ?? err.message}`);
    process.exit(1);
  }
  for (const signal of ["SIGTERM", "SIGINT"]) {
    process.once(signal, async () => {
      log({ event: "draining", signal });
      await connector.drain();
      process.exit(0);
    });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
