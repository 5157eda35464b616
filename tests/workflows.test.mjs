// The GitHub workflows follow GitHub's hardening conventions, checked line
// by line (no YAML library; actionlint in `make lint` checks the syntax):
// actions pinned by commit SHA with the release in a comment, least
// privilege for the token, a cargo cache, Dependabot for every ecosystem.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const dir = path.join(root, ".github/workflows");
const workflows = Object.fromEntries(
  readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => [f, readFileSync(path.join(dir, f), "utf8")]),
);

test("every action is pinned by full commit SHA, its release named in a comment, one SHA per action", () => {
  const shas = new Map();
  let count = 0;
  for (const [file, text] of Object.entries(workflows)) {
    for (const m of text.matchAll(/^\s*(?:-\s+)?uses:\s*(.*)$/gm)) {
      const ref = m[1].trim();
      if (ref.startsWith("./")) continue;
      count++;
      const pinned = ref.match(/^([\w.-]+\/[\w./-]+)@([0-9a-f]{40}) # (v\d+(?:\.\d+)*)$/);
      assert.ok(pinned, `${file}: "uses: ${ref}" is not owner/repo@<40-hex SHA> # v<release>`);
      const [, action, sha, tag] = pinned;
      const seen = shas.get(action);
      if (seen) assert.deepEqual([sha, tag], seen, `${file}: ${action} pinned differently elsewhere`);
      shas.set(action, [sha, tag]);
    }
  }
  assert.ok(count >= 5, `only ${count} actions found`);
  const wrangler = shas.get("cloudflare/wrangler-action");
  assert.ok(wrangler, "no cloudflare/wrangler-action in the workflows");
  assert.ok(Number(wrangler[1].slice(1).split(".")[0]) >= 4, `wrangler-action ${wrangler[1]}: v3 runs on the retired Node 20`);
});

test("the token gets least privilege: read-only or nothing by default, write only in a job, with its reason", () => {
  for (const [file, text] of Object.entries(workflows)) {
    const top = text.match(/^permissions:(.*)\n((?:[ \t]+.*\n)*)/m);
    assert.ok(top, `${file}: no top-level permissions:`);
    const scopes = (top[1].trim() + "\n" + top[2]).trim();
    assert.ok(/^(\{\}|contents: read)$/.test(scopes.replace(/\s+/g, " ").trim()), `${file}: top-level permissions "${scopes}"`);
    assert.doesNotMatch(text, /write-all|read-all/, `${file}: blanket permissions`);
    for (const line of text.split("\n").filter((l) => /^\s+[\w-]+: write\b/.test(l))) {
      assert.match(line, /^ {6}[\w-]+: write # \S/, `${file}: "${line.trim()}" is not a job's permission with its reason`);
    }
    // A checkout leaves no token in .git/config for the build's code to read.
    for (const m of text.matchAll(/uses: actions\/checkout@.*\n((?:\s+with:\n)?(?:\s{8,}.*\n)*)/g)) {
      assert.match(m[1], /persist-credentials: false/, `${file}: actions/checkout without persist-credentials: false`);
    }
  }
});

test("ci runs make test with a cargo cache; release builds and attaches every release file with CHANGELOG.md's notes", () => {
  const ci = workflows["ci.yml"];
  assert.match(ci, /run: bash \.ci\/run/);
  assert.match(readFileSync(path.join(root, ".ci/run"), "utf8"), /^make test$/m);
  assert.match(ci, /uses: Swatinem\/rust-cache@/);
  const release = workflows["release.yml"];
  assert.match(release, /run: make release/);
  for (const file of ["failover-agent-*-linux-musl", "failover-agent_*.deb", "tunnel-failover-worker-*.tar.gz", "SHA256SUMS"]) {
    assert.ok(release.includes(`dist/${file}`), `release.yml does not attach dist/${file}`);
  }
  assert.match(release, /--notes-file target\/release-notes\.md/);
  assert.match(readFileSync(path.join(root, "Makefile"), "utf8"), /changelog\.sh notes .*>target\/release-notes\.md/);
});

// A workflow's jobs by name, each its own lines (indented 4 or more).
function jobsOf(text) {
  const jobs = {};
  let name = null;
  for (const line of (text.split(/^jobs:\n/m)[1] ?? "").split("\n")) {
    const job = line.match(/^ {2}([\w-]+):\s*$/);
    if (job) jobs[(name = job[1])] = "";
    else if (name && /^ {4}/.test(line)) jobs[name] += line + "\n";
  }
  return jobs;
}

test("release pushes the agent's image for both architectures, built from the release's binaries by a job that builds no code", () => {
  const jobs = jobsOf(workflows["release.yml"]);
  const image = jobs.image;
  assert.ok(image, "release.yml has no image job");
  assert.match(image, /^ {4}needs: build$/m);
  assert.match(image, /docker buildx build --platform linux\/amd64,linux\/arm64 /);
  assert.match(image, /"dist\/failover-agent-\$version-\$\{pair%%:\*\}-linux-musl"/);
  assert.match(image, /sha256sum --quiet -c SHA256SUMS/);
  assert.match(image, /image=ghcr\.io\//);
  assert.match(image, / --push /);
  // The token that may push never meets cargo, npm or their build scripts.
  assert.doesNotMatch(image, /\b(make|cargo|rustup|npm|npx|node)\b/);
  for (const [file, text] of Object.entries(workflows)) {
    for (const [name, job] of Object.entries(jobsOf(text))) {
      if (file === "release.yml" && name === "image") assert.match(job, /^ {6}packages: write # /m);
      else assert.doesNotMatch(job, /packages: write/, `${file}: job ${name} may write packages`);
    }
  }
  // A release names an image only once it is pushed.
  assert.match(jobs.publish, /^ {4}needs: \[build, image\]$/m);
  // The Dockerfile takes the binary of the platform being built, the
  // context the image job stages.
  const dockerfile = readFileSync(path.join(root, "packaging/docker/Dockerfile"), "utf8");
  assert.match(dockerfile, /^ARG TARGETARCH\nCOPY bin\/\$\{TARGETARCH\}\/failover-agent \/usr\/bin\/failover-agent$/m);
  assert.match(image, /"\$context\/bin\/\$\{pair#\*:\}\/failover-agent"/);
});

test("Dependabot watches cargo, npm and the actions", () => {
  const text = readFileSync(path.join(root, ".github/dependabot.yml"), "utf8");
  assert.match(text, /^version: 2$/m);
  const ecosystems = [...text.matchAll(/package-ecosystem:\s*([\w-]+)/g)].map((m) => m[1]).sort();
  assert.deepEqual(ecosystems, ["cargo", "github-actions", "npm"]);
});
