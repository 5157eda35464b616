#!/usr/bin/env node
// The Worker's status endpoint, read in a terminal:
//
//   node scripts/status.mjs https://www.example.com/__failover/status   (token from STATUS_TOKEN)
//   node scripts/status.mjs https://www.example.com --token "$TOKEN"   (a bare host means the default STATUS_PATH)
//   node scripts/status.mjs https://www.example.com --watch [N]        (again every N s, default 2: a drill)
//   node scripts/status.mjs https://www.example.com --json             (the JSON document itself)
//
// Asks the Worker for its status as plain text, which the core renders
// (crates/failover-core/src/edge/report/text.rs: the table the status page
// shows in a browser), and prints it. `--watch` prints it again every N
// seconds until interrupted, clearing the screen first only when stdout is
// a terminal (to a file or a pipe each answer follows the last, a blank line
// between), and carries on through a failed poll (one line on stderr) but
// not through a refused token. `--json` prints the JSON document instead,
// indented; with `--watch`, one line per poll (a drill's record, e.g.
// `> drill.ndjson`). Exits 1 with one line on stderr when the answer is not
// the status document (401, an error, a network failure, an origin
// answering a proxied path), 2 on a usage error. Plain Node 20+, no
// dependencies.
import { pathToFileURL } from "node:url";
import process from "node:process";

export const DEFAULT_STATUS_PATH = "/__failover/status";
// What the Worker marks its status endpoint's answers with (x-tunnel-failover;
// failover_core::edge::overrides::api::ANSWERED_BY_HEADER and _STATUS).
const STATUS_MARK = "status";
const TIMEOUT_MS = 10_000;
// Answers are a few KB; a proxied path could be anything.
const MAX_BODY_BYTES = 1024 * 1024;

// The first line of every status text (edge/report/page.rs: TITLE): what
// tells the Worker's answer from an origin's.
export const TITLE = "tunnel-failover status";

// The Worker filters these already (text.rs); a terminal obeys what it is
// given, so the script does not rely on it: an escape sequence from
// anything that answers never reaches the screen. Newlines are the
// layout, kept.
export function printable(text) {
  return text.replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g, "?");
}

class Refused extends Error {}
// The Worker said no to the token: polling again cannot help.
class TokenRefused extends Error {}

// `--watch` bounds, in seconds: under half a second is no longer watching
// but load; over an hour, a cron job's business.
export const WATCH_DEFAULT_S = 2;
const WATCH_MIN_S = 0.5;
const WATCH_MAX_S = 3600;

// Clears a terminal: cursor home, screen, scrollback (so a drill's old
// frames do not pile up above the new one).
export const CLEAR = "\u001b[H\u001b[2J\u001b[3J";

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

