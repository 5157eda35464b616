// `make bench` and `make bench-cost` on a clone without the JavaScript
// anchor (it lives outside this repository): they run everything else and
// say which rows they skipped and why. Tested cheaply: the part of
// bench/run.sh and bench/cost.sh that decides the rows (BENCH_PLAN=1 stops
// right after it, having installed and started nothing), and the two
// reports fed a run's results without the anchor. No benchmark runs here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");

function withTmp(fn) {
  const dir = mkdtempSync(path.join(tmpdir(), "bench-plan-test-"));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// PATH: node, plus stand-ins for every tool a bench would install or start
// (apt-get, sudo, nginx, wrk, workerd, valgrind): each records that it was
// called. The plan must call none of them.
function planRun(script, anchorDir, tmp) {
  const bin = path.join(tmp, "bin");
  const calls = path.join(tmp, "calls");
  mkdirSync(bin, { recursive: true });
  for (const tool of ["apt-get", "sudo", "nginx", "wrk", "workerd", "valgrind", "callgrind_control", "curl"]) {
    writeFileSync(path.join(bin, tool), `#!/bin/sh\necho ${tool} >>"${calls}"\nexit 1\n`);
    chmodSync(path.join(bin, tool), 0o755);
  }
  const r = spawnSync("bash", [path.join(root, script)], {
    encoding: "utf8",
    env: {
      PATH: `${bin}:${path.dirname(process.execPath)}:/usr/bin:/bin`,
      HOME: tmp,
      BENCH_PLAN: "1",
      BENCH_ANCHOR_DIR: anchorDir,
    },
  });
  return { ...r, calls: existsSync(calls) ? readFileSync(calls, "utf8").trim().split("\n") : [] };
}

for (const [script, name] of [
  ["bench/run.sh", "make bench"],
  ["bench/cost.sh", "make bench-cost"],
]) {
  test(`${name} without the anchor: runs the rest, names what it skips and why, installs nothing to say so`, () =>
    withTmp((tmp) => {
      const missing = path.join(tmp, "no-such-anchor");
      const r = planRun(script, missing, tmp);
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(r.calls, [], "the plan started or installed something");
      assert.ok(r.stderr.includes(`no JavaScript anchor at ${missing}/worker.mjs`), r.stderr);
      const skipped = r.stderr.split("\n").filter((l) => l.startsWith("==>   skipped: "));
      const runs = r.stderr.split("\n").filter((l) => l.startsWith("==>   runs: "));
      assert.ok(skipped.length >= 2, `skipped rows not listed:\n${r.stderr}`);
      assert.ok(skipped.every((l) => l.endsWith("(no anchor)")), skipped.join("\n"));
      assert.ok(runs.length >= 1, `rows that run not listed:\n${r.stderr}`);
      assert.ok(!runs.some((l) => /anchor/.test(l)), `a row that needs the anchor is said to run:\n${runs.join("\n")}`);
    }));

  test(`${name} with the anchor: skips nothing`, () =>
    withTmp((tmp) => {
      const anchor = path.join(tmp, "anchor");
      mkdirSync(anchor);
      writeFileSync(path.join(anchor, "worker.mjs"), "export default {};\n");
      const r = planRun(script, anchor, tmp);
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(r.calls, []);
      assert.match(r.stderr, /==> {3}skipped: nothing/);
      assert.match(r.stderr, /runs: .*anchor/);
    }));
}

// The results of a short run without the anchor, as bench/run.sh records them.
function benchResults(plan) {
  const wrk = (label, target, size, requests, p50) => ({
    kind: "wrk",
    label,
    target,
    size,
    connections: 16,
    seconds: 1,
    result: { requests, duration_us: 1e6, latency_us: { p50, p99: p50 * 10 }, errors: { connect: 0, read: 0, write: 0, status: 0, timeout: 0 } },
  });
  const records = [{ kind: "plan", result: plan }];
  for (const size of ["2k", "1m"]) {
    records.push(wrk("round1", "product", size, 8000, 1500), wrk("round1", "origin", size, 20000, 300));
  }
  records.push(wrk("unloaded1", "product", "2k", 2000, 350), wrk("unloaded1", "origin", "2k", 9000, 90));
  records.push({ kind: "size", wasm_raw: 392201, wasm_gzip: 160718, js_raw: 36038, js_gzip: 12000, anchor_raw: null, anchor_gzip: null });
  records.push({ kind: "cold_start", target: "product", rep: 1, result: { ms: 70 } });
  records.push({
    kind: "failover",
    target: "product",
    result: { fault: "kill", first_good_ms: 20.4, window_ms: 3000, failed_after_fault: 0, requests_after_fault: 50 },
  });
  records.push({ kind: "kill_under_load", target: "product", result: { requests: 47035, errors: { connect: 0, read: 0, write: 0, status: 0, timeout: 0 } } });
  return records;
}

const planOf = (bench, anchorDir) =>
  JSON.parse(spawnSync(process.execPath, [path.join(root, "bench/plan.mjs"), bench, "--anchor-dir", anchorDir, "--json"], { encoding: "utf8" }).stdout);

test("bench/report.mjs without the anchor: the product's figures, 'skipped' in the anchor's column, the skipped rows under the table", () =>
  withTmp((tmp) => {
    const plan = planOf("bench", path.join(tmp, "none"));
    assert.equal(plan.anchor, false);
    const results = path.join(tmp, "results.jsonl");
    writeFileSync(results, benchResults(plan).map((r) => JSON.stringify(r)).join("\n") + "\n");
    const meta = JSON.stringify({ rounds: 1, seconds: 1, threads: 2, connections: 16 });
    const r = spawnSync(process.execPath, [path.join(root, "bench/report.mjs"), results, path.join(tmp, "out"), "--meta", meta], {
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    const line = (start) => r.stdout.split("\n").find((l) => l.startsWith(`| ${start}`));
    for (const figure of ["throughput 2 KiB", "throughput 1 MiB", "p50 2 KiB", "unloaded p50", "first good response after primary killed", "cold start"]) {
      const row = line(figure);
      assert.ok(row, `no "${figure}" row:\n${r.stdout}`);
      assert.match(row, /\| skipped +\|/, `"${figure}": the anchor's cell is not "skipped": ${row}`);
    }
    assert.match(line("throughput 2 KiB"), /\| 8,000 +\|/);
    assert.match(r.stdout, /Skipped in this run:\n {2}the anchor column of the first table: no JavaScript anchor at /);
    assert.doesNotMatch(r.stdout, /NaN|undefined/);
    const doc = JSON.parse(readFileSync(path.join(tmp, "out", "latest.json"), "utf8"));
    assert.equal(doc.plan.anchor, false);
  }));

test("bench/cost-report.mjs without the anchor: no /anchor ratios, the skipped row named with its reason", () =>
  withTmp((tmp) => {
    const plan = planOf("cost", path.join(tmp, "none"));
    const window = (row, instructions) => ({
      kind: "window",
      row,
      regime: "get",
      window: 0,
      instructions,
      client: { requests: 400, seconds: 4, failed: 0, per_second: 100 },
      cache: { gets: 0, hits: 0, puts: 0, purges: 0 },
    });
    const done = (row) => ({ kind: "row", row, attempt_failed: 0, shared_health_error: 0, seconds: 60 });
    const lines = [{ kind: "plan", result: plan }, window("failover", 215e6), done("failover"), window("floor-work", 160e6), done("floor-work")];
    const results = path.join(tmp, "results.jsonl");
    writeFileSync(results, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
    const r = spawnSync(process.execPath, [path.join(root, "bench/cost-report.mjs"), results, path.join(tmp, "out"), "--meta", "{}"], {
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /Skipped in this run:\n {2}the JS anchor row: no JavaScript anchor at /);
    assert.match(r.stdout, /1\.34x/, "the /floor2 ratio is still there");
  }));
