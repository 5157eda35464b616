// Before the steering rounds: does this Worker of the bench really do what
// its row will be labelled with? A build that predates a setting either
// rejects it (a config error: the Worker answers 500) or ignores it (then
// the row would measure plain failover under another name). Either way the
// row becomes "n/a" and the rounds go on without it. Prints one JSON line:
// { target, supported, why, cookie? } (cookie: the affinity pin the
// steering rounds' client sends, "__tf_affinity=<value>").
//
//   node bench/steering-check.mjs --target product|weighted|hash|affinity|silence_off|floor_bare|floor_work --url URL

import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: { target: { type: "string" }, url: { type: "string" } },
});
const COOKIE = "__tf_affinity";
// Requests a steering check sends: with two origins of weight 1, all of
// them landing on one origin by chance has odds of 2^-23.
const SAMPLE = 24;

async function get(headers = {}) {
  const res = await fetch(`${opt.url}/2k.bin`, { headers, signal: AbortSignal.timeout(5000) });
  const body = await res.arrayBuffer();
  return {
    status: res.status,
    bytes: body.byteLength,
    servedBy: res.headers.get("x-served-by"),
    setCookie: res.headers.getSetCookie().find((c) => c.startsWith(`${COOKIE}=`)),
    text: () => new TextDecoder().decode(body).split("\n")[0].slice(0, 160),
  };
}

// Why this answer is not a proxied 2 KiB file, or undefined.
function notServed(r) {
  if (r.status === 200 && r.bytes === 2048) return undefined;
  return `answered ${r.status}${r.status === 200 ? ` with ${r.bytes} bytes` : `: ${r.text()}`}`;
}

const checks = {
  async product() {},
  // SILENCE_MS=0: nothing to see on a healthy origin; a build that
  // rejects the setting answers 500, which notServed() reports.
  async silence_off() {},
  async floor_bare() {},
  async floor_work(first) {
    if (first.servedBy !== "primary") return `X-Served-By ${JSON.stringify(first.servedBy)}, not "primary"`;
  },
  async weighted() {
    const seen = new Set();
    for (let i = 0; i < SAMPLE; i++) {
      const r = await get();
      const bad = notServed(r);
      if (bad) return bad;
      seen.add(r.servedBy);
    }
    if (seen.size < 2) return `STEERING=weighted ignored: ${SAMPLE} requests all served by ${[...seen]}`;
  },
  async hash() {
    const seen = new Set();
    for (let i = 1; i <= SAMPLE; i++) {
      const [a, b] = [await get({ "x-user": `user-${i}` }), await get({ "x-user": `user-${i}` })];
      const bad = notServed(a) ?? notServed(b);
      if (bad) return bad;
      if (a.servedBy !== b.servedBy) return `STEERING=hash not sticky: user-${i} served by ${a.servedBy}, then ${b.servedBy}`;
      seen.add(a.servedBy);
    }
    if (seen.size < 2) return `STEERING=hash ignored: ${SAMPLE} users all served by ${[...seen]}`;
  },
  async affinity(first, result) {
    if (!first.setCookie) return `AFFINITY=cookie ignored: no ${COOKIE} cookie set`;
    const cookie = first.setCookie.split(";")[0];
    const pinned = await get({ cookie });
    const bad = notServed(pinned);
    if (bad) return `with its own cookie: ${bad}`;
    if (pinned.servedBy !== first.servedBy) {
      return `AFFINITY=cookie not pinned: served by ${first.servedBy}, then by ${pinned.servedBy} with the cookie`;
    }
    result.cookie = cookie;
  },
};

const check = checks[opt.target];
if (!check || !opt.url) {
  console.error(`usage: steering-check.mjs --target ${Object.keys(checks).join("|")} --url URL`);
  process.exit(2);
}
const result = { target: opt.target, supported: true };
let why;
try {
  const first = await get();
  why = notServed(first) ?? (await check(first, result));
} catch (e) {
  why = `no answer: ${e.cause?.message ?? e.message}`;
}
if (why !== undefined) Object.assign(result, { supported: false, why });
console.log(JSON.stringify(result));
