// A node's application, in-process: the thing the tunnel exists to reach.
// Reads are answered with the app's name (which node served them); writes
// are counted per `x-request-id` in `executed`, so the system run can prove
// no request was executed twice across a failover.
//
// `GET /stream?s=N` is a download that lasts N seconds: a line every 250 ms
// naming the app, then "done" (a client that sees "done" got all of it).
// A WebSocket on any path echoes each message as `<app>:<message>`.
//
// What the model leaves out: real work and latency; state shared between
// the nodes' apps (each counts only what reached it).
import http from "node:http";
import { createHash } from "node:crypto";
import { WebSocketServer } from "ws";

export async function startApp(name, { port = 0 } = {}) {
  const app = {
    name,
    port,
    executed: new Map(),
    requests: [],
    server: null,
    get url() {
      return `http://127.0.0.1:${this.port}`;
    },
    // The app died: open connections break and new ones are refused.
    async stop() {
      await new Promise((resolve) => {
        this.server.closeAllConnections();
        this.server.close(() => resolve());
      });
    },
    // Back on the same port, as a restarted service would be.
    async start() {
      this.server = http.createServer((req, res) => handle(this, req, res));
      const wss = new WebSocketServer({ noServer: true });
      this.server.on("upgrade", (req, socket, head) => {
        socket.on("error", () => {});
        wss.handleUpgrade(req, socket, head, (ws) => {
          ws.on("message", (data) => ws.send(`${this.name}:${data}`));
        });
      });
      await new Promise((resolve, reject) => {
        this.server.once("error", reject);
        this.server.listen(this.port, "127.0.0.1", resolve);
      });
      this.port = this.server.address().port;
      return this;
    },
  };
  return app.start();
}

function handle(app, req, res) {
  const id = req.headers["x-request-id"];
  const { method, url: path, headers } = req;
  const record = { method, path, host: headers.host, headers, id, at: Date.now() };
  app.requests.push(record);
  if (req.method === "GET" || req.method === "HEAD") {
    if (req.url === "/health") return answer(res, 200, "text/plain", "ok");
    if (req.url.startsWith("/stream?s=")) return stream(app, res, Number(req.url.slice("/stream?s=".length)));
    return answer(res, 200, "text/plain", `app=${app.name}\n`);
  }
  if (!id) return answer(res, 400, "text/plain", `app=${app.name}: a ${req.method} needs x-request-id\n`);
  // Counted on arrival, before the body: a write that reached the app counts
  // even if its body never finished, so a double execution cannot hide
  // behind a broken upload.
  app.executed.set(id, (app.executed.get(id) || 0) + 1);
  const sha = createHash("sha256");
  let bytes = 0;
  req.on("data", (chunk) => {
    bytes += chunk.length;
    sha.update(chunk);
  });
  req.on("end", () => {
    record.bytes = bytes;
    answer(res, 201, "application/json", JSON.stringify({ app: app.name, id, bytes, sha256: sha.digest("hex") }));
  });
}

function stream(app, res, seconds) {
  res.writeHead(200, { "content-type": "text/plain", "cache-control": "no-store" });
  const until = Date.now() + Math.max(0, Math.min(seconds, 120)) * 1000;
  const timer = setInterval(() => {
    if (Date.now() < until) return res.write(`app=${app.name} ${Date.now()}\n`);
    clearInterval(timer);
    res.end("done\n");
  }, 250);
  res.on("close", () => clearInterval(timer));
}

function answer(res, status, type, body) {
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) });
  res.end(body);
}
