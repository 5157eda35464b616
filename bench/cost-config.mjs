// The Workers `make bench-cost` counts, one row each, and the workerd config
// of one of them (bench/cost-workerd.capnp.tmpl). cost.sh asks for the list,
// then for one config per row; cost-report.mjs imports ROWS for the labels.
//
//   node bench/cost-config.mjs list [--anchor-dir DIR]   (ids, one a line; no
//        anchor rows when DIR/worker.mjs is absent)
//   node bench/cost-config.mjs workerd OUT --row ID --port N --cache ADDR \
//        --product-dir DIR --anchor-dir DIR --primary URL --replica URL
//   node bench/cost-config.mjs client-args --row ID   (the row's own
//        arguments for bench/cost-client.mjs, one a line; none for most)

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = path.dirname(fileURLToPath(import.meta.url));

// The product with each steering policy, colo health on (its default) and
// off; the JavaScript anchor; the two floors of `make bench`
// (bench/floor-*.mjs). `product`: the settings that differ from the
// failover row (ORIGINS "weighted" gives both origins weight 1, as in
// bench/workerd.capnp.tmpl).
const POLICIES = [
  { id: "failover", label: "failover", settings: { STEERING: "failover" } },
  { id: "weighted", label: "weighted", settings: { STEERING: "weighted" }, origins: "weighted" },
  { id: "hash", label: "hash", settings: { STEERING: "hash", HASH_KEY: "header:x-user" }, origins: "weighted" },
  { id: "affinity", label: "AFFINITY=cookie", settings: { STEERING: "failover", AFFINITY: "cookie" } },
];
export const ROWS = [
  ...POLICIES.flatMap((p) => [
    { ...p, kind: "product" },
    {
      ...p,
      id: `${p.id}-colo-off`,
      label: `${p.label}, COLO_HEALTH=off`,
      kind: "product",
      settings: { ...p.settings, COLO_HEALTH: "off" },
    },
  ]),
  // Every request carries an app's own Authorization (an API client, a
  // WebDAV mount): while STATUS_TOKEN is set the fast path compares it
  // with the Worker's own tokens (src/js/credentials.mjs) and forwards it.
  // The failover row's requests carry none.
  {
    id: "failover-authorization",
    label: "failover, each GET with an app's Authorization",
    kind: "product",
    settings: { STEERING: "failover" },
    client: ["--authorization", "Bearer an-apps-own-api-token-0123456789"],
  },
  // SITES with 3 and 50 sites, each with the two origins (`sites`); the
  // client spreads its requests over the sites' hosts (s<i>.example). The
  // host lookup must not grow with the number of sites.
  ...[3, 50].map((n) => ({
    id: `sites-${n}`,
    label: `failover, SITES: ${n} sites`,
    kind: "product",
    settings: { STEERING: "failover" },
    sites: n,
    client: ["--sites", String(n)],
  })),
  { id: "anchor", label: "JS anchor", kind: "anchor" },
  { id: "floor-bare", label: "floor 1: bare pass-through", kind: "floor", module: "floor-bare.mjs" },
  { id: "floor-work", label: "floor 2: + timer + X-Served-By", kind: "floor", module: "floor-work.mjs" },
];

// callgrind runs a request ~30x slower, and an isolate's first requests
// under it take seconds: at the default 6000 ms a slow first answer could
// fail a healthy primary over, and the row would count a failed-over
// Worker. The timer's length costs nothing; only its setting and clearing
// do, whatever its length.
export const ATTEMPT_TIMEOUT_MS = "30000";

