#!/usr/bin/env node
// The Worker's status endpoint, read in a terminal:
//
//   node scripts/status.mjs https://www.example.com/__failover/status   (token from STATUS_TOKEN)
//   node scripts/status.mjs https://www.example.com --token "$TOKEN"   (a bare host means the default STATUS_PATH)
//
// Fetches the JSON and prints the table the status page shows in a browser
// (crates/failover-core/src/edge/report/page.rs): the same columns, cells and time
// formats, which tests/status.test.mjs checks cell by cell. Exits 1 with one
// line on stderr when the answer is not a status document (401, an error,
// a network failure, anything but JSON), 2 on a usage error. Plain Node 20+,
// no dependencies.
import { pathToFileURL } from "node:url";
import process from "node:process";

export const DEFAULT_STATUS_PATH = "/__failover/status";
const TIMEOUT_MS = 10_000;
// Answers are a few KB; a proxied path could be anything.
const MAX_BODY_BYTES = 1024 * 1024;

export const COLUMNS = ["Origin", "State", "Since", "Last error", "Colo view", "Global view"];

// edge/report/page.rs::table: { nowMs, about, rows (cells of lines), settings }.
export function statusTable(doc) {
  const now = ms(doc?.now_ms);
  const rise = ms(doc?.health_rise);
  const rows = (Array.isArray(doc?.origins) ? doc.origins : []).map((origin) => row(origin, now, rise));
  const about = [`version ${text(doc?.version)}, revision ${text(doc?.revision)}`, `as of ${now === undefined ? "?" : utc(now)}`];
  const settings = [];
  for (const [what, key] of [
    ["attempt timeout", "attempt_timeout_ms"],
    ["probe interval while down", "health_interval_ms"],
  ]) {
    const value = ms(doc?.[key]);
    if (value !== undefined) settings.push([what, duration(value)]);
  }
  if (rise !== undefined) settings.push(["good probes to come back up", String(rise)]);
  return { nowMs: now, about, rows, settings };
}

function row(origin, now, rise) {
  const state = text(origin?.state);
  const stateCell = [state, `decided by ${text(origin?.local?.decided_by)}`];
  if (state === "down") {
    const good = ms(origin?.good_streak);
    const g = good === undefined ? "?" : String(good);
    stateCell.push(rise === undefined ? `${g} good probes` : `${g} of ${rise} good probes`);
  }
  const changed = origin?.last_change_ms;
  const since = changed == null ? ["isolate start"] : [ago(now, ms(changed)), at(ms(changed))];
  const lastError = origin?.last_error == null ? "none" : text(origin?.last_error);
  return [[text(origin?.name)], stateCell, since, [lastError], sharedView(origin?.colo, now), sharedView(origin?.global, now)];
}

function sharedView(view, now) {
  if (view == null) return ["not read"];
  const since = ms(view?.since_ms);
  return [text(view?.state), `since ${ago(now, since)}`, at(since), `confirmed ${ago(now, ms(view?.confirmed_ms))}`];
}

// serde_json's as_str / as_u64: anything else reads "?". A missing key
// counts as null (`== null`), as serde's doc["key"] gives Null for one.
function text(value) {
  return typeof value === "string" ? value : "?";
}

