// A local stand-in for Cloudflare's edge in front of named tunnels: what a
// Worker's fetch to a tunnel hostname meets. Per tunnel, a public HTTP/1.1
// listener and a connect listener where connectors (tests/system/connector.mjs)
// register. As with cloudflared, a registration is the connector's OUTBOUND
// connection, and the edge sends requests down it: the edge is the HTTP/2
// client, the connector the server. Each public request goes to one live
// registration picked at random, so a tunnel with several connectors spreads
// its traffic over all of them, whether or not their apps are alive.
//
// What it answers itself, as Cloudflare does:
// - no live registration: 530 "error code: 1033" (tunnel has no connector);
// - the chosen connection refused the request unread (a draining
//   connector's GOAWAY, REFUSED_STREAM): the request goes down another
//   connection (small bodies are buffered for that), 530 when none is left;
// - the chosen connection fails otherwise before response headers: 502
//   "error code: 502" (the request may have reached the connector:
//   ambiguous);
// - it fails after response headers: the client's socket is destroyed, so a
//   truncated body is an error, never a short success.
//
// What the model leaves out: TLS, QUIC and cloudflared's real wire format
// (headers travel as plain HTTP/2 headers, not serialized into
// cf-cloudflared-request-headers); tunnel tokens and authentication; colos
// (one edge, every registration equally near); the 100 s origin timeout
// (524) and every other 52x; Cloudflare's HTML error pages (the plain-text
// bodies are what a non-browser client gets); caching, compression, WAF;
// upgrades other than WebSocket; request headers beyond cf-ray and
// cf-connecting-ip. /cdn-cgi/trace is served on its own listener only.
//
// A WebSocket goes down one connection as one HTTP/2 stream carrying both
// directions (HTTP/2 forbids the Upgrade header, so the stream says
// `x-sim-upgrade: websocket` and the connector's answer
// `x-sim-upgrade-status: 101`), and lives as long as that stream: a
// connector that goes away cuts it, as cloudflared's stop does.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { randomBytes, randomInt } from "node:crypto";
import { pipeline } from "node:stream";

// How long a new connection may take to finish the HTTP/2 handshake and say
// which connector it is; past that it is no registration.
const REGISTER_TIMEOUT_MS = 2000;
// The edge notices a half-dead connection (the peer frozen, packets lost)
// only by asking: an unanswered PING drops the registration.
const PING_EVERY_MS = 1000;
const PING_TIMEOUT_MS = 1000;

// Hop-by-hop headers (RFC 9110 7.6.1) plus what HTTP/2 forbids: each hop
// drops them and sets its own. Exported because the connector double
// applies the same rule on its hop.
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
  "http2-settings",
]);

export function endToEndHeaders(headers) {
  const named = String(headers.connection ?? "")
    .split(",")
    .map((token) => token.trim().toLowerCase());
  const kept = {};
  for (const [name, value] of Object.entries(headers)) {
    const hopByHop = HOP_BY_HOP.has(name) || name.startsWith("proxy-") || named.includes(name);
    // Pseudo-headers (":status", ":path") belong to one HTTP/2 hop.
    if (!hopByHop && !name.startsWith(":")) kept[name] = value;
  }
  return kept;
}

export async function startEdge({ tunnels, onEvent = () => {} }) {
  const open = [];
  const byName = new Map();
  for (const name of tunnels) {
    byName.set(name, await startTunnel(name, onEvent, open));
  }
  const trace = http.createServer(answerTrace);
  await listen(trace, open);
  const tracePort = trace.address().port;
  return {
    tunnel(name) {
      const tunnel = byName.get(name);
      if (!tunnel) throw new Error(`no tunnel ${JSON.stringify(name)}; the edge has ${[...byName.keys()].join(", ")}`);
      return tunnel.view;
    },
    traceHost: "127.0.0.1",
    tracePort,
    traceUrl: `http://127.0.0.1:${tracePort}/cdn-cgi/trace`,
    async close() {
      for (const tunnel of byName.values()) {
        for (const registration of tunnel.live) registration.session.destroy();
        for (const session of tunnel.pending) session.destroy();
      }
      await Promise.all(open.map(closeServer));
    },
  };
}

async function startTunnel(name, onEvent, open) {
  const tunnel = { name, live: new Set(), pending: new Set(), served: [], onEvent };
  const connect = net.createServer((socket) => register(tunnel, socket));
  const pub = http.createServer((req, res) => accept(tunnel, req, res));
  pub.on("upgrade", (req, socket, head) => upgrade(tunnel, req, socket, head));
  await listen(connect, open);
  await listen(pub, open);
  tunnel.view = {
    publicUrl: `http://127.0.0.1:${pub.address().port}`,
    connectHost: "127.0.0.1",
    connectPort: connect.address().port,
    registrations: () => tunnel.live.size,
    served: tunnel.served,
  };
  return tunnel;
}

