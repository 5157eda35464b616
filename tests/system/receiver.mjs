// A webhook receiver for the agents' notifications in `make system`: one
// per node, as an operator would point each node's [notify] at their chat
// or their own endpoint. Keeps every JSON body in arrival order, checks the
// X-Tunnel-Failover-Signature of each against the shared secret, and drops
// duplicates by `id` the way the README tells a receiver to (delivery is at
// least once).
//
// What the model leaves out: TLS (the agent's client speaks HTTPS to real
// receivers; here plain HTTP on loopback), the chat formats (json only),
// answering anything but 200.
import http from "node:http";
import { createHmac, timingSafeEqual } from "node:crypto";

export async function startReceiver(secret) {
  const received = [];
  let badSignatures = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const want = `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
      const got = String(req.headers["x-tunnel-failover-signature"] ?? "");
      const signed = got.length === want.length && timingSafeEqual(Buffer.from(got), Buffer.from(want));
      if (!signed) badSignatures++;
      try {
        received.push(JSON.parse(body.toString("utf8")));
      } catch {
        badSignatures++;
      }
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("ok");
    });
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}/hooks/agent`,
    // Each event once, in the order they first arrived.
    events() {
      const seen = new Set();
      return received.filter((e) => !seen.has(e.id) && seen.add(e.id));
    },
    types() {
      return this.events().map((e) => e.type);
    },
    get badSignatures() {
      return badSignatures;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
