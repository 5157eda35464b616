// Fills in the @NAME@ placeholders of bench/*.tmpl. Done in Node rather than
// sed because the values (a JSON array inside a capnp string, paths) carry
// quotes, slashes and backslashes. Fails if a placeholder is left over.
//
//   node bench/render.mjs nginx OUT --prefix DIR --port N --docroot DIR
//   node bench/render.mjs workerd OUT --product-dir DIR --anchor-dir DIR \
//        --primary URL --replica URL --serve TARGET=PORT [--serve TARGET=PORT ...] \
//        [--attempt-timeout-ms N] [--health-interval-ms N] [--health-rise N]
//
// TARGET is one of the Workers in workerd.capnp.tmpl, by the name run.sh
// and report.mjs give it (see WORKERS below).

import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { COMPAT_DATE } from "../scripts/compat-date.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

// Bench target name -> the Worker's const in workerd.capnp.tmpl. The target
// name is also the service's and the socket's name.
const WORKERS = {
  product: "product",
  weighted: "productWeighted",
  hash: "productHash",
  affinity: "productAffinity",
  silence_off: "productSilenceOff",
  anchor: "anchor",
  floor_bare: "floorBare",
  floor_work: "floorWork",
};
const [kind, out, ...rest] = process.argv.slice(2);
const { values: opt } = parseArgs({
  args: rest,
  options: {
    prefix: { type: "string" },
    port: { type: "string" },
    docroot: { type: "string" },
    "product-dir": { type: "string" },
    "anchor-dir": { type: "string" },
    primary: { type: "string" },
    replica: { type: "string" },
    serve: { type: "string", multiple: true, default: [] },
    "attempt-timeout-ms": { type: "string", default: "300" },
    "health-interval-ms": { type: "string", default: "1000" },
    "health-rise": { type: "string", default: "2" },
    "compat-date": { type: "string", default: COMPAT_DATE },
  },
});

// A capnp string literal's contents.
const capnp = (s) => String(s).replace(/\\/g, "\\\\").replace(/"/g, '\\"');

function render(template, values) {
  let text = readFileSync(path.join(here, template), "utf8");
  text = text.replace(/@([A-Z_]+)@/g, (m, key) => {
    if (!(key in values)) throw new Error(`${template}: no value for ${m}`);
    return values[key];
  });
  writeFileSync(out, text);
}

if (kind === "nginx") {
  render("nginx.conf.tmpl", { PREFIX: opt.prefix, PORT: opt.port, DOCROOT: opt.docroot });
} else if (kind === "workerd") {
  // embed paths are resolved against the config file's own directory.
  const rel = (dir) => path.relative(path.dirname(path.resolve(out)), path.resolve(dir)) || ".";
  const serve = opt.serve.map((s) => {
    const [name, port] = s.split("=");
    if (!Object.hasOwn(WORKERS, name) || !/^\d+$/.test(port)) throw new Error(`bad --serve ${s}`);
    return { name, port };
  });
  const origins = [
    { name: "primary", url: opt.primary, health_path: "/health" },
    { name: "replica", url: opt.replica, health_path: "/health" },
  ];
  // The product Workers' shared settings; ORIGINS and the steering settings
  // are written per Worker in the template.
  const productBindings = {
    ATTEMPT_TIMEOUT_MS: opt["attempt-timeout-ms"],
    HEALTH_INTERVAL_MS: opt["health-interval-ms"],
    HEALTH_RISE: opt["health-rise"],
    // The status endpoint is configured as in production, and never hit.
    STATUS_TOKEN: "bench-status-token",
    REPLAY_BODY_MAX_BYTES: "1048576",
  };
  render("workerd.capnp.tmpl", {
    SERVICES: serve.map((s) => `(name = "${s.name}", worker = .${WORKERS[s.name]}),`).join("\n    "),
    SOCKETS: serve
      .map((s) => `(name = "${s.name}", address = "127.0.0.1:${s.port}", http = (), service = "${s.name}"),`)
      .join("\n    "),
    PRODUCT_DIR: capnp(rel(opt["product-dir"])),
    ANCHOR_DIR: capnp(rel(opt["anchor-dir"])),
    BENCH_DIR: capnp(rel(here)),
    COMPAT_DATE: capnp(opt["compat-date"]),
    PRODUCT_BINDINGS: Object.entries(productBindings)
      .map(([name, value]) => `(name = "${name}", text = "${capnp(value)}"),`)
      .join("\n    "),
    ORIGINS: capnp(JSON.stringify(origins)),
    WEIGHTED_ORIGINS: capnp(JSON.stringify(origins.map((o) => ({ ...o, weight: 1 })))),
    ATTEMPT_TIMEOUT_MS: capnp(opt["attempt-timeout-ms"]),
    PRIMARY_URL: capnp(opt.primary),
    REPLICA_URL: capnp(opt.replica),
  });
} else {
  console.error("usage: render.mjs nginx|workerd OUT [options]");
  process.exit(2);
}
