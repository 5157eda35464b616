#!/usr/bin/env node
// Override an origin at runtime, from a terminal (the admin API; README
// "Overrides"):
//
//   node scripts/origin.mjs https://www.example.com home drain --for 30m --drain 5m
//   node scripts/origin.mjs https://www.example.com home auto
//   node scripts/origin.mjs https://www.example.com             (lists every origin's override)
//
// `make origin URL=... NAME=... MODE=... [FOR=30m] [DRAIN=5m]` runs this.
// The token is ADMIN_TOKEN from the environment, or the file ADMIN_TOKEN_FILE
// (or --token-file) names, readable by its owner only, as the node agent's
// admin_token_file; listing also takes STATUS_TOKEN. The URL is the site (a
// bare host means the default STATUS_PATH) or the status URL, as for
// scripts/status.mjs; its path must be the Worker's STATUS_PATH exactly
// (the Worker's grammar: no "." or ".." segment, "//", trailing "/", "%" or
// space), checked as typed, before anything is sent. Only an answer with
// the Worker's mark (x-tunnel-failover: admin, and no x-served-by: the
// Worker proxied it from an origin) is the admin API's. Prints one line
// per origin; exits 1 with one line on stderr when the Worker refuses (400
// names the field, 401 the token), something else answers, or nothing
// can be reached, 2 on a usage error. Plain Node 20+, no dependencies.
import { readFileSync, statSync } from "node:fs";
import { pathToFileURL } from "node:url";
import process from "node:process";
import { printable, statusUrl } from "./status.mjs";

const TIMEOUT_MS = 10_000;
// Answers are a few hundred bytes; a proxied path could be anything.
const MAX_BODY_BYTES = 64 * 1024;
// A token file is a line; anything longer is not one.
const MAX_TOKEN_FILE_BYTES = 4096;
export const MODES = ["drain", "disable", "force-up", "auto"];
// The Worker's bounds (crates/failover-core/src/edge/overrides/request.rs).
export const MAX_FOR_S = 30 * 86_400;
export const MAX_DRAIN_S = 86_400;

class Usage extends Error {}

// What the Worker marks its admin API's answers with (x-tunnel-failover;
// failover_core::edge::overrides::api::ANSWERED_BY_HEADER and _ADMIN),
// its refusals included.
const ADMIN_MARK = "admin";

