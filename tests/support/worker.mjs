// Runs the built Worker (build/index.js, the request path's
// build/index_bg.wasm and the operator module's build/operator_bg.wasm,
// from `make build`) in Miniflare's workerd, in front of real origins.
import { Miniflare } from "miniflare";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { COMPAT_DATE } from "../../scripts/compat-date.mjs";

export { COMPAT_DATE };

const build = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "build");

// `dir`: another build of the Worker (a test build such as panic-test);
// `durableObjects`: its Durable Object bindings (the global checker).
// `outbound`: Miniflare's outboundService, a function that answers every
// fetch the Worker makes (to reach an https host on a loopback origin).
// `ratelimits`: Miniflare's Rate Limiting bindings, by name
// (`{ NAME: { namespace_id, simple: { limit, period } } }`).
// `preamble`: JS run in the Worker's global scope before its first request
// (e.g. a seeded Math.random, so that what a test asserts on random routing
// is the same on every run); the built Worker itself is unchanged.
// The two Wasm modules build/index.js imports, as workerd compiles them.
function wasmModules(dir) {
  return ["index_bg.wasm", "operator_bg.wasm"].map((name) => ({ type: "CompiledWasm", path: path.join(dir, name) }));
}

export async function startWorker(bindings, { dir = build, durableObjects, outbound, preamble, ratelimits } = {}) {
  const logs = [];
  const entry =
    preamble === undefined
      ? [{ type: "ESModule", path: path.join(dir, "index.js") }]
      : [
          {
            type: "ESModule",
            path: path.join(dir, "test-entry.mjs"),
            contents: `export * from "./index.js";\nexport { default } from "./index.js";\n${preamble}\n`,
          },
          { type: "ESModule", path: path.join(dir, "index.js") },
        ];
  const mf = new Miniflare({
    modules: [...entry, ...wasmModules(dir)],
    modulesRoot: dir,
    compatibilityDate: COMPAT_DATE,
    bindings,
    durableObjects,
    ...(outbound === undefined ? {} : { outboundService: outbound }),
    ...(ratelimits === undefined ? {} : { ratelimits }),
    handleRuntimeStdio(stdout, stderr) {
      for (const stream of [stdout, stderr]) {
        stream.setEncoding("utf8");
        stream.on("data", (text) => logs.push(...text.split("\n").filter(Boolean)));
      }
    },
  });
  const url = (await mf.ready).toString().replace(/\/$/, "");
  return {
    mf,
    url,
    logs,
    // JSON log lines the Worker printed, parsed.
    events(kind) {
      return logs
        .map((line) => {
          const at = line.indexOf("{");
          try {
            return at >= 0 ? JSON.parse(line.slice(at)) : null;
          } catch {
            return null;
          }
        })
        .filter((e) => e && (kind === undefined || e.event === kind));
    },
    fetch(p, init) {
      return fetch(url + p, { redirect: "manual", ...init });
    },
    dispose: () => mf.dispose(),
  };
}

export function originsVar(...origins) {
  return JSON.stringify(origins.map((o) => ({ name: o.name, url: o.url, health_path: "/health" })));
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls until fn() is truthy or the deadline passes (generous: CI is noisy).
export async function eventually(fn, { timeoutMs = 10000, everyMs = 50 } = {}) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > until) throw new Error("condition not met in time");
    await sleep(everyMs);
  }
}

// Several Workers in one workerd: each is its own isolate with its own
// health map, and they share one cache, as isolates of one location do.
// `workers` is a list of { name, bindings, durableObjects? }; extra raw
// Miniflare worker definitions (e.g. a failing Durable Object) go in `extra`,
// and Miniflare's shared options (e.g. `durableObjectsPersist`) in `options`.
export async function startIsolates(workers, extra = [], options = {}) {
  const logs = [];
  const mf = new Miniflare({
    ...options,
    workers: [
      ...workers.map((w) => ({
        name: w.name,
        modules: [{ type: "ESModule", path: path.join(build, "index.js") }, ...wasmModules(build)],
        modulesRoot: build,
        compatibilityDate: COMPAT_DATE,
        bindings: w.bindings,
        durableObjects: w.durableObjects,
        routes: [`${w.name}.test/*`],
      })),
      ...extra,
    ],
    handleRuntimeStdio(stdout, stderr) {
      for (const stream of [stdout, stderr]) {
        stream.setEncoding("utf8");
        stream.on("data", (text) => logs.push(...text.split("\n").filter(Boolean)));
      }
    },
  });
  await mf.ready;
  return {
    mf,
    logs,
    // Requests go to the named Worker (its route), all through one workerd.
    fetch(name, p, init) {
      return mf.dispatchFetch(`http://${name}.test${p}`, { redirect: "manual", ...init });
    },
    dispose: () => mf.dispose(),
  };
}
