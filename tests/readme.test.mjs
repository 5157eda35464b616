// The README keeps its promises mechanically: every `make` target it tells a
// user to run exists, every repository file it names is there, and the
// Worker's settings table lists exactly the settings the Worker reads (the
// SETTINGS list in crates/failover-core/src/edge/config/vars.rs) and the
// ORIGINS keys it accepts; the agent's reference lists exactly the config
// keys the agent accepts (crates/failover-agent/src/config/), and every
// `section.key` named anywhere exists. Plain Node, no Worker needed.
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
  // The bindings the Worker looks for are in the table too, each named
  // where the Worker reads it.
  const bindings = { HEALTH_CHECKER: "crates/failover-core/src/edge/consult.rs", TOKEN_GUESS_LIMITER: "src/guesses.rs" };
  for (const [name, file] of Object.entries(bindings)) assert.match(read(file), new RegExp(`"${name}"`), `${name} in ${file}`);
  const rows = new Set([...readme.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]));
  const undocumented = [...settings, ...Object.keys(bindings)].filter((s) => !rows.has(s));
  assert.deepEqual(undocumented, [], `settings missing from the README's table: ${undocumented.join(", ")}`);
  const unknown = [...rows].filter((r) => !settings.includes(r) && !(r in bindings));
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

// The agent's config keys, as crates/failover-agent/src/config/mod.rs
// accepts them: `top.only(&[...])` lists the top level, and each
// `let s = top.section("name")` followed by `s.only(&[...])` a section's.
function agentConfigKeys() {
  const src = read("crates/failover-agent/src/config/mod.rs");
  const list = (text) => [...text.matchAll(/"([a-z_]+)"/g)].map((m) => m[1]);
  const top = src.match(/\btop\.only\(&\[([\s\S]*?)\]\)/);
  assert.ok(top, "top.only(&[...]) not found in the agent's config/mod.rs");
  const sections = new Map();
  for (const m of src.matchAll(/let (\w+) = top\.section\("([a-z_]+)"\)/g)) sections.set(m[1], m[2]);
  assert.ok(sections.size >= 4, `only ${sections.size} sections found in the agent's config/mod.rs`);
  const keys = new Set(list(top[1]).filter((k) => ![...sections.values()].includes(k)));
  for (const [variable, section] of sections) {
    const only = src.match(new RegExp(`\\b${variable}\\.only\\(&\\[([\\s\\S]*?)\\]\\)`));
    assert.ok(only, `${variable}.only(&[...]) not found for [${section}]`);
    for (const key of list(only[1])) keys.add(`${section}.${key}`);
  }
  // A section with a file of its own (config/notify.rs, config/worker.rs)
  // lists its keys in `const KEYS`, and is named after its file.
  for (const section of ["notify", "worker"]) {
    const own = read(`crates/failover-agent/src/config/${section}.rs`).match(/const KEYS: &\[&str\] = &\[([\s\S]*?)\];/);
    assert.ok(own, `const KEYS not found in the agent's config/${section}.rs`);
    keys.delete(section);
    sections.set(section, section);
    for (const key of list(own[1])) keys.add(`${section}.${key}`);
  }
  return { keys, sections: new Set(sections.values()) };
}

// The README's agent reference: the first column of the table under
// "### Agent configuration". A cell may name several keys of one section:
// `connector.start_command`, `stop_command`, `status_command`.
function readmeAgentKeys() {
  const start = readme.search(/^### Agent configuration$/m);
  assert.ok(start >= 0, "README has no '### Agent configuration' section");
  const rest = readme.slice(readme.indexOf("\n", start) + 1);
  const section = rest.slice(0, rest.search(/^#{1,3} /m));
  const keys = new Set();
  for (const m of section.matchAll(/^\| (`[^|]+) \|/gm)) {
    let prefix = "";
    for (const [, name] of m[1].matchAll(/`([a-z_.]+)`/g)) {
      if (name.includes(".")) prefix = name.slice(0, name.indexOf(".") + 1);
      keys.add(name.includes(".") ? name : prefix + name);
    }
  }
  return keys;
}

test("the README's agent reference lists exactly the keys the agent's config accepts", () => {
  const { keys } = agentConfigKeys();
  const documented = readmeAgentKeys();
  assert.ok(keys.size >= 25, `only ${keys.size} agent keys found: is config/mod.rs still read?`);
  const undocumented = [...keys].filter((k) => !documented.has(k));
  assert.deepEqual(undocumented, [], `agent config keys missing from the README's table: ${undocumented.join(", ")}`);
  const unknown = [...documented].filter((k) => !keys.has(k));
  assert.deepEqual(unknown, [], `README's agent table names keys the agent refuses: ${unknown.join(", ")}`);
});

test("every section.key of the agent the README names anywhere is one the agent accepts", () => {
  const { keys, sections } = agentConfigKeys();
  const pattern = new RegExp(`^(?:${[...sections].join("|")})\\.[a-z_]+$`);
  // (A file such as tests/system/connector.mjs is no key.)
  const named = new Set(
    spans.flatMap((span) => span.split(/[\s,=]+/)).filter((w) => pattern.test(w) && !/\.(mjs|js|rs|toml|sh|json)$/.test(w)),
  );
  assert.ok(named.size >= 10, `only ${named.size} section.key names found`);
  const unknown = [...named].filter((k) => !keys.has(k));
  assert.deepEqual(unknown, [], `README names agent keys that do not exist: ${unknown.join(", ")}`);
});