// The Worker's STATUS_PATH grammar, the twin of
// crates/failover-core/src/edge/status_path.rs, held to the same rows
// (tests/fixtures/status-path.json): a path the runtime would rewrite is
// never the Worker's, and the token would go to whatever answers there.
// Why not, or null when the path is good.
export function checkStatusPath(path) {
  if (!path.startsWith("/")) return "must be a path starting with '/'";
  const rest = path.slice(1);
  if (rest === "") return "must be a path other than '/' itself";
  for (const segment of rest.split("/")) {
    if (segment === "") return `has an empty segment ("//" or a trailing '/'); write it without`;
    if (segment === "." || segment === "..") return "has a '.' or '..' segment, which the runtime resolves away";
    if (!/^[A-Za-z0-9\-._~!$&'()*+,;=:@]+$/.test(segment)) {
      return "may hold only letters, digits and -._~!$&'()*+,;=:@ between slashes (no space, '%', '?', '#' or non-ASCII letter)";
    }
  }
  return null;
}

// The status URL, its path checked as typed: `new URL` resolves "." and
// "..", "%2e" and backslashes and encodes spaces, so the parsed path can
// look clean where the typed one was not.
export function adminStatusUrl(text) {
  const url = statusUrl(text);
  const typed = /^\s*[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#\\]*([^?#]*)/.exec(String(text))?.[1].trimEnd() ?? "";
  if (typed === "" || typed === "/") return url;
  const why = checkStatusPath(typed);
  if (why !== null || url.pathname !== typed) {
    throw new Usage(`the URL's path ${JSON.stringify(typed)} ${why ?? "is not as typed once parsed"}; give the site (https://host) or its status URL with the Worker's STATUS_PATH exactly`);
  }
  return url;
}

const UNITS = { d: 86_400, h: 3_600, m: 60, s: 1 };

// "30m", "1h30m", "2d", "90s", or a bare number of seconds, to whole
// seconds: units largest first, each once (as the agent's durations).
export function seconds(text, what, { min, max }) {
  const t = String(text).trim();
  let total;
  if (/^\d+$/.test(t)) {
    total = Number(t);
  } else {
    const m = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(t);
    if (t === "" || m === null) throw new Usage(`${what} ${JSON.stringify(text)} is not a duration; expected e.g. 30m, 1h30m, 2d or a number of seconds`);
    total = ["d", "h", "m", "s"].reduce((sum, unit, i) => sum + Number(m[i + 1] ?? 0) * UNITS[unit], 0);
  }
  if (!Number.isSafeInteger(total) || total < min || total > max) throw new Usage(`${what} ${JSON.stringify(text)} is out of range; expected ${min} s to ${max / 86_400} days`);
  return total;
}

// A token from a file: owner-only, one line, not empty.
export function tokenFromFile(file) {
  let st;
  try {
    st = statSync(file);
  } catch (e) {
    throw new Usage(`cannot read the token file ${file}: ${e.code ?? e.message}`);
  }
  if (!st.isFile()) throw new Usage(`the token file ${file} is not a file`);
  if ((st.mode & 0o077) !== 0) throw new Usage(`the token file ${file} is readable by others (mode ${(st.mode & 0o777).toString(8)}); chmod 600 it`);
  if (st.size > MAX_TOKEN_FILE_BYTES) throw new Usage(`the token file ${file} is over ${MAX_TOKEN_FILE_BYTES} bytes: not a token`);
  const token = readFileSync(file, "utf8").trim();
  if (token === "" || /\s/.test(token)) throw new Usage(`the token file ${file} must hold the token alone, on one line`);
  return token;
}

export const USAGE = `usage: node scripts/origin.mjs URL [NAME MODE [--node] [--for DURATION] [--drain DURATION]] [--token-file FILE]
  URL     the site, e.g. https://www.example.com (or its status URL)
  NAME    an origin's name from ORIGINS or SITES; without NAME MODE: list every origin's override
  --node  NAME is a node: the change goes to every origin whose node it is, in every site
  MODE    drain    no new requests; those pinned to it (AFFINITY) for --drain, then none
          disable  used only when every other origin is down
          force-up served regardless of health
          auto     health decides again
  --for   back to auto after this long (e.g. 30m, 2h, 1d; at most 30 days); default: until changed
  --drain drain only: how long pinned requests keep going (e.g. 5m; default 5m)
  token   ADMIN_TOKEN, or the file in ADMIN_TOKEN_FILE or --token-file (chmod 600);
          listing also takes STATUS_TOKEN`;

export function parseArgs(argv, env) {
  const positional = [];
  let forText;
  let drainText;
  let tokenFile = env.ADMIN_TOKEN_FILE;
  let node = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = (name) => {
      if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1);
      if (i + 1 >= argv.length) throw new Usage(`${name} needs a value`);
      return argv[++i];
    };
    if (arg === "-h" || arg === "--help") return { help: true };
    else if (arg === "--node") node = true;
    else if (arg === "--for" || arg.startsWith("--for=")) forText = value("--for");
    else if (arg === "--drain" || arg.startsWith("--drain=")) drainText = value("--drain");
    else if (arg === "--token-file" || arg.startsWith("--token-file=")) tokenFile = value("--token-file");
    else if (arg.startsWith("-")) throw new Usage(`unknown option ${arg}`);
    else positional.push(arg);
  }
  if (positional.length === 0) throw new Usage("no URL given");
  if (positional.length === 2) throw new Usage(`no MODE for ${JSON.stringify(positional[1])}; expected one of ${MODES.join(", ")}`);
  if (positional.length > 3) throw new Usage(`unexpected argument ${JSON.stringify(positional[3])}`);
  let url;
  try {
    url = adminStatusUrl(positional[0]);
  } catch (e) {
    throw e instanceof Usage ? e : new Usage(e.message);
  }
  const listing = positional.length === 1;
  let token = env.ADMIN_TOKEN?.trim() || (tokenFile ? tokenFromFile(tokenFile) : undefined);
  if (!token && listing) token = env.STATUS_TOKEN?.trim();
  if (!token) throw new Usage(`no token: set ADMIN_TOKEN or ADMIN_TOKEN_FILE${listing ? " (or STATUS_TOKEN to list)" : ""}`);
  if (listing) {
    if (forText !== undefined || drainText !== undefined || node) throw new Usage("--for, --drain and --node go with NAME MODE");
    return { url: new URL(`${url.pathname.replace(/\/$/, "")}/origins`, url), token };
  }
  const [, name, mode] = positional;
  if (!/^[A-Za-z0-9._-]+$/.test(name) || name === "." || name === "..") throw new Usage(`${JSON.stringify(name)} is not ${node ? "a node" : "an origin"} name (letters, digits, - _ .)`);
  if (!MODES.includes(mode)) throw new Usage(`unknown MODE ${JSON.stringify(mode)}; expected one of ${MODES.join(", ")}`);
  if (drainText !== undefined && mode !== "drain") throw new Usage("--drain goes with MODE drain");
  if (forText !== undefined && mode === "auto") throw new Usage("--for does not go with MODE auto: auto is what an override returns to");
  const body = { mode };
  if (forText !== undefined) body.ttl_s = seconds(forText, "--for", { min: 1, max: MAX_FOR_S });
  if (drainText !== undefined) body.drain_s = seconds(drainText, "--drain", { min: 0, max: MAX_DRAIN_S });
  const under = node ? "nodes" : "origins";
  return { url: new URL(`${url.pathname.replace(/\/$/, "")}/${under}/${name}`, url), token, body, node };
}

