// `make bench-cost` counts each row in several workerd processes
// (BENCH_COST_PROCESSES, 3) and reports the median of their figures: one
// process's count lands on one of two levels some 3.5% apart, so one
// process cannot settle a 1% target. Tested cheaply: bench/cost-report.mjs
// fed a run's results by hand, and the knob's check in bench/cost.sh
// (which refuses a bad value before it installs or starts anything). No
// benchmark runs here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");

function withTmp(fn) {
  const dir = mkdtempSync(path.join(tmpdir(), "bench-cost-report-test-"));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// One counted window of `requests` GETs at `k` thousand instructions each.
const window = (row, process, k, requests = 400) => ({
  kind: "window",
  row,
  process,
  regime: "get",
  window: 1,
  instructions: k * 1000 * requests,
  client: { requests, seconds: 4, failed: 0, per_second: 100 },
  cache: { gets: 0, hits: 0, puts: 0, purges: 0 },
});
const done = (row, process) => ({ kind: "row", row, process, attempt_failed: 0, shared_health_error: 0, seconds: 50 });

function report(tmp, lines) {
  const results = path.join(tmp, "results.jsonl");
  writeFileSync(results, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  const r = spawnSync(process.execPath, [path.join(root, "bench/cost-report.mjs"), results, path.join(tmp, "out"), "--meta", "{}"], {
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stdout, /NaN|undefined/);
  return { stdout: r.stdout, json: JSON.parse(readFileSync(path.join(tmp, "out", "cost-latest.json"), "utf8")) };
}

test("a row's figure is the median of its processes', each all its windows / all their requests; ratios of medians", () =>
  withTmp((tmp) => {
    const lines = [];
    // failover: processes at 430 (two windows, 420 and 440), 445 and 500
    // (a process that landed high): the median is 445, not the pooled 458.3.
    for (const [process, ks] of [
      [1, [420, 440]],
      [2, [445, 445]],
      [3, [500, 500]],
    ]) {
      for (const k of ks) lines.push(window("failover", process, k));
      lines.push(done("failover", process));
    }
    for (const process of [1, 2, 3]) {
      lines.push(window("anchor", process, [440, 445, 450][process - 1]), done("anchor", process));
    }
    const { stdout, json } = report(tmp, lines);
    const failover = json.rows.find((r) => r.id === "failover");
    assert.equal(failover.processes, 3);
    assert.equal(failover.seconds, 150, "the processes' time summed");
    const get = failover.regimes.get;
    assert.deepEqual(
      get.processes.map((p) => p.k_per_request),
      [430, 445, 500],
    );
    assert.equal(get.k_per_request, 445);
    assert.equal(get.k_low, 430);
    assert.equal(get.k_high, 500);
    assert.equal(get.k_pooled, 458.3);
    assert.equal(failover.ratios.get.anchor, 1, "445 / 445");
    assert.match(stdout, /in 3 processes; a cell is the median of the processes' figures/);
    const line = stdout.split("\n").filter((l) => l.startsWith("failover "));
    assert.match(line[0], /^failover +445 +1\.00x/, line[0]);
    assert.match(line[1], /430-500/, "the lowest and highest process");
  }));

test("an even number of processes: the mean of the middle two; results without a process count as one", () =>
  withTmp((tmp) => {
    const even = report(tmp, [
      window("failover", 1, 400),
      window("failover", 2, 410),
      window("failover", 3, 430),
      window("failover", 4, 900),
      ...[1, 2, 3, 4].map((p) => done("failover", p)),
    ]);
    assert.equal(even.json.rows[0].regimes.get.k_per_request, 420);
    const { process: _, ...old } = window("failover", 1, 400);
    const { process: __, ...oldDone } = done("failover", 1);
    const one = report(tmp, [old, { ...old, instructions: 420 * 400 * 1000 }, oldDone]);
    assert.equal(one.json.rows[0].processes, 1);
    assert.equal(one.json.rows[0].regimes.get.k_per_request, 410, "one process: all its windows / all their requests");
    assert.match(one.stdout, /in one process;/);
  }));

test("bench/cost.sh refuses a BENCH_COST_PROCESSES that is not a whole number of processes, before it starts anything", () => {
  for (const bad of ["0", "-1", "two", "1.5", "3 4", ""]) {
    const r = spawnSync("bash", [path.join(root, "bench/cost.sh")], {
      encoding: "utf8",
      // BENCH_PLAN=1 would stop after the plan; the knob is checked first.
      env: { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, BENCH_PLAN: "1", BENCH_COST_PROCESSES: bad },
    });
    if (bad === "") {
      // Unset or empty: the default, 3.
      assert.equal(r.status, 0, r.stderr);
      continue;
    }
    assert.notEqual(r.status, 0, `accepted BENCH_COST_PROCESSES=${JSON.stringify(bad)}`);
    assert.match(r.stderr, /BENCH_COST_PROCESSES: '.*' is not a whole number of processes/, r.stderr);
    assert.doesNotMatch(r.stderr, /make bench-cost: JavaScript anchor/, "the plan ran first");
  }
});
