// How many client requests wait out a full ATTEMPT_TIMEOUT after the primary
// starts hanging, when several isolates of one location share the load:
// isolate-local health (COLO_HEALTH=off) vs colo-shared (on). The isolates
// are separate Workers in one workerd (Miniflare), sharing one cache as the
// isolates of a Cloudflare location do. Counts, not timings, so the noisy
// machine does not matter much.
//
//   node bench/isolates.mjs [OUT_JSON]
import { writeFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { startOrigin } from "../tests/support/origin.mjs";
import { startIsolates, originsVar, sleep } from "../tests/support/worker.mjs";

const ISOLATES = 6;
const TIMEOUT_MS = 500;
const SPACING_MS = 150; // one request every 150 ms, round robin over the isolates
const WINDOW_MS = 3000;

async function scenario(colo) {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const bindings = {
    ORIGINS: originsVar(primary, replica),
    ATTEMPT_TIMEOUT_MS: String(TIMEOUT_MS),
    HEALTH_INTERVAL_MS: "10000",
    COLO_HEALTH: colo ? "on" : "off",
  };
  const names = Array.from({ length: ISOLATES }, (_, i) => `iso${i}`);
  const isolates = await startIsolates(names.map((name) => ({ name, bindings })));
  try {
    for (const name of names) await (await isolates.fetch(name, "/warm")).arrayBuffer();
    primary.mode = "hang";
    const started = Date.now();
    const pending = [];
    for (let i = 0; Date.now() - started < WINDOW_MS; i++) {
      const name = names[i % ISOLATES];
      const t0 = Date.now();
      pending.push(
        isolates.fetch(name, `/r${i}`).then(async (res) => {
          await res.arrayBuffer();
          return { ms: Date.now() - t0, status: res.status, servedBy: res.headers.get("x-served-by") };
        }),
      );
      await sleep(SPACING_MS);
    }
    const results = await Promise.all(pending);
    return {
      colo: colo ? "on" : "off",
      requests: results.length,
      waited_full_timeout: results.filter((r) => r.ms >= TIMEOUT_MS).length,
      failed: results.filter((r) => r.status !== 200).length,
      served_by_replica: results.filter((r) => r.servedBy === "replica").length,
    };
  } finally {
    await isolates.dispose();
    await primary.stop();
    await replica.stop();
  }
}

const rows = [await scenario(false), await scenario(true)];
console.log(`\nShared health: ${ISOLATES} isolates, primary starts hanging, ATTEMPT_TIMEOUT_MS=${TIMEOUT_MS}, one request every ${SPACING_MS} ms for ${WINDOW_MS} ms`);
console.log("| health | requests | waited a full timeout | failed |");
console.log("|---|---|---|---|");
for (const r of rows) console.log(`| ${r.colo === "on" ? "colo-shared" : "isolate-local"} | ${r.requests} | ${r.waited_full_timeout} | ${r.failed} |`);
const out = process.argv[2];
if (out) {
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ isolates: ISOLATES, attempt_timeout_ms: TIMEOUT_MS, spacing_ms: SPACING_MS, window_ms: WINDOW_MS, rows }));
}
