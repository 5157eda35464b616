// A real HTTP origin on 127.0.0.1 with injectable faults. Every request is
// recorded, so tests can prove what reached which origin (and what did not).
import http from "node:http";
import { createHash } from "node:crypto";
import { WebSocketServer } from "ws";

// Modes: "ok" echoes the request as JSON; a number answers with that status;
// "hang" never answers; "cut" sends headers and half the body, then resets;
// "slow" streams the body in chunks over ~600 ms; "early-hints" sends an
// interim 103 first, then answers as "ok"; { status, location }
// answers that status with that Location and no body (a redirect, such as
// Cloudflare Access's to its login page); { status, headers, body } answers
// exactly that (an app's own error page, a 503 with Retry-After).
// `healthModes`, when not empty, gives the mode of each next /health
// request in turn; `pathModes[path]`, when set, is the mode for that path
// alone (one broken page of a healthy app). `extraHeaders` are added to
// every "ok" answer (an origin that sends headers it should not).
export async function startOrigin(name, { port = 0 } = {}) {
  const origin = {
    name,
    mode: "ok",
    healthModes: [],
    pathModes: {},
    extraHeaders: {},
    requests: [],
    server: null,
    port,
    get url() {
      return `http://127.0.0.1:${this.port}`;
    },
    hits(path) {
      return this.requests.filter((r) => path === undefined || r.path === path).length;
    },
    async stop() {
      await new Promise((resolve) => {
        this.server.closeAllConnections?.();
        this.server.close(() => resolve());
      });
    },
    async start() {
      // Headers up to the platform's 128 KB limit reach it (Node's own is 16 KB).
      this.server = http.createServer({ maxHeaderSize: 256 * 1024 }, (req, res) => handle(this, req, res));
      const wss = new WebSocketServer({ noServer: true });
      this.server.on("upgrade", (req, socket, head) => {
        this.requests.push({ method: req.method, path: req.url, headers: req.headers, upgrade: true });
        wss.handleUpgrade(req, socket, head, (ws) => {
          ws.on("message", (m) => ws.send(`${this.name}:${m}`));
        });
      });
      await new Promise((resolve) => this.server.listen(this.port, "127.0.0.1", resolve));
      this.port = this.server.address().port;
      return this;
    },
  };
  return origin.start();
}

function handle(origin, req, res) {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const record = {
      method: req.method,
      path: req.url,
      host: req.headers.host,
      headers: req.headers,
      at: Date.now(),
      bodyLength: body.length,
      bodySha: createHash("sha256").update(body).digest("hex"),
    };
    origin.requests.push(record);
    // When the connection went away without an answer (a hung request the
    // Worker gave up on): tests check the Worker lets go of it.
    res.on("close", () => {
      if (!res.writableEnded) record.droppedAt = Date.now();
    });
    // `delayMs`: answer that much later, whatever the mode (requests that
    // must overlap in time).
    if (origin.delayMs > 0) setTimeout(() => respond(origin, record, res), origin.delayMs);
    else respond(origin, record, res);
  });
}

function respond(origin, record, res) {
  const mode =
    record.path === "/health" && origin.healthModes.length > 0
      ? origin.healthModes.shift()
      : (origin.pathModes[record.path] ?? origin.mode);
  if (mode === "hang") return; // never answer; the Worker's timeout must fire
  if (typeof mode === "object" && mode !== null && mode.headers !== undefined) {
    res.writeHead(mode.status, { "x-origin": origin.name, ...mode.headers });
    res.end(mode.body);
    return;
  }
  if (typeof mode === "object" && mode !== null) {
    res.writeHead(mode.status, { location: mode.location, "x-origin": origin.name });
    res.end();
    return;
  }
  if (typeof mode === "number") {
    res.writeHead(mode, { "content-type": "text/plain", "x-origin": origin.name });
    res.end(`${origin.name} says ${mode}\n`);
    return;
  }
  if (mode === "early-hints") {
    // An interim 103 before the real answer (which follows as for "ok").
    res.writeEarlyHints({ link: "</app.css>; rel=preload; as=style" });
  }
  if (mode === "cut") {
    res.writeHead(200, { "content-length": "100000", "x-origin": origin.name });
    res.write("x".repeat(1000));
    setTimeout(() => res.socket?.destroy(), 20);
    return;
  }
  if (mode === "slow") {
    // Not text/*: Miniflare's entry proxy would gzip (and so buffer) it.
    res.writeHead(200, { "content-type": "application/octet-stream", "x-origin": origin.name });
    let n = 0;
    const timer = setInterval(() => {
      res.write(`chunk ${n}\n`);
      if (++n === 6) {
        clearInterval(timer);
        res.end();
      }
    }, 100);
    return;
  }
  const echo = JSON.stringify({ origin: origin.name, ...record });
  res.writeHead(200, {
    "content-type": "application/json",
    "x-origin": origin.name,
    "set-cookie": ["a=1; Path=/", "b=2; Path=/"],
    ...origin.extraHeaders,
  });
  res.end(record.method === "HEAD" ? undefined : echo);
}