const capnp = (s) => String(s).replace(/\\/g, "\\\\").replace(/"/g, '\\"');
const binding = ([name, value]) => `(name = "${name}", text = "${capnp(value)}"),`;

function config(row, opt) {
  const rel = (file) => capnp(path.relative(path.dirname(path.resolve(opt.out)), path.resolve(file)));
  const origins = [
    { name: "primary", url: opt.primary, health_path: "/health" },
    { name: "replica", url: opt.replica, health_path: "/health" },
  ];
  let modules;
  let bindings;
  if (row.kind === "product") {
    // build/index.js imports "./index_bg.wasm" and "./operator_bg.wasm":
    // each module carries that name.
    modules = [
      `(name = "index.js", esModule = embed "${rel(`${opt["product-dir"]}/index.js`)}"),`,
      `(name = "index_bg.wasm", wasm = embed "${rel(`${opt["product-dir"]}/index_bg.wasm`)}"),`,
      `(name = "operator_bg.wasm", wasm = embed "${rel(`${opt["product-dir"]}/operator_bg.wasm`)}"),`,
    ];
    const list = row.origins === "weighted" ? origins.map((o) => ({ ...o, weight: 1 })) : origins;
    // The last site is also the default (`*`): cost.sh's readiness check
    // asks for 127.0.0.1, which no named host claims.
    const sites = Array.from({ length: row.sites ?? 0 }, (_, i) => ({
      name: `s${i}`,
      hosts: i === row.sites - 1 ? [`s${i}.example`, "*"] : [`s${i}.example`],
      origins: list.map((o) => ({ ...o, name: `s${i}-${o.name}` })),
    }));
    bindings = {
      ...(row.sites === undefined ? { ORIGINS: JSON.stringify(list) } : { SITES: JSON.stringify(sites) }),
      ATTEMPT_TIMEOUT_MS,
      // Configured as in production (and as `make bench` does), never hit.
      STATUS_TOKEN: "bench-status-token",
      ...row.settings,
    };
  } else if (row.kind === "anchor") {
    modules = [`(name = "worker.mjs", esModule = embed "${rel(`${opt["anchor-dir"]}/worker.mjs`)}"),`];
    bindings = { PRIMARY_URL: opt.primary, REPLICA_URL: opt.replica };
  } else {
    modules = [`(name = "${row.module}", esModule = embed "${rel(path.join(here, row.module))}"),`];
    bindings = { ORIGIN: opt.primary, ORIGIN_NAME: "primary", ATTEMPT_TIMEOUT_MS };
  }
  const values = {
    PORT: opt.port,
    CACHE_ADDRESS: capnp(opt.cache),
    COMPAT_DATE: "2026-08-01",
    MODULES: modules.join("\n    "),
    BINDINGS: Object.entries(bindings).map(binding).join("\n    "),
  };
  return readFileSync(path.join(here, "cost-workerd.capnp.tmpl"), "utf8").replace(/@([A-Z_]+)@/g, (m, key) => {
    if (!(key in values)) throw new Error(`cost-workerd.capnp.tmpl: no value for ${m}`);
    return values[key];
  });
}

// Only when run as a script: cost-report.mjs imports ROWS.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command, out, ...rest] = process.argv.slice(2);
  const args = command === "list" || command === "client-args" ? [out, ...rest].filter((a) => a !== undefined) : rest;
  const { values: opt } = parseArgs({
    args,
    options: {
      row: { type: "string" },
      port: { type: "string" },
      cache: { type: "string" },
      "product-dir": { type: "string" },
      "anchor-dir": { type: "string" },
      primary: { type: "string" },
      replica: { type: "string" },
    },
  });
  if (command === "list") {
    const anchor = opt["anchor-dir"] && existsSync(path.join(opt["anchor-dir"], "worker.mjs"));
    for (const row of ROWS) if (row.kind !== "anchor" || anchor) console.log(row.id);
  } else if (command === "client-args") {
    const row = ROWS.find((r) => r.id === opt.row);
    if (!row) throw new Error(`no row ${opt.row}; rows: ${ROWS.map((r) => r.id).join(", ")}`);
    for (const arg of row.client ?? []) console.log(arg);
  } else if (command === "workerd" && out) {
    const row = ROWS.find((r) => r.id === opt.row);
    if (!row) throw new Error(`no row ${opt.row}; rows: ${ROWS.map((r) => r.id).join(", ")}`);
    writeFileSync(out, config(row, { ...opt, out }));
  } else {
    console.error("usage: cost-config.mjs list [--anchor-dir DIR] | workerd OUT --row ID --port N --cache ADDR ...");
    process.exit(2);
  }
}
