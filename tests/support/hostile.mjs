// Request paths that try to steer a proxy to another host. The listed ones
// live in tests/fixtures/fast-path.json ("hostile"), which the Rust tests
// read too (crates/failover-core/tests/fast_path_fixture.rs); here they are
// sent raw through the whole Worker (forwarding.test.mjs) and into the fast
// path's URL join on its own (lease.test.mjs). The random ones come from
// `randomPaths`, which made the fixture's "join_corpus":
//
//   node tests/support/hostile.mjs   # prints join_corpus.paths afresh
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

export const FAST_PATH = JSON.parse(readFileSync(new URL("../fixtures/fast-path.json", import.meta.url), "utf8"));

export const HOSTILE_PATHS = FAST_PATH.hostile.cases.map((c) => c.target);

// mulberry32: a seeded generator, so a corpus is the same on every machine.
export function seeded(seed) {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Random request paths: "/" and up to 24 characters from an alphabet of
// URL delimiters, escapes and characters the runtime re-encodes.
const ALPHABET = "/\\?#@:.%2Fe-vil_~!$&'()*+,;=[] \t\u00e9";
export function randomPath(next) {
  let path = "/";
  const n = Math.floor(next() * 25);
  for (let k = 0; k < n; k++) path += ALPHABET[Math.floor(next() * ALPHABET.length)];
  return path;
}

// What follows the request origin in request.url once the runtime has
// parsed an origin-form request target (always a path, even
// "//evil.example/x"). Node and workerd share a URL parser (ada).
export function servedPath(requestOrigin, target) {
  const href = new URL(`${requestOrigin}${target}`).href;
  if (!href.startsWith(`${requestOrigin}/`)) throw new Error(`${target} changed the host: ${href}`);
  return href.slice(requestOrigin.length);
}

// The corpus as join_corpus describes it: `count` random paths from `seed`,
// as the runtime serializes them.
export function corpusPaths({ request_origin, seed, count }) {
  const next = seeded(seed);
  const paths = [];
  while (paths.length < count) paths.push(servedPath(request_origin, randomPath(next)));
  return paths;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const lines = corpusPaths(FAST_PATH.join_corpus).map((p) => `      ${JSON.stringify(p)}`);
  console.log(`    "paths": [\n${lines.join(",\n")}\n    ]`);
}
