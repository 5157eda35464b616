#!/usr/bin/env node
// `make lint`: no import cycle between the modules of any crate in the
// workspace. A module is a file (`foo.rs`, or `foo/mod.rs` for a folder);
// module A uses B when A's code names a path into B (`use crate::x::y`,
// `crate::x::y::f()`, `super::y`, `self::y`, or a child declared with
// `mod`'s items through `y::`). Test modules (`#[cfg(test)] mod tests`,
// and files only declared under `#[cfg(test)]`) are left out: a test may
// use anything. Prints each cycle it finds, as a chain of module paths,
// and exits 1; plain Node, no dependencies.
//
//   node scripts/check-cycles.mjs            # every crate of the workspace
//   node scripts/check-cycles.mjs src/lib.rs # one crate root
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const CRATE_ROOTS = ["src/lib.rs", "crates/failover-core/src/lib.rs", "crates/failover-agent/src/lib.rs"];

// Comments and string literals name no module: blank them out first.
function stripCommentsAndStrings(text) {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, " ")
    .replace(/\/\/[^\n]*/g, "")
    .replace(/r#*"[\s\S]*?"#*/g, '""')
    .replace(/"(?:\\.|[^"\\])*"/g, '""')
    .replace(/'(?:\\.|[^'\\])'/g, "' '");
}

// The part of a file that is not its test module.
function withoutTests(text) {
  const at = text.search(/#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s*)?mod\s+\w+\s*\{/);
  return at < 0 ? text : text.slice(0, at);
}

// Loads a crate: module path ("" for the root) -> { file, code, children }.
function loadCrate(rootFile) {
  const modules = new Map();
  const visit = (modPath, file, dir) => {
    const code = withoutTests(stripCommentsAndStrings(readFileSync(file, "utf8")));
    const children = [];
    // `mod x;` declarations, skipping test-only ones.
    for (const m of code.matchAll(/(#\[cfg\(test\)\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;/g)) {
      if (m[1]) continue;
      children.push(m[2]);
    }
    modules.set(modPath, { file, code, children });
    for (const child of children) {
      const flat = path.join(dir, `${child}.rs`);
      const folder = path.join(dir, child, "mod.rs");
      const childFile = existsSync(flat) ? flat : folder;
      if (!existsSync(childFile)) throw new Error(`${file}: mod ${child} has no file`);
      visit(modPath ? `${modPath}::${child}` : child, childFile, path.join(dir, child));
    }
  };
  visit("", path.join(ROOT, rootFile), path.dirname(path.join(ROOT, rootFile)));
  return modules;
}

// The deepest module a path names (crate-absolute segments), or undefined.
function resolve(modules, segments) {
  for (let n = segments.length; n >= 1; n--) {
    const candidate = segments.slice(0, n).join("::");
    if (modules.has(candidate)) return candidate;
  }
  return undefined;
}

// Every module each module uses.
function edges(modules) {
  const out = new Map();
  for (const [modPath, { code, children }] of modules) {
    const uses = new Set();
    const here = modPath ? modPath.split("::") : [];
    const add = (segments) => {
      const target = resolve(modules, segments);
      if (target !== undefined && target !== modPath && !modPath.startsWith(`${target}::`)) uses.add(target);
      // A child naming its ancestor's own items is a use of the ancestor.
      if (target !== undefined && modPath.startsWith(`${target}::`) && segments.length > target.split("::").length) {
        const next = segments[target.split("::").length];
        if (!modules.has(`${target}::${next}`)) uses.add(target);
      }
    };
    // Paths, including the groups of `use a::{b, c::d}` (one level deep).
    for (const m of code.matchAll(/\b(crate|super|self)((?:::\w+)+)(::\{([^}]*)\})?/g)) {
      let base;
      if (m[1] === "crate") base = [];
      else if (m[1] === "self") base = here;
      else base = here.slice(0, -1);
      let rest = m[2].split("::").filter(Boolean);
      while (rest[0] === "super") {
        base = base.slice(0, -1);
        rest = rest.slice(1);
      }
      const prefix = [...base, ...rest];
      add(prefix);
      if (m[4] !== undefined) {
        for (const item of m[4].split(",")) {
          const segs = item.trim().split(/\s+as\s+/)[0].split("::").filter((s) => s && s !== "self");
          if (segs.length > 0) add([...prefix, ...segs]);
        }
      }
    }
    // A parent naming its own child (`pub use child::X`, `child::f()`).
    for (const child of children) {
      if (new RegExp(`(^|[^:\\w])${child}::`).test(code)) uses.add(modPath ? `${modPath}::${child}` : child);
    }
    out.set(modPath, uses);
  }
  return out;
}

// Strongly connected components with more than one module (Tarjan).
function cycles(graph) {
  let index = 0;
  const stack = [];
  const info = new Map();
  const found = [];
  const strong = (v) => {
    info.set(v, { index, low: index, onStack: true });
    index++;
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!info.has(w)) {
        strong(w);
        info.get(v).low = Math.min(info.get(v).low, info.get(w).low);
      } else if (info.get(w).onStack) {
        info.get(v).low = Math.min(info.get(v).low, info.get(w).index);
      }
    }
    if (info.get(v).low === info.get(v).index) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        info.get(w).onStack = false;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component);
    }
  };
  for (const v of graph.keys()) if (!info.has(v)) strong(v);
  return found;
}

// One concrete loop through a component, for the message.
function loopThrough(graph, component) {
  const inside = new Set(component);
  const start = component[0];
  const prev = new Map([[start, null]]);
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift();
    for (const w of graph.get(v) ?? []) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const chain = [v];
        for (let p = prev.get(v); p !== null; p = prev.get(p)) chain.unshift(p);
        return [...chain, start];
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return component;
}

const roots = process.argv.length > 2 ? process.argv.slice(2) : CRATE_ROOTS;
let failed = false;
for (const root of roots) {
  const modules = loadCrate(root);
  const graph = edges(modules);
  for (const component of cycles(graph)) {
    failed = true;
    const name = (m) => m || "(crate root)";
    console.error(`import cycle in ${root}: ${loopThrough(graph, component).map(name).join(" -> ")}`);
  }
}
if (failed) {
  console.error("check-cycles: a module may use only modules that do not use it back; move the shared part into a module of its own");
  process.exit(1);
}
console.log(`check-cycles: no import cycle in ${roots.join(", ")}`);