// A registration lives from the connector's answer to `GET /__connector`
// until its socket closes: a killed connector or a cut uplink removes it at
// once, a frozen one at the first unanswered PING.
function register(tunnel, socket) {
  socket.setNoDelay(true);
  const session = http2.connect("http://connector", { createConnection: () => socket });
  const registration = { session, connectorId: null, dropReason: "connection closed" };
  tunnel.pending.add(session);
  const deadline = setTimeout(() => session.destroy(), REGISTER_TIMEOUT_MS);
  let stopPinging = () => {};
  // Errors end in "close", which carries the news.
  session.on("error", () => {});
  // A draining connector (cloudflared on SIGTERM) says GOAWAY: no new
  // requests go to it from now on; those in flight finish.
  session.on("goaway", (code, lastStreamID) => {
    // Streams above this id were never processed (RFC 9113 6.8).
    registration.lastStreamID = lastStreamID;
    if (tunnel.live.delete(registration)) {
      announce(tunnel, "unregister", registration.connectorId, "goaway");
    }
  });
  session.on("close", () => {
    clearTimeout(deadline);
    stopPinging();
    tunnel.pending.delete(session);
    if (tunnel.live.delete(registration)) {
      announce(tunnel, "unregister", registration.connectorId, registration.dropReason);
    }
  });
  askConnectorId(session)
    .then((id) => {
      clearTimeout(deadline);
      if (session.destroyed) return;
      tunnel.pending.delete(session);
      registration.connectorId = id;
      tunnel.live.add(registration);
      stopPinging = keepPinging(registration);
      announce(tunnel, "register", id);
    })
    .catch(() => session.destroy());
}

function askConnectorId(session) {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": "GET", ":path": "/__connector" });
    let body = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk) => (body += chunk));
    stream.on("error", reject);
    stream.on("end", () => {
      try {
        const { id } = JSON.parse(body);
        if (typeof id === "string" && id !== "") return resolve(id);
      } catch {
        // falls through: not a connector's answer
      }
      reject(new Error("no connector id"));
    });
  });
}

function keepPinging(registration) {
  const { session } = registration;
  let unanswered = null;
  const timer = setInterval(() => {
    if (unanswered) return;
    // A draining session (GOAWAY) or one already gone takes no PING: ping()
    // would throw; its "close" stops this timer.
    if (session.destroyed || session.closed) return;
    unanswered = setTimeout(() => {
      registration.dropReason = "ping timeout";
      session.destroy();
    }, PING_TIMEOUT_MS);
    try {
      session.ping((err) => {
        clearTimeout(unanswered);
        unanswered = null;
        if (err) session.destroy();
      });
    } catch {
      clearTimeout(unanswered);
      unanswered = null;
    }
  }, PING_EVERY_MS);
  return () => {
    clearInterval(timer);
    clearTimeout(unanswered);
  };
}

function announce(tunnel, event, connectorId, reason) {
  tunnel.onEvent({ at: Date.now(), tunnel: tunnel.name, event, connectorId, reason, registrations: tunnel.live.size });
}

// Small request bodies (a known length up to 1 MiB) are read whole before
// the request goes down a tunnel, as Cloudflare's proxy buffers uploads: a
// request a connector refused unread (REFUSED_STREAM, its connection going
// away) can then be sent down another connection, body and all. Larger or
// unknown-length bodies stream through once.
const BUFFER_MAX_BYTES = 1024 * 1024;

function accept(tunnel, req, res) {
  // No Content-Length and no Transfer-Encoding: no body (RFC 9112 6.3).
  const length = Number(req.headers["content-length"] ?? 0);
  const small = !req.headers["transfer-encoding"] && Number.isFinite(length) && length <= BUFFER_MAX_BYTES;
  if (!small) return proxy(tunnel, req, res, undefined);
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => proxy(tunnel, req, res, Buffer.concat(chunks)));
  req.on("error", () => res.destroy());
}

