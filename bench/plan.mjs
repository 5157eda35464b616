// Which rows `make bench` (bench/run.sh) and `make bench-cost`
// (bench/cost.sh) can take on this machine, and which they skip and why.
// The one thing that decides today is the JavaScript anchor, the load
// balancer the product replaces: it lives beside this repository on the
// project's machines (../shared/anchors/js-worker-lb), not in it, so a
// user's clone has none. Without it both benches run everything else.
//
//   node bench/plan.mjs bench|cost --anchor-dir DIR          the plan, for a person
//   node bench/plan.mjs bench|cost --anchor-dir DIR --json   {anchor, anchor_dir, runs, skipped}
//
// Both scripts print the plan before they start, and stop after it with
// BENCH_PLAN=1 (nothing installed, nothing run): that is how the plan is
// tested (tests/bench-plan.test.mjs).
import { existsSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";

const { positionals, values: opt } = parseArgs({
  allowPositionals: true,
  options: { "anchor-dir": { type: "string" }, json: { type: "boolean", default: false } },
});
const [bench] = positionals;
if (!["bench", "cost"].includes(bench) || !opt["anchor-dir"]) {
  console.error("usage: node bench/plan.mjs bench|cost --anchor-dir DIR [--json]");
  process.exit(2);
}

const anchorDir = path.resolve(opt["anchor-dir"]);
const anchorFile = path.join(anchorDir, "worker.mjs");
const anchor = existsSync(anchorFile);

// What each bench measures, split by whether it needs the anchor.
const ROWS = {
  bench: {
    always: [
      "the product's figures in every row of the first table (throughput and latency at 2 KiB and 1 MiB, unloaded latency, failover after a kill and a hang, kill under load, wasm size, cold start), with nginx direct beside them",
      "the steering policies and the two floors (second table)",
      "the first vs the second failover in one isolate",
      "shared health: many isolates with a hung primary, colo health and SILENCE_MS",
    ],
    anchor: [
      "the anchor column of the first table",
      "every product / anchor ratio (throughput, p50, p99, latency added, failover, script size, cold start)",
    ],
  },
  cost: {
    always: [
      "every product row (each steering policy, colo health on and off; failover with an app's Authorization on every request; SITES with 3 and 50 sites) and the two floors, with their /floor2 ratios",
    ],
    anchor: ["the JS anchor row", "the /anchor ratios"],
  },
};

const why = `no JavaScript anchor at ${anchorFile}: it is kept outside this repository (BENCH_ANCHOR_DIR=/path/to/js-worker-lb names one)`;
const plan = {
  bench,
  anchor,
  anchor_dir: anchorDir,
  runs: [...ROWS[bench].always, ...(anchor ? ROWS[bench].anchor : [])],
  skipped: anchor ? [] : ROWS[bench].anchor.map((row) => ({ row, why })),
};

if (opt.json) {
  console.log(JSON.stringify(plan));
} else {
  const name = bench === "bench" ? "make bench" : "make bench-cost";
  console.log(`${name}: ${anchor ? `JavaScript anchor: ${anchorFile}` : why}`);
  for (const row of plan.runs) console.log(`  runs:    ${row}`);
  if (plan.skipped.length === 0) console.log("  skipped: nothing");
  for (const { row } of plan.skipped) console.log(`  skipped: ${row} (no anchor)`);
}
