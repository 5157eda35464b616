// The README keeps its promises mechanically: every `make` target it tells a
// user to run exists, every repository file it names is there, and the
// Worker's settings table lists exactly the settings the Worker reads (the
// SETTINGS list in crates/failover-core/src/edge/config/vars.rs) and the
// ORIGINS keys it accepts. Plain Node, no Worker needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const read = (file) => readFileSync(path.join(root, file), "utf8");
const readme = read("README.md");

// What the README shows as something to type or a name: inline code spans
// and fenced code blocks, not its prose ("make before break").
function codeSpans(text) {
  const spans = [];
  const fence = /^```[^\n]*\n([\s\S]*?)^```/gm;
  for (const m of text.matchAll(fence)) spans.push(...m[1].split("\n"));
  const prose = text.replace(fence, "");
  for (const m of prose.matchAll(/`([^`\n]+)`/g)) spans.push(m[1]);
  return spans;
}

const spans = codeSpans(readme);

test("every make target the README names exists (`make help` lists it)", () => {
  const makefile = read("Makefile");
  const targets = new Set([...makefile.matchAll(/^([a-z][a-z-]*):/gm)].map((m) => m[1]));
  const named = new Set();
  for (const span of spans) {
    for (const m of span.matchAll(/(?:^|[\s;&|])make ([a-z][a-z-]*)/g)) named.add(m[1]);
  }
  assert.ok(named.size >= 10, `only ${[...named]} found: is the README's code still read?`);
  const missing = [...named].filter((t) => !targets.has(t));
  assert.deepEqual(missing, [], `README names make targets the Makefile lacks: ${missing.join(", ")}`);
});

test("every repository file the README names is there", () => {
  const named = new Set();
  for (const span of spans) {
    for (const m of span.matchAll(/(?:^|[\s(=])((?:\.github|bench|crates|packaging|scripts|src|tests)\/[\w./-]*)/g)) {
      named.add(m[1].replace(/[.,:;)]+$/, ""));
    }
  }
  assert.ok(named.size >= 15, `only ${named.size} paths found`);
  // Test paths of a crate are written relative to it (crates/failover-agent/tests/...).
  const bases = ["", "crates/failover-agent", "crates/failover-core"];
  const missing = [...named].filter((p) => !bases.some((b) => existsSync(path.join(root, b, p))));
  assert.deepEqual(missing, [], `README names files that do not exist: ${missing.join(", ")}`);
});

test("the settings table lists exactly the settings the Worker reads, and the ORIGINS keys it accepts", () => {
  const vars = read("crates/failover-core/src/edge/config/vars.rs");
  const list = vars.match(/pub const SETTINGS: \[&str; \d+\] = \[([\s\S]*?)\];/);
  assert.ok(list, "SETTINGS not found in vars.rs");
  const settings = [...list[1].matchAll(/"([A-Z_]+)"/g)].map((m) => m[1]);
  // HEALTH_CHECKER is a binding, not a var: the table lists it too.
  const rows = new Set([...readme.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]));
  const undocumented = settings.filter((s) => !rows.has(s));
  assert.deepEqual(undocumented, [], `settings missing from the README's table: ${undocumented.join(", ")}`);
  const unknown = [...rows].filter((r) => !settings.includes(r) && r !== "HEALTH_CHECKER");
  assert.deepEqual(unknown, [], `README documents settings the Worker does not read: ${unknown.join(", ")}`);

  const origins = read("crates/failover-core/src/edge/config/origins.rs");
  const keys = origins.match(/const ORIGIN_KEYS: \[&str; \d+\] = \[([\s\S]*?)\];/);
  assert.ok(keys, "ORIGIN_KEYS not found in origins.rs");
  const accepted = [...keys[1].matchAll(/"([a-z_]+)"/g)].map((m) => m[1]);
  const documented = new Set([...readme.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]));
  const missingKeys = accepted.filter((k) => !documented.has(k));
  assert.deepEqual(missingKeys, [], `ORIGINS keys missing from the README: ${missingKeys.join(", ")}`);
});

// The README is read top to bottom by someone setting the system up: the
// top-level sections come in the order they need them (others may sit in
// between), and what comes before Development speaks their language, not
// the project's history (benchmark baselines, issue numbers, bench rounds).
const topLevel = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1]);

test("the README's top-level sections come in a user's order", () => {
  const order = [
    "Quick start (tunnel per node)",
    "Install the agent",
    "Deploy the Worker",
    "Verify",
    "Runbook and troubleshooting",
    "Reference",
    "How it works",
    "Development",
  ];
  const found = order.map((h) => topLevel.indexOf(h));
  const missing = order.filter((_, i) => found[i] === -1);
  assert.deepEqual(missing, [], `README lacks the sections: ${missing.join(", ")}`);
  const sorted = [...found].sort((a, b) => a - b);
  assert.deepEqual(found, sorted, `README's sections are out of order: ${topLevel.join(" | ")}`);
});

test("the sections for users use none of the project's internal words", () => {
  const dev = readme.search(/^## Development$/m);
  assert.ok(dev > 0, "no Development section");
  const userPart = readme.slice(0, dev);
  const internal = [/\banchors?\b/i, /\bissue #?\d+/i, /\brounds?\b/i];
  const hits = [];
  for (const [n, line] of userPart.split("\n").entries()) {
    if (internal.some((w) => w.test(line))) hits.push(`${n + 1}: ${line}`);
  }
  assert.deepEqual(hits, [], `internal words before ## Development:\n${hits.join("\n")}`);
});

test("the README's download commands name this version's release files", () => {
  const cargo = read("Cargo.toml");
  const version = cargo.match(/\[workspace\.package\][^[]*?^version = "([^"]+)"/m)?.[1];
  assert.ok(version, "no [workspace.package] version in Cargo.toml");
  const repo = cargo.match(/^repository = "([^"]+)"/m)?.[1];
  assert.ok(repo, "no repository in Cargo.toml's [workspace.package]");
  const urls = [...readme.matchAll(/https:\/\/github\.com\/\S+?\/releases\/download\/\S+/g)].map((m) => m[0]);
  assert.ok(urls.length >= 3, `only ${urls.length} download URLs found`);
  const deb = version.replace("-", "~");
  const files = new Set([
    `failover-agent_${deb}_amd64.deb`,
    `failover-agent_${deb}_arm64.deb`,
    `failover-agent-${version}-x86_64-linux-musl`,
    `failover-agent-${version}-aarch64-linux-musl`,
    `tunnel-failover-worker-${version}.tar.gz`,
    "SHA256SUMS",
  ]);
  for (const url of urls) {
    const prefix = `${repo}/releases/download/v${version}/`;
    assert.ok(url.startsWith(prefix), `${url} is not under ${prefix}`);
    assert.ok(files.has(url.slice(prefix.length)), `${url}: no release file of that name`);
  }
  // ...and the names the README shows are the ones the scripts write.
  assert.match(read("scripts/worker-bundle.sh"), /^NAME=tunnel-failover-worker-\$VERSION$/m);
  assert.match(read("scripts/dist.sh"), /failover-agent_\$\{DEB_VERSION\}_\$\{debarch\}\.deb/);
});
