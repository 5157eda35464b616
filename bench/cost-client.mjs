// The client of `make bench-cost` (bench/cost.sh): sends an exact number of
// requests, all of them answered before it exits, so the instruction total
// callgrind dumps afterwards divides by a known N. (wrk stops on a clock and
// abandons what is in flight: those requests would be counted by callgrind
// but not by wrk.) Its own CPU is not counted: it is another process.
//
// Every request is GET or POST /2k.bin with an `x-user` header cycling
// through 64 values, like the steering rounds' client (bench/wrk-users.lua):
// `STEERING=hash` sees many keys, every other Worker ignores the header. An
// affinity pin (`__tf_affinity`) a Worker sets is kept and sent back, so
// the affinity row measures a returning client, as `make bench` does.
// Every answer must be a 200 with the 2 KiB file; any other is counted in
// `failed` and cost.sh refuses the window (a failed request is not a
// request's cost).
//
//   node bench/cost-client.mjs --url http://127.0.0.1:PORT
//        (--count N | --seconds S) [--concurrency C] [--interval-ms MS]
//        [--method GET|POST] [--body-bytes B] [--cookie NAME=VALUE]
//        [--authorization VALUE] [--sites N]
// --sites N: request n goes to host s<n % N>.example (a SITES row's hosts).
//
// --interval-ms: one request every MS (one connection, each request
// started on its tick, or at once when the previous one ran past it): the
// sparse regime. Otherwise C connections send back to back. Prints one JSON
// line: {requests, failed, first_failure, seconds, per_second, cookie}.

import http from "node:http";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    url: { type: "string" },
    count: { type: "string" },
    seconds: { type: "string" },
    concurrency: { type: "string", default: "1" },
    "interval-ms": { type: "string", default: "0" },
    method: { type: "string", default: "GET" },
    "body-bytes": { type: "string", default: "512" },
    cookie: { type: "string", default: "" },
    authorization: { type: "string", default: "" },
    sites: { type: "string", default: "0" },
  },
});
const COOKIE = "__tf_affinity";
const USERS = 64;
const EXPECTED_BYTES = 2048;
// Under callgrind a request takes tens of ms and the first ones after a
// quiet spell far more; a request this slow means something is wrong.
const TIMEOUT_MS = 60_000;

const url = new URL("/2k.bin", opt.url);
const count = opt.count === undefined ? Infinity : Number(opt.count);
const deadline = opt.seconds === undefined ? Infinity : Date.now() + Number(opt.seconds) * 1000;
const interval = Number(opt["interval-ms"]);
const concurrency = interval > 0 ? 1 : Number(opt.concurrency);
const body = opt.method === "POST" ? randomBytes(Number(opt["body-bytes"])) : null;
if (!opt.url || (count === Infinity && deadline === Infinity) || !(concurrency >= 1)) {
  console.error("usage: cost-client.mjs --url URL (--count N | --seconds S) [--concurrency C] [--interval-ms MS] [--method GET|POST] [--body-bytes B] [--cookie C] [--authorization VALUE] [--sites N]");
  process.exit(2);
}

const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
let cookie = opt.cookie;
let started = 0;
let done = 0;
let failed = 0;
let firstFailure = null;

function once(n) {
  const headers = { "x-user": `user-${(n % USERS) + 1}` };
  if (cookie) headers.cookie = cookie;
  if (opt.authorization) headers.authorization = opt.authorization;
  const sites = Number(opt.sites);
  if (sites > 0) headers.host = `s${n % sites}.example`;
  if (body) {
    headers["content-type"] = "application/octet-stream";
    headers["content-length"] = String(body.length);
  }
  return new Promise((resolve) => {
    const fail = (why) => {
      failed++;
      firstFailure ??= why;
      resolve();
    };
    const req = http.request(url, { method: opt.method, headers, agent, timeout: TIMEOUT_MS }, (res) => {
      let bytes = 0;
      res.on("data", (chunk) => (bytes += chunk.length));
      res.on("end", () => {
        const pin = (res.headers["set-cookie"] ?? []).find((c) => c.startsWith(`${COOKIE}=`));
        if (pin) cookie = pin.split(";")[0];
        if (res.statusCode !== 200 || bytes !== EXPECTED_BYTES) fail(`${opt.method} answered ${res.statusCode} with ${bytes} bytes`);
        else resolve();
      });
      res.on("error", (e) => fail(e.message));
    });
    req.on("timeout", () => req.destroy(new Error(`no answer in ${TIMEOUT_MS} ms`)));
    req.on("error", (e) => fail(e.message));
    req.end(body ?? undefined);
  });
}

const more = () => started < count && Date.now() < deadline;

async function connection() {
  while (more()) {
    await once(started++);
    done++;
  }
}

async function sparse() {
  const t0 = Date.now();
  while (more()) {
    const due = t0 + started * interval;
    if (due > Date.now()) await sleep(due - Date.now());
    await once(started++);
    done++;
  }
}

const t0 = Date.now();
await Promise.all(interval > 0 ? [sparse()] : Array.from({ length: concurrency }, connection));
const seconds = (Date.now() - t0) / 1000;
agent.destroy();
console.log(
  JSON.stringify({
    requests: done,
    failed,
    first_failure: firstFailure,
    seconds,
    per_second: Math.round((done / seconds) * 10) / 10,
    cookie: cookie || null,
  }),
);
