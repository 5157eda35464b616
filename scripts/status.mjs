#!/usr/bin/env node
// The Worker's status endpoint, read in a terminal:
//
//   node scripts/status.mjs https://www.example.com/__failover/status   (token from STATUS_TOKEN)
//   node scripts/status.mjs https://www.example.com --token "$TOKEN"   (a bare host means the default STATUS_PATH)
//
// Asks the Worker for its status as plain text, which the core renders
// (crates/failover-core/src/edge/report/text.rs: the table the status page
// shows in a browser), and prints it. Exits 1 with one line on stderr when
// the answer is not the status text (401, an error, a network failure, an
// origin answering a proxied path), 2 on a usage error. Plain Node 20+, no
// dependencies.
import { pathToFileURL } from "node:url";
import process from "node:process";

export const DEFAULT_STATUS_PATH = "/__failover/status";
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
      headers: { accept: "text/plain", authorization: `Bearer ${token}` },
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
  const type = res.headers.get("content-type") ?? "no content-type";
  if (!/^text\/plain\s*(;|$)/i.test(type)) {
    throw new Error(`${shown(url)} did not answer text (${type}), not a status document: is this the Worker's STATUS_PATH?`);
  }
  // Without STATUS_TOKEN on the Worker the path is proxied: an origin's
  // text is not ours.
  if (body.split("\n", 1)[0] !== TITLE) {
    throw new Error(`${shown(url)} answered text that is not a status document: is STATUS_TOKEN set on the Worker?`);
  }
  return body;
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
    process.stdout.write(printable(await fetchStatus(args.url, args.token)));
  } catch (e) {
    process.stderr.write(`status.mjs: ${e.message}\n`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
