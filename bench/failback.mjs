// Waits, one request at a time, until the Worker serves from ORIGIN again
// (CONSECUTIVE answers in a row with that X-Served-By): after a failover,
// the primary is back and the Worker's probes (every HEALTH_INTERVAL_MS,
// HEALTH_RISE of them) must see it before it fails back. The requests are
// what gives the Worker the chance to probe: it probes when a lease ends,
// and a lease ends on a request. Prints one JSON line: how long it took and
// how many requests it sent. Exits 1 if the Worker has not failed back in
// --give-up-ms.
//
//   node bench/failback.mjs --url http://127.0.0.1:PORT/2k.bin \
//        [--origin primary] [--consecutive 5] [--every-ms 20] [--give-up-ms 15000]

import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    url: { type: "string" },
    origin: { type: "string", default: "primary" },
    consecutive: { type: "string", default: "5" },
    "every-ms": { type: "string", default: "20" },
    "give-up-ms": { type: "string", default: "15000" },
  },
});
if (!opt.url) {
  console.error("usage: failback.mjs --url URL [--origin NAME] [--consecutive N] [--every-ms N] [--give-up-ms N]");
  process.exit(2);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const began = performance.now();
let requests = 0;
let inRow = 0;
let last = null;
while (inRow < Number(opt.consecutive)) {
  if (performance.now() - began > Number(opt["give-up-ms"])) {
    console.error(`no fail-back to ${opt.origin} in ${opt["give-up-ms"]} ms; last answer: ${JSON.stringify(last)}`);
    process.exit(1);
  }
  requests++;
  try {
    const res = await fetch(opt.url, { signal: AbortSignal.timeout(5000) });
    await res.arrayBuffer();
    last = { status: res.status, served_by: res.headers.get("x-served-by") };
  } catch (e) {
    last = { error: e.message };
  }
  inRow = last.status === 200 && last.served_by === opt.origin ? inRow + 1 : 0;
  await sleep(Number(opt["every-ms"]));
}
console.log(JSON.stringify({ origin: opt.origin, ms: Math.round(performance.now() - began), requests }));
