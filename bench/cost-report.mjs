// The table and the JSON of `make bench-cost` (bench/cost.sh), from its
// results (one JSON line per counted window, one per row and process):
//
//   node bench/cost-report.mjs RESULTS.jsonl OUT_DIR --meta JSON
//
// Each row is counted in a few workerd processes (BENCH_COST_PROCESSES, 3).
// A process's figure per regime is all its windows' instructions / all
// their requests (issue #20's "total / N"): everything the requests
// triggered, periodic work included. A row's figure is the median of its
// processes' figures, so that one process that carried a rare big event (a
// late compile, a window of 9 M instructions more) does not move it.
// (Processes used to land on one of two levels up to 12% apart, a
// background compile that never landed under callgrind; V8 now compiles in
// line, bench/cost-workerd.capnp.tmpl.) The lowest and
// highest process are in the table's second part; a window above 2x the
// windows' median is named under the table. Within a process no window is
// dropped: that would drop periodic work, and V8's young-generation GCs
// (every few hundred requests, so a window holds one or none) put window
// medians on levels 10-25% apart. Windows recorded without a process
// (results from before processes) count as one process. Ratios are of the
// medians: to the anchor's and floor 2's in the same regime and the same
// run. Writes OUT_DIR/cost-<ts>.json and OUT_DIR/cost-latest.json.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { ROWS } from "./cost-config.mjs";

const { positionals, values: opt } = parseArgs({ allowPositionals: true, options: { meta: { type: "string" } } });
const [resultsFile, outDir] = positionals;
const meta = JSON.parse(opt.meta ?? "{}");
const lines = readFileSync(resultsFile, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));

const REGIMES = [
  { id: "get", title: "GETs back to back" },
  { id: "post", title: `${meta.post_bytes ?? 512}-byte POSTs` },
  { id: "sparse", title: `one GET every ${meta.sparse_ms ?? 400} ms` },
];

// A window above this many times the windows' median is named under the table.
const BIG = 2;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const sum = (xs) => xs.reduce((a, b) => a + b, 0);

const round1 = (x) => Math.round(x * 10) / 10;

// One process's figure: all its windows' instructions / all their requests.
function processOf(id, windows) {
  const requests = sum(windows.map((w) => w.client.requests));
  return {
    process: id,
    k_per_request: round1(sum(windows.map((w) => w.instructions)) / requests / 1000),
    windows: windows.map((w) => ({
      requests: w.client.requests,
      instructions: w.instructions,
      seconds: w.client.seconds,
      failed: w.client.failed,
      per_second: w.client.per_second,
      cache: w.cache,
    })),
  };
}

function regimeOf(windows) {
  if (windows.length === 0) return null;
  const ids = [...new Set(windows.map((w) => w.process ?? 1))].sort((a, b) => a - b);
  const processes = ids.map((id) => processOf(id, windows.filter((w) => (w.process ?? 1) === id)));
  const ks = processes.map((p) => p.k_per_request);
  const per = windows.map((w) => w.instructions / w.client.requests);
  const requests = sum(windows.map((w) => w.client.requests));
  return {
    // The row's figure: the median of its processes'.
    k_per_request: round1(median(ks)),
    k_low: Math.min(...ks),
    k_high: Math.max(...ks),
    // Every window of every process pooled, for comparison with runs of
    // one process.
    k_pooled: round1(sum(windows.map((w) => w.instructions)) / requests / 1000),
    big_windows: per.filter((x) => x > BIG * median(per)).map((x) => Math.round(x / 1000)),
    per_second: round1(median(windows.map((w) => w.client.per_second))),
    // Cache API GETs (a colo read is one per origin) per client request.
    cache_gets_per_request: Math.round((sum(windows.map((w) => w.cache.gets)) / requests) * 1000) / 1000,
    processes,
  };
}

