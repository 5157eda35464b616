// A webhook receiver on 127.0.0.1 for the checker's notifications: every
// POST is recorded (path, headers, raw body, arrival time) and answered by
// the mode of its path: "ok" (204), a number (that status), "hang" (never
// answers), { redirect: url } (302 there), { status, headers } (that status
// with those headers: a 429 with Retry-After), "huge" (200 and 64 MiB of
// body, streamed; the Worker must not read it).
import http from "node:http";

export async function startReceiver() {
  const receiver = {
    modes: {},
    requests: [],
    server: null,
    port: 0,
    url(path) {
      return `http://127.0.0.1:${this.port}${path}`;
    },
    // What reached `path`, one entry per event id (a retry of a delivery
    // the receiver already took is a duplicate, dropped as a receiver
    // would by its id).
    events(path) {
      const seen = new Set();
      return this.requests.filter((r) => {
        if (r.path !== path || r.answered < 200 || r.answered > 299) return false;
        const id = r.headers["x-tunnel-failover-id"];
        if (seen.has(id)) return false;
        seen.add(id);
        return true;
      });
    },
    tries(path) {
      return this.requests.filter((r) => r.path === path);
    },
    async stop() {
      this.server.closeAllConnections?.();
      await new Promise((resolve) => this.server.close(() => resolve()));
    },
  };
  receiver.server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const record = { path: req.url, method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now(), answered: 0 };
      receiver.requests.push(record);
      const mode = receiver.modes[req.url] ?? "ok";
      if (mode === "hang") return;
      if (typeof mode === "number") {
        record.answered = mode;
        res.writeHead(mode, { "content-type": "text/plain" });
        res.end(`receiver says ${mode}\n`);
        return;
      }
      if (typeof mode === "object" && mode.redirect !== undefined) {
        record.answered = 302;
        res.writeHead(302, { location: mode.redirect });
        res.end();
        return;
      }
      if (typeof mode === "object" && mode.status !== undefined) {
        record.answered = mode.status;
        res.writeHead(mode.status, { "content-type": "text/plain", ...mode.headers });
        res.end(`receiver says ${mode.status}\n`);
        return;
      }
      if (mode === "huge") {
        record.answered = 200;
        res.writeHead(200, { "content-type": "application/octet-stream" });
        const chunk = Buffer.alloc(1024 * 1024, 120);
        let left = 64;
        const pump = () => {
          while (left > 0) {
            left--;
            if (!res.write(chunk)) return res.once("drain", pump);
          }
          res.end();
        };
        res.on("error", () => {});
        pump();
        return;
      }
      record.answered = 204;
      res.writeHead(204);
      res.end();
    });
  });
  await new Promise((resolve) => receiver.server.listen(0, "127.0.0.1", resolve));
  receiver.port = receiver.server.address().port;
  return receiver;
}