function ms(value) {
  return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

export function ago(now, then) {
  if (now === undefined || then === undefined) return "?";
  const future = then > now;
  const gap = future ? then - now : now - then;
  if (gap < 1000) return "just now";
  return future ? `in ${span(gap)}` : `${span(gap)} ago`;
}

function span(gap) {
  const s = Math.floor(gap / 1000);
  const m = Math.floor(s / 60);
  const h = Math.floor(s / 3600);
  const d = Math.floor(s / 86400);
  if (m === 0) return `${s}s`;
  if (h === 0) return `${m}m ${s % 60}s`;
  if (d === 0) return `${h}h ${m % 60}m`;
  return `${d}d ${h % 24}h`;
}

function duration(value) {
  return value >= 1000 && value % 1000 === 0 ? `${value / 1000} s` : `${value} ms`;
}

// 9999-12-31T23:59:59.999Z: past it toISOString changes format.
const LAST_MS = 253402300799999;

export function utc(value) {
  if (value === undefined || value > LAST_MS) return "?";
  const iso = new Date(value).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

function at(value) {
  return value === undefined ? "?" : utc(value);
}

// Names and errors come from config and runtime: a control character (an
// escape sequence) must not reach the terminal.
function printable(line) {
  return line.replace(/[\u0000-\u001f\u007f-\u009f]/g, "?");
}

// The table as aligned plain text: a cell's lines stack under each other,
// and a blank line separates the origins.
export function renderText(table) {
  const grid = [COLUMNS.map((c) => [c.toUpperCase()]), ...table.rows].map((cells) =>
    cells.map((cell) => cell.map(printable)),
  );
  const widths = COLUMNS.map((_, i) => Math.max(...grid.map((cells) => Math.max(0, ...(cells[i] ?? []).map((l) => l.length)))));
  const out = ["tunnel-failover status", ...table.about.map(printable), ""];
  grid.forEach((cells, r) => {
    if (r > 1) out.push("");
    const height = Math.max(...cells.map((c) => c.length));
    for (let l = 0; l < height; l++) {
      out.push(
        COLUMNS.map((_, i) => (cells[i]?.[l] ?? "").padEnd(widths[i]))
          .join("  ")
          .trimEnd(),
      );
    }
  });
  if (table.settings.length > 0) {
    const width = Math.max(...table.settings.map(([what]) => what.length));
    out.push("", "settings");
    for (const [what, value] of table.settings) out.push(`  ${what.padEnd(width)}  ${printable(value)}`);
  }
  return out.join("\n") + "\n";
}

class Refused extends Error {}

// The status URL, with the token in a header only; a bare host gets the
// default path.
export function statusUrl(text) {
  let url;
  try {
    url = new URL(text);
  } catch {
    throw new Refused(`${JSON.stringify(text)} is not a URL; expected https://host/__failover/status`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new Refused(`${url.protocol} URLs are not supported; use https://`);
  if (url.pathname === "/") url.pathname = DEFAULT_STATUS_PATH;
  return url;
}

// What errors print: never the token, never userinfo.
function shown(url) {
  return `${url.origin}${url.pathname}`;
}

export async function fetchStatus(url, token) {
  let res;
  try {
    res = await fetch(url, {
      headers: { accept: "application/json", authorization: `Bearer ${token}` },
      redirect: "manual",
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (e) {
    const cause = e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(e);
    const why = e?.name === "TimeoutError" ? `no answer within ${TIMEOUT_MS / 1000} s` : cause;
    throw new Error(`cannot reach ${shown(url)}: ${why}`);
  }
  const body = await readBounded(res);
  if (res.status === 401) throw new Error(`${shown(url)} refused the token (401): check STATUS_TOKEN`);
  if (res.status !== 200) throw new Error(`${shown(url)} answered ${res.status}, not the status document`);
  let doc;
  try {
    doc = JSON.parse(body);
  } catch {
    const type = res.headers.get("content-type") ?? "no content-type";
    throw new Error(`${shown(url)} did not answer JSON (${type}): is this the Worker's STATUS_PATH?`);
  }
  // Without STATUS_TOKEN on the Worker the path is proxied: an origin's
  // JSON is not ours.
  if (!Array.isArray(doc?.origins)) {
    throw new Error(`${shown(url)} answered JSON that is not a status document: is STATUS_TOKEN set on the Worker?`);
  }
  return doc;
}

async function readBounded(res) {
  if (!res.body) return "";
  const chunks = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      throw new Error(`the answer is over ${MAX_BODY_BYTES} bytes, not a status document`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

const USAGE = `usage: node scripts/status.mjs URL [--token TOKEN]
  URL     the Worker's status endpoint, e.g. https://www.example.com/__failover/status
          (a bare https://www.example.com means ${DEFAULT_STATUS_PATH})
  TOKEN   its STATUS_TOKEN; default: the STATUS_TOKEN environment variable
          (preferred: a --token argument is visible to other local users)`;

export function parseArgs(argv, env) {
  let url;
  let token = env.STATUS_TOKEN;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h" || arg === "--help") return { help: true };
    if (arg === "--token") {
      if (i + 1 >= argv.length) throw new Refused("--token needs a value");
      token = argv[++i];
    } else if (arg.startsWith("--token=")) {
      token = arg.slice("--token=".length);
    } else if (arg.startsWith("-")) {
      throw new Refused(`unknown option ${arg}`);
    } else if (url === undefined) {
      url = arg;
    } else {
      throw new Refused(`unexpected argument ${JSON.stringify(arg)}`);
    }
  }
  if (url === undefined) throw new Refused("no URL given");
  token = token?.trim();
  if (!token) throw new Refused("no token: pass --token TOKEN or set STATUS_TOKEN");
  return { url: statusUrl(url), token };
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2), process.env);
  } catch (e) {
    process.stderr.write(`status.mjs: ${e.message}\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  try {
    const doc = await fetchStatus(args.url, args.token);
    process.stdout.write(renderText(statusTable(doc)));
  } catch (e) {
    process.stderr.write(`status.mjs: ${e.message}\n`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