// The status text (`json` false) or the JSON document, parsed (`json` true).
export async function fetchStatus(url, token, { json = false } = {}) {
  let res;
  try {
    res = await fetch(url, {
      headers: { accept: json ? "application/json" : "text/plain", authorization: `Bearer ${token}` },
      redirect: "manual",
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (e) {
    const cause = e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(e);
    const why = e?.name === "TimeoutError" ? `no answer within ${TIMEOUT_MS / 1000} s` : cause;
    throw new Error(`cannot reach ${shown(url)}: ${why}`);
  }
  const body = await readBounded(res);
  // Only the Worker's status endpoint marks its answers (its 401 too), and
  // what the Worker proxies from an origin carries X-Served-By: anything
  // else is an app's answer (STATUS_TOKEN unset on the Worker, a mistyped
  // path, another site), which is neither the document nor a refusal.
  const proxied = res.headers.has("x-served-by");
  if (res.headers.get("x-tunnel-failover") !== STATUS_MARK || proxied) {
    const from = proxied ? "from an origin behind the Worker (X-Served-By)" : "without the Worker's x-tunnel-failover: status header";
    throw new Error(
      `${shown(url)} answered ${res.status} ${from}: not the Worker's status endpoint (is STATUS_TOKEN set on the Worker, and is this its STATUS_PATH?)`,
    );
  }
  if (res.status === 401) throw new TokenRefused(`${shown(url)} refused the token (401): check STATUS_TOKEN`);
  if (res.status !== 200) throw new Error(`${shown(url)} answered ${res.status}, not the status document`);
  const type = res.headers.get("content-type") ?? "no content-type";
  const expected = json ? /^application\/json\s*(;|$)/i : /^text\/plain\s*(;|$)/i;
  if (!expected.test(type)) {
    throw new Error(
      `${shown(url)} did not answer ${json ? "JSON" : "text"} (${type}), not a status document: is this the Worker's STATUS_PATH?`,
    );
  }
  // Without STATUS_TOKEN on the Worker the path is proxied: an origin's
  // answer is not ours.
  const notOurs = `${shown(url)} answered ${json ? "JSON" : "text"} that is not a status document: is STATUS_TOKEN set on the Worker?`;
  if (!json) {
    if (body.split("\n", 1)[0] !== TITLE) throw new Error(notOurs);
    return body;
  }
  let doc;
  try {
    doc = JSON.parse(body);
  } catch {
    throw new Error(notOurs);
  }
  if (typeof doc !== "object" || doc === null || !Array.isArray(doc.origins) || typeof doc.version !== "string") {
    throw new Error(notOurs);
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

const USAGE = `usage: node scripts/status.mjs URL [--token TOKEN] [--watch [N]] [--json]
  URL       the Worker's status endpoint, e.g. https://www.example.com/__failover/status
            (a bare https://www.example.com means ${DEFAULT_STATUS_PATH})
  TOKEN     its STATUS_TOKEN; default: the STATUS_TOKEN environment variable
            (preferred: a --token argument is visible to other local users)
  --watch   print it again every N seconds (default ${WATCH_DEFAULT_S}, ${WATCH_MIN_S} to ${WATCH_MAX_S}) until
            Ctrl-C, clearing the screen when stdout is a terminal
  --json    the JSON document instead of the table (with --watch: one line per poll)
  From make: make status URL=https://www.example.com ARGS="--watch 5"`;

// `--watch`'s N: seconds, a plain decimal number within the bounds.
export function watchSeconds(text) {
  const seconds = /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;
  if (!(seconds >= WATCH_MIN_S && seconds <= WATCH_MAX_S)) {
    throw new Refused(`--watch takes a number of seconds from ${WATCH_MIN_S} to ${WATCH_MAX_S}; got ${JSON.stringify(text)}`);
  }
  return seconds;
}

export function parseArgs(argv, env) {
  let url;
  let token = env.STATUS_TOKEN;
  let watch = null;
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h" || arg === "--help") return { help: true };
    if (arg === "--token") {
      if (i + 1 >= argv.length) throw new Refused("--token needs a value");
      token = argv[++i];
    } else if (arg.startsWith("--token=")) {
      token = arg.slice("--token=".length);
    } else if (arg === "--watch") {
      // N is optional: the next argument is N when it looks like a number,
      // or like nothing else (an option starts with '-', a URL has a ':').
      const next = argv[i + 1];
      const isN = next !== undefined && (/^-?[\d.]/.test(next) || (!next.startsWith("-") && !next.includes(":")));
      watch = isN ? watchSeconds(argv[++i]) : WATCH_DEFAULT_S;
    } else if (arg.startsWith("--watch=")) {
      watch = watchSeconds(arg.slice("--watch=".length));
    } else if (arg === "--json") {
      json = true;
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
  return { url: statusUrl(url), token, watch, json };
}

// What one answer prints as: the text (control characters replaced) or the
// JSON; when watching, a terminal's screen is cleared first and the last
// line says how to stop, and elsewhere frames are kept apart by a blank
// line (JSON: one line each).
export function frame(answer, { json, watch, tty, first }) {
  if (json) {
    // JSON.stringify escapes C0 in strings but writes DEL and C1 (U+009B
    // is CSI on its own) as they are: escape those too, still valid JSON.
    const text = watch === null ? JSON.stringify(answer, null, 2) : JSON.stringify(answer);
    return `${text.replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)}\n`;
  }
  const text = printable(answer);
  if (watch === null) return text;
  if (tty) return `${CLEAR}${text}\n(every ${watch} s; Ctrl-C to stop)\n`;
  return first ? text : `\n${text}`;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

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
  const tty = Boolean(process.stdout.isTTY);
  for (let first = true; ; first = false) {
    try {
      const answer = await fetchStatus(args.url, args.token, { json: args.json });
      process.stdout.write(frame(answer, { json: args.json, watch: args.watch, tty, first }));
    } catch (e) {
      // Once: any failure is the answer. Watching: a drill can make the
      // Worker briefly unreachable, so a failed poll is reported and the
      // next one tried; a refused token is final.
      const stamp = args.watch === null ? "" : `${new Date().toISOString().slice(11, 19)} UTC: `;
      process.stderr.write(`status.mjs: ${stamp}${e.message}\n`);
      if (args.watch === null || e instanceof TokenRefused) {
        process.exitCode = 1;
        return;
      }
    }
    if (args.watch === null) return;
    await sleep(args.watch * 1000);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
