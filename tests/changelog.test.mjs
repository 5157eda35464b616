// scripts/changelog.sh: CHANGELOG.md feeds the GitHub release's notes and the
// .deb's changelog. Plain Node and bash, no Worker needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const script = path.join(root, "scripts/changelog.sh");
const DATE = "Tue, 01 Dec 2026 12:00:00 +0000";
const MAINT = "tunnel-failover maintainers <maintainers@example.com>";

const FIXTURE = `# Changelog

Intro prose that belongs to no version.

## [Unreleased]

- Not released yet: must appear nowhere.

## [1.2.0-rc.1] - 2026-11-30

### Added
- A very long item that goes on and on about a feature with many words in it so that it must be wrapped at eighty columns.
- Another, written over
  two lines.

## [1.1.0]

First paragraph of 1.1.0.

## [1.0.0] - 2026-01-15

- One.
`;

function run(args, changelog = FIXTURE) {
  const dir = mkdtempSync(path.join(tmpdir(), "changelog-test-"));
  try {
    const file = path.join(dir, "CHANGELOG.md");
    writeFileSync(file, changelog);
    return spawnSync("bash", [script, ...args], { env: { ...process.env, CHANGELOG: file }, encoding: "utf8" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("notes: exactly the version's section, without its heading or the next one", () => {
  const r = run(["notes", "1.2.0-rc.1"]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^### Added\n- A very long item/);
  assert.match(r.stdout, /two lines\.\n$/);
  assert.doesNotMatch(r.stdout, /1\.1\.0|Unreleased|Not released/);
  assert.equal(run(["notes", "1.0.0"]).stdout, "- One.\n");
});

test("a version without a section is an error that says what to add", () => {
  for (const mode of [["notes", "2.0.0"], ["debian", "2.0.0", "p", "2.0.0", MAINT, DATE]]) {
    const r = run(mode);
    assert.equal(r.status, 1);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /no section for 2\.0\.0: add '## \[2\.0\.0\]'/);
  }
  // "1.1" is no section of "1.1.0", nor "1.1.0" of "1.1.0.1".
  assert.equal(run(["notes", "1.1"]).status, 1);
  assert.equal(run(["notes", "1.1.0"], "## [1.1.0.1]\n- x\n").status, 1);
});

test("debian: this version and every older one, newest first, items wrapped at 80 columns", () => {
  const r = run(["debian", "1.2.0-rc.1", "failover-agent", "1.2.0~rc.1", MAINT, DATE]);
  assert.equal(r.status, 0, r.stderr);
  const out = r.stdout;
  const heads = [...out.matchAll(/^(\S+) \((\S+)\) unstable; urgency=medium$/gm)].map((m) => m[2]);
  assert.deepEqual(heads, ["1.2.0~rc.1", "1.1.0", "1.0.0"]);
  assert.doesNotMatch(out, /Not released|Intro prose/);
  for (const line of out.split("\n").filter((l) => l.startsWith("  "))) {
    assert.ok(line.length <= 80, `an item line over 80 columns: ${line}`);
  }
  assert.match(out, /^  \* Added:$/m);
  assert.match(out, /^  \* A very long item/m);
  assert.match(out, /^    .*eighty columns\.$/m);
  assert.match(out, /^  \* Another, written over two lines\.$/m);
  assert.match(out, /^  \* First paragraph of 1\.1\.0\.$/m);
  // Its own date from the heading; the given date where the heading has none.
  const trailers = [...out.matchAll(/^ -- (.+?)  (.+)$/gm)].map((m) => m[2]);
  assert.equal(trailers.length, 3);
  assert.match(trailers[0], /30 Nov 2026/);
  assert.equal(trailers[1], DATE);
  assert.match(trailers[2], /15 Jan 2026/);

  const older = run(["debian", "1.1.0", "failover-agent", "1.1.0", MAINT, DATE]).stdout;
  assert.deepEqual([...older.matchAll(/^\S+ \((\S+)\)/gm)].map((m) => m[1]), ["1.1.0", "1.0.0"]);
});

test("debian: dpkg-parsechangelog reads every entry", (t) => {
  if (spawnSync("dpkg-parsechangelog", ["--version"]).status !== 0) return t.skip("dpkg-parsechangelog not installed");
  const out = run(["debian", "1.2.0-rc.1", "failover-agent", "1.2.0~rc.1", MAINT, DATE]).stdout;
  const parsed = spawnSync("dpkg-parsechangelog", ["-l", "-", "--all", "-S", "Version"], { input: out, encoding: "utf8" });
  assert.equal(parsed.status, 0, parsed.stderr);
  assert.equal(parsed.stderr, "", "dpkg-parsechangelog warned");
  assert.equal(parsed.stdout.trim(), "1.2.0~rc.1");
  const all = spawnSync("dpkg-parsechangelog", ["-l", "-", "--all", "-S", "Changes"], { input: out, encoding: "utf8" });
  assert.match(all.stdout, /failover-agent \(1\.0\.0\)/);
});

test("the project's CHANGELOG.md has a section for the workspace version", () => {
  const version = spawnSync("bash", [path.join(root, "scripts/version.sh")], { encoding: "utf8" }).stdout.trim();
  const r = spawnSync("bash", [script, "notes", version], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stdout.trim().length > 0, `CHANGELOG.md's ${version} section is empty`);
});