// What errors print: never the token, never userinfo.
function shown(url) {
  return `${url.origin}${url.pathname}`;
}

async function readBounded(res) {
  const chunks = [];
  let size = 0;
  if (res.body) {
    for await (const chunk of res.body) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) throw new Error(`the answer is over ${MAX_BODY_BYTES} bytes, not the admin API's`);
      chunks.push(chunk);
    }
  }
  return Buffer.concat(chunks).toString("utf8");
}

export async function call({ url, token, body }) {
  let res;
  try {
    res = await fetch(url, {
      method: body === undefined ? "GET" : "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: "manual",
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (e) {
    const why = e?.name === "TimeoutError" ? `no answer within ${TIMEOUT_MS / 1000} s` : (e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(e));
    throw new Error(`cannot reach ${shown(url)}: ${why}`);
  }
  const proxied = res.headers.has("x-served-by");
  if (res.headers.get("x-tunnel-failover") !== ADMIN_MARK || proxied) {
    await res.body?.cancel();
    const how = proxied ? "from an origin behind the Worker (x-served-by)" : "without the Worker's x-tunnel-failover: admin header";
    throw new Error(
      `${shown(url)} answered ${res.status} ${how}: not the Worker's admin API (the URL's path is not the Worker's STATUS_PATH, the URL is not the Worker's site, or the Worker is older than this script); nothing was changed`,
    );
  }
  const text = await readBounded(res);
  let doc;
  try {
    doc = JSON.parse(text);
  } catch {
    doc = undefined;
  }
  if (res.status === 400 && typeof doc?.error === "string") throw new Error(`refused: ${doc.error}`);
  if (res.status === 401) throw new Error(`${shown(url)} refused the token (401): check ADMIN_TOKEN`);
  if (res.status === 404) throw new Error(`${shown(url)} answered 404 from the Worker: no admin API there; set its ADMIN_TOKEN (make secret NAME=ADMIN_TOKEN)`);
  if (res.status !== 200 || doc === undefined || typeof doc !== "object") {
    const line = text.split("\n", 1)[0].slice(0, 200);
    throw new Error(`${shown(url)} answered ${res.status}${line ? `: ${line}` : ""}`);
  }
  return doc;
}

// One origin's override in one line.
export function describe(name, o) {
  if (o.mode === "auto") return `${name}: auto${o.set_at ? ` since ${o.set_at}` : ""} (health decides)`;
  const parts = [`${name}: ${o.mode} since ${o.set_at}`];
  parts.push(o.expires_at ? `until ${o.expires_at}` : "until changed");
  if (o.mode === "drain") parts.push(`pinned requests for ${o.drain_s} s`);
  parts.push(o.in_effect ? "in effect" : `in effect at ${o.in_effect_at}`);
  const line = parts.join(", ");
  return o.mode === "force-up" ? `${line}\n  WARNING: ${name} is served regardless of health` : line;
}

export function render(doc, name) {
  if (typeof doc.node === "string" && typeof doc.origins === "object" && doc.origins !== null) {
    // A node's change: each of its origins' overrides.
    return Object.entries(doc.origins)
      .map(([n, o]) => describe(n, o))
      .join("\n");
  }
  if (name !== undefined) return describe(name, doc);
  if (typeof doc.overrides !== "object" || doc.overrides === null) throw new Error("not the admin API's answer");
  return Object.entries(doc.overrides)
    .map(([n, o]) => describe(n, o))
    .join("\n");
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2), process.env);
  } catch (e) {
    process.stderr.write(`origin.mjs: ${e.message}\n${e instanceof Usage ? USAGE : ""}\n`);
    process.exitCode = 2;
    return;
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  try {
    const doc = await call(args);
    process.stdout.write(`${printable(render(doc, args.body === undefined ? undefined : doc.origin))}\n`);
  } catch (e) {
    process.stderr.write(`origin.mjs: ${printable(e.message)}\n`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
