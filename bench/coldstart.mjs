// Cold start: time from spawning `workerd serve CONFIG` to the first
// answered request on URL (any HTTP response, body read). The config holds
// one Worker only, so the figure is that Worker's load + first request.
// Prints one JSON line. workerd's pid goes to --pidfile so run.sh can clean
// it up even if this script is killed.
//
//   node bench/coldstart.mjs --workerd PATH --config FILE --url URL --pidfile FILE

import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    workerd: { type: "string" },
    config: { type: "string" },
    url: { type: "string" },
    pidfile: { type: "string" },
    "give-up-ms": { type: "string", default: "20000" },
  },
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const started = performance.now();
const child = spawn(opt.workerd, ["serve", opt.config], { stdio: ["ignore", "ignore", "pipe"] });
let stderr = "";
child.stderr.on("data", (d) => (stderr += d));
if (opt.pidfile) writeFileSync(opt.pidfile, `${child.pid}\n`);
let exited = false;
const exit = new Promise((r) => child.on("exit", () => ((exited = true), r())));
const stop = async () => {
  if (!exited) child.kill("SIGTERM");
  await Promise.race([exit, sleep(3000)]);
  if (!exited) child.kill("SIGKILL");
};
for (const s of ["SIGINT", "SIGTERM"]) process.on(s, () => stop().then(() => process.exit(130)));

let result = null;
while (!exited && performance.now() - started < Number(opt["give-up-ms"])) {
  try {
    const res = await fetch(opt.url, { signal: AbortSignal.timeout(5000) });
    await res.arrayBuffer();
    result = { ms: Math.round((performance.now() - started) * 10) / 10, status: res.status };
    break;
  } catch {
    await sleep(2); // not listening yet
  }
}
await stop();
if (!result) {
  console.error(`workerd did not answer ${opt.url}: ${stderr.slice(-2000)}`);
  process.exit(1);
}
console.log(JSON.stringify(result));
