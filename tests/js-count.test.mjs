// bench/js-count.sh counts the fast path's own JavaScript with the Wasm and
// the runtime stood in for (bench/js-count/). Tested cheaply, without
// valgrind: the stand-ins still carry requests through src/js/entry.mjs's
// fast path (a change to what it asks of the Wasm would send them to the
// "full path", which the stand-in refuses), and the script refuses a bad
// request count or source directory before it counts anything.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const esbuild = process.env.ESBUILD_BIN;

function withTmp(fn) {
  const dir = mkdtempSync(path.join(tmpdir(), "js-count-test-"));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function bundle(tmp, env = {}) {
  cpSync(path.join(root, "src/js"), path.join(tmp, "js"), { recursive: true });
  cpSync(path.join(root, "bench/js-count/wasm.mjs"), path.join(tmp, "js/index.js"));
  // As bench/js-count.sh does: the operator module's stand-ins.
  cpSync(path.join(root, "bench/js-count/operator.mjs"), path.join(tmp, "js/operator/operator.js"));
  writeFileSync(path.join(tmp, "js/operator_bg.wasm"), "");
  const b = spawnSync(esbuild, [path.join(tmp, "js/entry.mjs"), "--bundle", "--format=esm", "--platform=neutral", "--loader:.wasm=empty", `--outfile=${path.join(tmp, "bundle.mjs")}`, "--log-level=warning"], { encoding: "utf8" });
  assert.equal(b.status, 0, b.stderr);
  return spawnSync(process.execPath, ["--import", path.join(root, "bench/js-count/runtime.mjs"), path.join(root, "bench/js-count/client.mjs"), path.join(tmp, "bundle.mjs"), "3"], {
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
}

test("the stand-ins carry GETs through the fast path, plain and steered, colo health on and off", { skip: !esbuild && "ESBUILD_BIN unset (run under make test)" }, () => {
  for (const env of [{}, { JS_COUNT_COLO: "off" }, { JS_COUNT_STEER: "weighted" }, { JS_COUNT_STEER: "hash" }]) {
    withTmp((tmp) => {
      const r = bundle(tmp, env);
      assert.equal(r.status, 0, `${JSON.stringify(env)}: ${r.stderr}`);
    });
  }
});

test("bench/js-count.sh refuses a bad JS_COUNT_N and a directory without entry.mjs, before counting", () =>
  withTmp((tmp) => {
    const run = (args, env) =>
      spawnSync("bash", [path.join(root, "bench/js-count.sh"), ...args], { encoding: "utf8", env: { ...process.env, ESBUILD_BIN: "/nonexistent", ...env } });
    for (const bad of ["0", "-5", "many", "1e3"]) {
      const r = run([], { JS_COUNT_N: bad });
      assert.notEqual(r.status, 0, bad);
      assert.match(r.stderr, /JS_COUNT_N: '.*' is not a whole number of requests/);
    }
    const r = run([tmp], {});
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /no entry\.mjs in /);
  }));