const counted = new Set(lines.filter((l) => l.kind === "row").map((l) => l.row));
const rows = ROWS.filter((r) => counted.has(r.id)).map((r) => {
  // One line per process of the row: failures and time summed.
  const done = lines.filter((l) => l.kind === "row" && l.row === r.id);
  const regimes = Object.fromEntries(
    REGIMES.map((g) => [g.id, regimeOf(lines.filter((l) => l.kind === "window" && l.row === r.id && l.regime === g.id))]),
  );
  return {
    id: r.id,
    label: r.label,
    kind: r.kind,
    regimes,
    processes: done.length,
    attempt_failed: sum(done.map((d) => d.attempt_failed)),
    shared_health_error: sum(done.map((d) => d.shared_health_error)),
    seconds: sum(done.map((d) => d.seconds)),
  };
});

const byId = Object.fromEntries(rows.map((r) => [r.id, r]));
const ratio = (row, to, regime) => {
  const a = row.regimes[regime]?.k_per_request;
  const b = byId[to]?.regimes[regime]?.k_per_request;
  return a && b ? Math.round((a / b) * 100) / 100 : null;
};
for (const row of rows) {
  row.ratios = Object.fromEntries(
    REGIMES.map((g) => [g.id, { anchor: ratio(row, "anchor", g.id), floor_work: ratio(row, "floor-work", g.id) }]),
  );
}

// ----------------------------------------------------------------- table --

