// Many isolates of one location, and the primary starts hanging: how many
// client requests wait out a full ATTEMPT_TIMEOUT_MS? Two comparisons, each
// a pair of runs that differ in one setting only:
//
// - shared health: isolate-local (COLO_HEALTH=off) vs colo-shared (on), at
//   ATTEMPT_TIMEOUT_MS 500. A timeout seen by one isolate spares the others.
// - silence: SILENCE_MS=0 (off) vs 2000 (the default), at the default
//   ATTEMPT_TIMEOUT_MS 6000 both ways, isolate-local health. Silence only
//   acts when it is shorter than the attempt timeout (at 500 ms the timeout
//   always comes first), so this pair runs at the default timeout, where it
//   is meant to help. Within an isolate, the requests that start in the
//   first SILENCE_MS of its oldest hung attempt are sent to the primary and
//   wait; the ones after go to the replica at once. The target printed
//   beside the figure: none of those after waits the full timeout.
//
// The isolates are separate Workers in one workerd (Miniflare), sharing one
// cache as the isolates of a Cloudflare location do. Mostly counts, so the
// noisy machine matters little; the p50/p99 are client-side, over the
// requests sent while the primary hangs.
//
//   node bench/isolates.mjs [OUT_JSON]
import { writeFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { startOrigin } from "../tests/support/origin.mjs";
import { startIsolates, originsVar, sleep } from "../tests/support/worker.mjs";

const ISOLATES = 6;

// Shared health: one request every 150 ms, round robin over the isolates.
const HEALTH = { timeoutMs: 500, spacingMs: 150, windowMs: 3000 };
// Silence: one request every 50 ms (300 ms per isolate), for as long as the
// attempt timeout, so every request of the off run waits it out. The
// boundary at SILENCE_MS falls 200 ms from the nearest request of an
// isolate (1800 and 2100 ms after its first), clear of the client's and
// the runtime's jitter.
const SILENCE = { timeoutMs: 6000, silenceMs: 2000, spacingMs: 50, windowMs: 6000 };

// Nearest-rank percentile.
function percentile(xs, p) {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

// Sends one request every spacingMs for windowMs after the primary starts
// hanging, round robin over the isolates; resolves once all have answered.
// Each result: isolate, start (ms after the hang began), ms, status, servedBy.
async function hungPrimary(bindings, { spacingMs, windowMs }) {
  const primary = await startOrigin("primary");
  const replica = await startOrigin("replica");
  const names = Array.from({ length: ISOLATES }, (_, i) => `iso${i}`);
  const all = { ORIGINS: originsVar(primary, replica), HEALTH_INTERVAL_MS: "10000", ...bindings };
  const isolates = await startIsolates(names.map((name) => ({ name, bindings: all })));
  try {
    for (const name of names) await (await isolates.fetch(name, "/warm")).arrayBuffer();
    primary.mode = "hang";
    const started = Date.now();
    const pending = [];
    for (let i = 0; Date.now() - started < windowMs; i++) {
      const isolate = names[i % ISOLATES];
      const t0 = Date.now();
      pending.push(
        isolates.fetch(isolate, `/r${i}`).then(async (res) => {
          await res.arrayBuffer();
          return { isolate, start: t0 - started, ms: Date.now() - t0, status: res.status, servedBy: res.headers.get("x-served-by") };
        }),
      );
      await sleep(spacingMs);
    }
    return await Promise.all(pending);
  } finally {
    await isolates.dispose();
    await primary.stop();
    await replica.stop();
  }
}

function counts(results, timeoutMs) {
  const ms = results.map((r) => r.ms);
  return {
    requests: results.length,
    waited_full_timeout: results.filter((r) => r.ms >= timeoutMs).length,
    failed: results.filter((r) => r.status !== 200).length,
    served_by_replica: results.filter((r) => r.servedBy === "replica").length,
    p50_ms: percentile(ms, 50),
    p99_ms: percentile(ms, 99),
  };
}

async function healthScenario(colo) {
  const results = await hungPrimary(
    { ATTEMPT_TIMEOUT_MS: String(HEALTH.timeoutMs), COLO_HEALTH: colo ? "on" : "off" },
    HEALTH,
  );
  return { colo: colo ? "on" : "off", ...counts(results, HEALTH.timeoutMs) };
}

async function silenceScenario(silenceMs) {
  const results = await hungPrimary(
    { ATTEMPT_TIMEOUT_MS: String(SILENCE.timeoutMs), SILENCE_MS: String(silenceMs), COLO_HEALTH: "off" },
    SILENCE,
  );
  // Per isolate, from its first request after the hang began (the oldest
  // attempt its silence is measured from): started within the first
  // SILENCE_MS (the default's, for both runs, so the two are comparable)?
  const first = {};
  for (const r of results) first[r.isolate] = Math.min(first[r.isolate] ?? Infinity, r.start);
  const inFirst = (r) => r.start - first[r.isolate] <= SILENCE.silenceMs;
  const after = results.filter((r) => !inFirst(r));
  return {
    silence_ms: silenceMs,
    ...counts(results, SILENCE.timeoutMs),
    started_in_first_silence: results.length - after.length,
    waited_after_first_silence: after.filter((r) => r.ms >= SILENCE.timeoutMs).length,
    // What a request pays once the silence has been noticed.
    p99_after_first_silence_ms: percentile(after.map((r) => r.ms), 99),
    // Requests that should have waited and did not (all of them with
    // silence off; the first SILENCE_MS with it on): should be none.
    unexpectedly_quick: results
      .filter((r) => r.ms < SILENCE.timeoutMs && (silenceMs === 0 || inFirst(r)))
      .slice(0, 5)
      .map(({ isolate, start, ms, status, servedBy }) => ({ isolate, start, ms, status, servedBy })),
  };
}

const health = [await healthScenario(false), await healthScenario(true)];
const silence = [await silenceScenario(0), await silenceScenario(SILENCE.silenceMs)];

console.log(
  `\nShared health: ${ISOLATES} isolates, primary starts hanging, ATTEMPT_TIMEOUT_MS=${HEALTH.timeoutMs}, one request every ${HEALTH.spacingMs} ms for ${HEALTH.windowMs} ms`,
);
console.log("| health | requests | waited a full timeout | failed |");
console.log("|---|---|---|---|");
for (const r of health) console.log(`| ${r.colo === "on" ? "colo-shared" : "isolate-local"} | ${r.requests} | ${r.waited_full_timeout} | ${r.failed} |`);
console.log(
  `\nSilence: ${ISOLATES} isolates, primary starts hanging, ATTEMPT_TIMEOUT_MS=${SILENCE.timeoutMs}, isolate-local health, one request every ${SILENCE.spacingMs} ms for ${SILENCE.windowMs} ms`,
);
console.log(
  `| SILENCE_MS | requests | waited a full timeout | of them after their isolate's first ${SILENCE.silenceMs} ms | p50 ms | p99 ms | p99 after the first ${SILENCE.silenceMs} ms | failed |`,
);
console.log("|---|---|---|---|---|---|---|---|");
for (const r of silence) {
  console.log(
    `| ${r.silence_ms} | ${r.requests} | ${r.waited_full_timeout} | ${r.waited_after_first_silence} | ${r.p50_ms} | ${r.p99_ms} | ${r.p99_after_first_silence_ms} | ${r.failed} |`,
  );
}

const out = process.argv[2];
if (out) {
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(
    out,
    JSON.stringify({
      isolates: ISOLATES,
      attempt_timeout_ms: HEALTH.timeoutMs,
      spacing_ms: HEALTH.spacingMs,
      window_ms: HEALTH.windowMs,
      rows: health,
      silence: {
        attempt_timeout_ms: SILENCE.timeoutMs,
        silence_ms: SILENCE.silenceMs,
        spacing_ms: SILENCE.spacingMs,
        window_ms: SILENCE.windowMs,
        rows: silence,
      },
    }),
  );
}
