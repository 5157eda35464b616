// One HTTP/1.1 request written byte for byte on a socket: the headers a
// fetch client refuses to send (Connection, Keep-Alive, TE, Upgrade,
// Proxy-Connection), as a hostile or old client sends them. The request
// ends with "Connection: close" among its Connection tokens (the caller's
// own come first), so the answer ends with the connection.
import net from "node:net";

// Resolves to { status, headers (lower-case names), body }.
// `body`: written after the head as it is (give its Content-Length in
// `headers`).
export function rawRequest(url, { method = "GET", path = "/", headers = [], connection = "", body = "" } = {}) {
  const { hostname, port } = new URL(url);
  const lines = [`${method} ${path} HTTP/1.1`, `Host: ${hostname}:${port}`];
  lines.push(`Connection: ${connection === "" ? "close" : `${connection}, close`}`);
  for (const [name, value] of headers) lines.push(`${name}: ${value}`);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks = [];
    socket.on("data", (c) => chunks.push(c));
    socket.on("error", reject);
    socket.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const split = text.indexOf("\r\n\r\n");
      const head = text.slice(0, split).split("\r\n");
      const status = Number(head[0].split(" ")[1]);
      const answer = {};
      for (const line of head.slice(1)) {
        const at = line.indexOf(":");
        answer[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
      }
      resolve({ status, headers: answer, body: text.slice(split + 4) });
    });
    socket.write(`${lines.join("\r\n")}\r\n\r\n${body}`);
  });
}
