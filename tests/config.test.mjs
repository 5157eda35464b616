// Bad configuration: every request gets 500 naming the setting and the
// problem, the isolate logs it once, and nothing panics.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.mjs";

const ok = JSON.stringify([{ name: "primary", url: "http://127.0.0.1:9" }]);

const cases = [
  ["missing ORIGINS", {}, /ORIGINS: missing/],
  ["ORIGINS not JSON", { ORIGINS: "primary=https://a.example" }, /ORIGINS: is not valid JSON/],
  ["empty ORIGINS", { ORIGINS: "[]" }, /ORIGINS: is empty/],
  [
    "duplicate names",
    { ORIGINS: JSON.stringify([{ name: "a", url: "https://a.example" }, { name: "a", url: "https://b.example" }]) },
    /ORIGINS\[1\]\.name: is used twice/,
  ],
  ["not http(s)", { ORIGINS: JSON.stringify([{ name: "a", url: "ftp://a.example" }]) }, /must start with http:\/\/ or https:\/\//],
  ["URL with a path", { ORIGINS: JSON.stringify([{ name: "a", url: "https://a.example/app" }]) }, /must not have a path/],
  ["URL with credentials", { ORIGINS: JSON.stringify([{ name: "a", url: "https://u:p@a.example" }]) }, /credentials/],
  ["timeout out of range", { ORIGINS: ok, ATTEMPT_TIMEOUT_MS: "0" }, /ATTEMPT_TIMEOUT_MS: is out of range; expected 10 to 100000/],
  ["timeout not a number", { ORIGINS: ok, ATTEMPT_TIMEOUT_MS: "6s" }, /ATTEMPT_TIMEOUT_MS: is not a whole number/],
  ["rise out of range", { ORIGINS: ok, HEALTH_RISE: 0 }, /HEALTH_RISE: is out of range/],
  ["interval too small", { ORIGINS: ok, HEALTH_INTERVAL_MS: 1 }, /HEALTH_INTERVAL_MS: is out of range/],
  ["slow start not a number", { ORIGINS: ok, SLOW_START_S: "-60" }, /SLOW_START_S: is not a whole number; expected 0 to 3600/],
  ["slow start too long", { ORIGINS: ok, SLOW_START_S: 86400 }, /SLOW_START_S: is out of range; expected 0 to 3600/],
  ["slow start minimum over 100", { ORIGINS: ok, SLOW_START_MIN_PCT: 101 }, /SLOW_START_MIN_PCT: is out of range; expected 0 to 100/],
];

for (const [name, vars, expected] of cases) {
  test(`bad config: ${name}`, async () => {
    const worker = await startWorker(vars);
    try {
      for (let i = 0; i < 3; i++) {
        const res = await worker.fetch("/any/path");
        assert.equal(res.status, 500);
        const text = await res.text();
        assert.match(text, /^configuration error in /);
        assert.match(text, expected);
        assert.equal(text.trim().split("\n").length, 1);
      }
      assert.equal(worker.events("config_error").length, 1, "logged once, not per request");
    } finally {
      await worker.dispose();
    }
  });
}

// A config error is read by every visitor: it names the setting and the
// problem, and the value (a password in a URL, a secret's name) goes to
// the Worker's log alone.
const leaks = [
  ["a password in an origin URL", { ORIGINS: JSON.stringify([{ name: "a", url: "https://admin:hunter2@a.example" }]) }, "ORIGINS[0].url", /credentials/],
  ["a token in an origin URL's query", { ORIGINS: JSON.stringify([{ name: "a", url: "https://a.example/?key=hunter2" }]) }, "ORIGINS[0].url", /path, query/],
  ["a bad STEERING", { ORIGINS: ok, STEERING: "hunter2" }, "STEERING", /is not accepted/],
  ["ORIGINS that is not JSON", { ORIGINS: "[hunter2]" }, "ORIGINS", /is not valid JSON/],
];
for (const [name, vars, setting, problem] of leaks) {
  test(`bad config shows no value: ${name}`, async () => {
    const worker = await startWorker(vars);
    try {
      const res = await worker.fetch("/any/path");
      assert.equal(res.status, 500);
      const text = await res.text();
      assert.ok(text.startsWith(`configuration error in ${setting}: `), text);
      assert.match(text, problem);
      assert.ok(!text.includes("hunter2"), `the response shows the value: ${text}`);
      const [logged] = worker.events("config_error");
      assert.ok(logged.value.includes("hunter2"), `the log lacks the value: ${JSON.stringify(logged)}`);
    } finally {
      await worker.dispose();
    }
  });
}

test("ORIGINS as a TOML-style object binding (not a string) is accepted", async () => {
  const worker = await startWorker({ ORIGINS: [{ name: "primary", url: "http://127.0.0.1:9" }], ATTEMPT_TIMEOUT_MS: 200 });
  try {
    const res = await worker.fetch("/");
    // Port 9 refuses: a proxy error, not a config error.
    assert.equal(res.status, 502);
    assert.doesNotMatch(await res.text(), /configuration/);
  } finally {
    await worker.dispose();
  }
});