// `body`: the whole body when it was buffered, undefined when it streams.
function proxy(tunnel, req, res, body, tried = new Set()) {
  const ray = `${randomBytes(8).toString("hex")}-SIM`;
  const record = (connectorId, status) =>
    tunnel.served.push({ connectorId, method: req.method, path: req.url, status, at: Date.now() });
  const live = [...tunnel.live].filter((r) => !tried.has(r));
  if (live.length === 0) {
    record(null, 530);
    return answerError(res, 530, "error code: 1033", ray);
  }
  const registration = live[randomInt(live.length)];
  const { session, connectorId } = registration;
  // A request the connector refused unread (its connection was going away)
  // never reached it: the edge tries another connection, as Cloudflare's
  // does, and answers 530 when none is left.
  const elsewhere = () => {
    tried.add(registration);
    proxy(tunnel, req, res, body, tried);
  };
  const badGateway = () => {
    if (res.headersSent || res.destroyed) return;
    record(connectorId, 502);
    answerError(res, 502, "error code: 502", ray);
  };
  let stream;
  try {
    stream = session.request(toConnector(req, ray), { endStream: false });
  } catch {
    // The session closed or went away between the pick and the request.
    return elsewhere();
  }
  let answered = false;
  stream.on("error", () => {});
  stream.on("response", (headers) => {
    answered = true;
    const status = headers[":status"];
    record(connectorId, status);
    res.writeHead(status, { ...endToEndHeaders(headers), "cf-ray": ray, server: "cloudflare" });
    // A stream broken after the headers must not look like a short success:
    // on error pipeline destroys both ends, the client's socket with res, so
    // the truncation is an error at the client.
    pipeline(stream, res, () => {});
  });
  stream.on("close", () => {
    if (answered) return;
    const unprocessed =
      stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM ||
      (registration.lastStreamID !== undefined && stream.id > registration.lastStreamID);
    if (unprocessed && body !== undefined) return elsewhere();
    badGateway();
  });
  if (body !== undefined) stream.end(body);
  else req.pipe(stream);
  res.on("close", () => {
    if (!res.writableFinished && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
  });
}

// A WebSocket handshake from the public side: down one live registration
// as a stream, then bytes both ways until either end closes.
function upgrade(tunnel, req, socket, head) {
  const ray = `${randomBytes(8).toString("hex")}-SIM`;
  socket.on("error", () => {});
  const fail = (status, body) => {
    tunnel.served.push({ connectorId: null, method: req.method, path: req.url, status, at: Date.now() });
    socket.end(`HTTP/1.1 ${status} Error\r\ncontent-type: text/plain\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
  };
  if (String(req.headers.upgrade ?? "").toLowerCase() !== "websocket") return fail(400, "error code: 400");
  const live = [...tunnel.live];
  if (live.length === 0) return fail(530, "error code: 1033");
  const { session, connectorId } = live[randomInt(live.length)];
  let stream;
  try {
    stream = session.request({ ...toConnector(req, ray), "x-sim-upgrade": "websocket" }, { endStream: false });
  } catch {
    return fail(502, "error code: 502");
  }
  stream.on("error", () => socket.destroy());
  stream.on("close", () => socket.destroy());
  socket.on("close", () => stream.close(http2.constants.NGHTTP2_CANCEL));
  stream.on("response", (headers) => {
    const upgraded = headers["x-sim-upgrade-status"] === "101";
    tunnel.served.push({ connectorId, method: req.method, path: req.url, status: upgraded ? 101 : headers[":status"], at: Date.now() });
    if (!upgraded) return fail(headers[":status"] ?? 502, "error code: 502");
    const lines = ["HTTP/1.1 101 Switching Protocols", "upgrade: websocket", "connection: Upgrade"];
    for (const [name, value] of Object.entries(headers)) {
      if (name.startsWith(":") || name === "x-sim-upgrade-status") continue;
      lines.push(`${name}: ${value}`);
    }
    lines.push(`cf-ray: ${ray}`);
    socket.write(lines.join("\r\n") + "\r\n\r\n");
    if (head.length) stream.write(head);
    socket.pipe(stream);
    stream.pipe(socket);
  });
}

function toConnector(req, ray) {
  const { host, ...rest } = req.headers;
  return {
    ...endToEndHeaders(rest),
    ":method": req.method,
    ":path": req.url,
    // The app sees the public hostname, as behind a real tunnel.
    ":authority": host ?? "edge",
    "cf-ray": ray,
    "cf-connecting-ip": req.socket.remoteAddress,
  };
}

function answerError(res, status, body, ray) {
  res.writeHead(status, {
    "content-type": "text/plain; charset=UTF-8",
    "content-length": Buffer.byteLength(body),
    "cf-ray": ray,
    server: "cloudflare",
  });
  res.end(body);
}

// The agents' egress check target: any answer proves the path to the edge.
function answerTrace(req, res) {
  if (req.method !== "GET" || new URL(req.url, "http://edge").pathname !== "/cdn-cgi/trace") {
    res.writeHead(404, { "content-type": "text/plain; charset=UTF-8", server: "cloudflare" });
    return res.end("error code: 404");
  }
  const lines = [
    "fl=sim",
    `h=${req.headers.host ?? "edge"}`,
    `ip=${req.socket.remoteAddress}`,
    `ts=${(Date.now() / 1000).toFixed(3)}`,
    "visit_scheme=http",
    `uag=${req.headers["user-agent"] ?? ""}`,
    "colo=SIM",
    "http=http/1.1",
    "tls=off",
    "warp=off",
  ];
  res.writeHead(200, { "content-type": "text/plain", server: "cloudflare" });
  res.end(`${lines.join("\n")}\n`);
}

async function listen(server, open) {
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  open.push(server);
}

function closeServer(server) {
  return new Promise((resolve) => {
    server.closeAllConnections?.();
    server.close(() => resolve());
  });
}
