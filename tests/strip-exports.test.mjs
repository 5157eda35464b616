// scripts/strip-exports.mjs: the request path's Wasm keeps every export
// its glue calls and none of the unused workers-rs classes'; a file that
// is not Wasm is refused, not rewritten.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const script = path.join(root, "scripts", "strip-exports.mjs");
const built = (name) => path.join(root, "build", name);

// The export names of a module, read from its bytes (Node's V8 may not
// compile every feature workerd's does, so no WebAssembly.Module here).
function exportsOf(file) {
  const bytes = readFileSync(file);
  let at = 8;
  const leb = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = bytes[at++];
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < bytes.length) {
    const id = bytes[at++];
    const size = leb();
    const end = at + size;
    if (id === 7) {
      const names = [];
      for (let n = leb(); n > 0; n--) {
        const length = leb();
        names.push(bytes.subarray(at, at + length).toString("utf8"));
        at += length + 1;
        leb();
      }
      return names;
    }
    at = end;
  }
  return [];
}

test("the built modules export none of the unused classes, and all the rest", () => {
  for (const name of ["index_bg.wasm", "operator_bg.wasm"]) {
    const exports = exportsOf(built(name));
    assert.ok(exports.includes("__wbindgen_start"), `${name} kept wasm-bindgen's own exports`);
    const unused = exports.filter((e) => /containerstartupoptions|minifyconfig|r2range|intounderlying/.test(e));
    assert.deepEqual(unused, [], `${name} still exports ${unused.join(", ")}`);
  }
  const hot = exportsOf(built("index_bg.wasm"));
  for (const entry of ["fetch", "fetch_after", "fast_config", "fast_lease", "periodic_work", "hold_body", "release_body", "scheduled"]) {
    assert.ok(hot.includes(entry), `the request path exports ${entry}`);
  }
});

test("stripping twice changes nothing more, and a file that is not Wasm is refused", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "strip-"));
  try {
    const once = path.join(dir, "once.wasm");
    const twice = path.join(dir, "twice.wasm");
    execFileSync(process.execPath, [script, built("index_bg.wasm"), once], { stdio: "pipe" });
    execFileSync(process.execPath, [script, once, twice], { stdio: "pipe" });
    assert.deepEqual(readFileSync(twice), readFileSync(once));
    assert.deepEqual(readFileSync(once), readFileSync(built("index_bg.wasm")), "the build already stripped it");
    const bogus = path.join(dir, "bogus.wasm");
    writeFileSync(bogus, "not wasm at all");
    const out = path.join(dir, "out.wasm");
    const run = spawnSync(process.execPath, [script, bogus, out], { encoding: "utf8" });
    assert.equal(run.status, 1);
    assert.match(run.stderr, /not a WebAssembly module/);
    const none = spawnSync(process.execPath, [script], { encoding: "utf8" });
    assert.equal(none.status, 2);
    assert.match(none.stderr, /usage/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