const fmtK = (k) => (k == null ? "-" : Math.round(k).toLocaleString("en-US"));
const fmtX = (x) => (x == null ? "-" : `${x.toFixed(2)}x`);
const pad = (s, n) => String(s).padStart(n);
const labelWidth = Math.max(28, ...rows.map((r) => r.label.length)) + 2;
const cell = 23;
const out = [];
out.push("");
const processes = Math.max(0, ...rows.map((r) => r.processes));
out.push("Instructions per request, counted under callgrind (k = thousand; each Worker alone in its own workerd,");
out.push(
  processes > 1
    ? `in ${processes} processes; a cell is the median of the processes' figures, each all its windows' instructions / all`
    : "in one process; a cell is all its windows' instructions / all",
);
out.push("their requests; ratios to the JS anchor and to floor 2 in the same regime)");
out.push("");
out.push("".padEnd(labelWidth) + REGIMES.map((g) => g.title.padStart(cell)).join(""));
out.push("Worker".padEnd(labelWidth) + REGIMES.map(() => `${pad("k", 7)}${pad("/anchor", 8)}${pad("/floor2", 8)}`).join(""));
for (const row of rows) {
  out.push(
    row.label.padEnd(labelWidth) +
      REGIMES.map((g) => {
        const r = row.regimes[g.id];
        return `${pad(fmtK(r?.k_per_request), 7)}${pad(fmtX(row.ratios[g.id].anchor), 8)}${pad(fmtX(row.ratios[g.id].floor_work), 8)}`;
      }).join(""),
  );
}
out.push("");
out.push("Rate under callgrind, Cache API GETs per request, and the lowest and highest process's figure (k)");
out.push("".padEnd(labelWidth) + REGIMES.map((g) => g.title.padStart(cell)).join(""));
out.push("Worker".padEnd(labelWidth) + REGIMES.map(() => `${pad("req/s", 7)}${pad("cache", 6)}${pad("processes", 10)}`).join(""));
for (const row of rows) {
  out.push(
    row.label.padEnd(labelWidth) +
      REGIMES.map((g) => {
        const r = row.regimes[g.id];
        if (!r) return pad("-", cell);
        const range = r.k_low === r.k_high ? fmtK(r.k_low) : `${fmtK(r.k_low)}-${fmtK(r.k_high)}`;
        return `${pad(r.per_second.toFixed(1), 7)}${pad(r.cache_gets_per_request.toFixed(2), 6)}${pad(range, 10)}`;
      }).join(""),
  );
}
out.push("");
// What this machine could not take (bench/plan.mjs, recorded by cost.sh).
const plan = lines.find((l) => l.kind === "plan")?.result ?? null;
if (plan?.skipped.length) {
  out.push("Skipped in this run:");
  for (const { row, why } of plan.skipped) out.push(`  ${row}: ${why}`);
} else if (!byId.anchor) {
  out.push("No JavaScript anchor row in this run (BENCH_COST_ROWS left it out): no /anchor ratios.");
}
if (!byId["floor-work"]) out.push("No floor 2 row in this run (BENCH_COST_ROWS left it out): no /floor2 ratios.");
// SITES: requests spread over 3 and 50 sites' hosts against one site's.
for (const id of ["sites-3", "sites-50"]) {
  const row = byId[id];
  if (!row || !byId.failover) continue;
  const each = REGIMES.map((g) => {
    const x = ratio(row, "failover", g.id);
    return x == null ? null : `${g.title} ${fmtX(x)}`;
  }).filter(Boolean);
  out.push(`${row.label}: ${each.join(", ")} the failover row's (the issue's bound: 1.03x).`);
}
// What a request with an app's own Authorization costs: while a token is
// set, the fast path compares it with the Worker's tokens
// (src/js/credentials.mjs) before it goes on; the failover row's requests
// carry none.
const authorized = byId["failover-authorization"];
if (authorized && byId.failover) {
  const each = REGIMES.map((g) => {
    const x = ratio(authorized, "failover", g.id);
    return x == null ? null : `${g.title} ${fmtX(x)}`;
  }).filter(Boolean);
  out.push(`Requests with an app's Authorization (compared with the Worker's own tokens first): ${each.join(", ")} the failover row's.`);
}
const get = byId.failover?.regimes.get;
out.push(
  "Time-based work is charged per request at the rate the Worker ran: callgrind runs a request ~30x slower, so" +
    "\nthe colo read (every 250 ms, colo health on) falls on ~30x fewer requests back to back here than at full speed" +
    (get ? ` (failover: ${get.per_second} req/s, ${get.cache_gets_per_request} cache GETs per request)` : "") +
    "." +
    `\nThe sparse regime runs every Worker at the same rate (one request every ${meta.sparse_ms ?? 400} ms): compare periodic work there.`,
);
out.push(
  "The Cache API service (bench/cost-cache.mjs) is a separate process, not counted: Cloudflare bills the isolate;" +
    "\nthe Worker's side of each cache call is counted.",
);
for (const l of lines.filter((l) => l.kind === "failed_window")) {
  out.push(`NOTE ${l.row}${l.process ? `, process ${l.process}` : ""}, ${l.regime}: a window had ${l.client.failed} failed requests (first: ${l.client.first_failure}); it was counted again.`);
}
for (const row of rows) {
  for (const g of REGIMES) {
    const big = row.regimes[g.id]?.big_windows ?? [];
    if (big.length > 0) out.push(`NOTE ${row.label}, ${g.title}: window(s) at ${big.map((k) => `${k.toLocaleString("en-US")} k`).join(", ")}, over 2x the windows' median (a compile or periodic work; in its process's figure).`);
    const failed = sum((row.regimes[g.id]?.processes ?? []).flatMap((p) => p.windows.map((w) => w.failed)));
    if (failed > 0) out.push(`WARNING ${row.label}, ${g.title}: ${failed} requests failed in the counted windows: the figure is not a request's cost.`);
  }
  if (row.attempt_failed > 0) out.push(`WARNING ${row.label}: ${row.attempt_failed} attempts failed: the row counted failovers, not healthy requests.`);
  if (row.shared_health_error > 0) out.push(`WARNING ${row.label}: ${row.shared_health_error} colo cache errors: its colo reads did not reach the cache.`);
}
if (meta.wall_s) out.push(`bench-cost time: ${Math.floor(meta.wall_s / 60)} min ${meta.wall_s % 60} s`);
console.log(out.join("\n"));

// ------------------------------------------------------------------ JSON --

const stamp = new Date().toISOString().replace(/[:.]/g, "-");
mkdirSync(outDir, { recursive: true });
const json = JSON.stringify({ meta: { ...meta, date: new Date().toISOString() }, rows }, null, 2);
writeFileSync(path.join(outDir, `cost-${stamp}.json`), json);
writeFileSync(path.join(outDir, "cost-latest.json"), json);
console.log(`wrote ${path.relative(process.cwd(), path.join(outDir, `cost-${stamp}.json`))} and cost-latest.json`);
