// The Cache API service of `make bench-cost` (bench/cost.sh): what
// `caches.default` talks to in the counted workerd (its `cacheApiOutbound`),
// standing in for the colo cache production has. Without one, workerd
// rejects every cache call at once and the product's colo reads cost next to
// nothing; with this one, a read is what it is in production from the
// isolate's side: a request out, an answer (a miss, or a verdict) back.
//
// A separate Node process on purpose: Cloudflare bills the isolate, not the
// cache, so callgrind counts only the Worker's workerd and not this. (A cache
// Worker inside that workerd, as Miniflare builds it, would be counted.)
//
// workerd's side of the protocol (the one Miniflare's cache Worker serves):
// - match: GET <key URL> with `Cache-Control: only-if-cached`; the answer
//   carries `CF-Cache-Status: HIT` and the stored response, or `MISS`
//   (and anything else, which workerd ignores);
// - put: PUT <key URL>, the body the whole serialised response
//   ("HTTP/1.1 200 OK\r\n<headers>\r\n\r\n<body>"); 204 stored, 413 not;
// - delete: PURGE <key URL>; 200 deleted, 404 not there.
// Freshness: `max-age` / `s-maxage` of the stored response (the product's
// verdicts carry one), `no-store` / `private` not stored, none: kept.
//
// GET /__bench/stats, addressed to this server's own host (a cache key is
// addressed to the key's host), answers {gets, hits, puts, purges} and
// `?reset=1` zeroes them: how many colo reads a measured window held.
//
//   node bench/cost-cache.mjs --port N   (prints "listening" when ready)

import http from "node:http";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({ options: { port: { type: "string" } } });
const port = Number(opt.port);
if (!Number.isInteger(port) || port <= 0) {
  console.error("usage: node bench/cost-cache.mjs --port N");
  process.exit(2);
}

const entries = new Map(); // key URL -> { status, statusText, headers, body, expires }
let stats = { gets: 0, hits: 0, puts: 0, purges: 0 };

function keyOf(req) {
  // workerd sends the key's path in the request line and its host in Host.
  return `${req.headers.host}${req.url}`;
}

// "HTTP/1.1 200 OK\r\nName: value\r\n...\r\n\r\nbody" -> its parts, or null.
function parseResponse(raw) {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const [statusLine, ...lines] = raw.subarray(0, end).toString("latin1").split("\r\n");
  const m = /^HTTP\/\d(?:\.\d)? (\d{3}) ?(.*)$/.exec(statusLine);
  if (!m) return null;
  const headers = lines.map((line) => {
    const i = line.indexOf(":");
    return [line.slice(0, i).trim(), line.slice(i + 1).trim()];
  });
  return { status: Number(m[1]), statusText: m[2], headers, body: raw.subarray(end + 4) };
}

// Milliseconds the response may be kept, Infinity, or 0 (do not store).
function lifetimeMs(headers) {
  const cc = headers
    .filter(([name]) => name.toLowerCase() === "cache-control")
    .map(([, value]) => value.toLowerCase())
    .join(",");
  if (/\b(no-store|private)\b/.test(cc)) return 0;
  const age = /\bs-maxage=(\d+)/.exec(cc) ?? /\bmax-age=(\d+)/.exec(cc);
  return age ? Number(age[1]) * 1000 : Infinity;
}

function answer(res, status, headers = {}, body = "") {
  res.writeHead(status, headers);
  res.end(body);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    if (req.headers.host === `127.0.0.1:${port}` && req.url.startsWith("/__bench/stats")) {
      const body = JSON.stringify(stats);
      if (req.url.endsWith("?reset=1")) stats = { gets: 0, hits: 0, puts: 0, purges: 0 };
      return answer(res, 200, { "content-type": "application/json" }, body);
    }
    const key = keyOf(req);
    if (req.method === "GET") {
      stats.gets++;
      const e = entries.get(key);
      if (!e || e.expires <= Date.now()) {
        entries.delete(key);
        return answer(res, 504, { "CF-Cache-Status": "MISS" });
      }
      stats.hits++;
      res.writeHead(e.status, e.statusText, [...e.headers, ["CF-Cache-Status", "HIT"]].flat());
      return res.end(e.body);
    }
    if (req.method === "PUT") {
      stats.puts++;
      const parsed = parseResponse(Buffer.concat(chunks));
      const lifetime = parsed ? lifetimeMs(parsed.headers) : 0;
      if (!parsed || lifetime === 0) return answer(res, 413);
      // The stored body is sent with its own length; chunked framing of
      // the PUT does not carry over.
      const headers = parsed.headers.filter(([n]) => !/^(content-length|transfer-encoding)$/i.test(n));
      entries.set(key, { ...parsed, headers, expires: Date.now() + lifetime });
      return answer(res, 204);
    }
    if (req.method === "PURGE") {
      stats.purges++;
      return answer(res, entries.delete(key) ? 200 : 404);
    }
    answer(res, 405);
  });
});

server.keepAliveTimeout = 120_000;
server.listen(port, "127.0.0.1", () => console.log("listening"));
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => process.exit(0));
