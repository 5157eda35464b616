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
    /"a" is used twice/,
  ],
  ["not http(s)", { ORIGINS: JSON.stringify([{ name: "a", url: "ftp://a.example" }]) }, /must start with http:\/\/ or https:\/\//],
  ["URL with a path", { ORIGINS: JSON.stringify([{ name: "a", url: "https://a.example/app" }]) }, /must not have a path/],
  ["URL with credentials", { ORIGINS: JSON.stringify([{ name: "a", url: "https://u:p@a.example" }]) }, /credentials/],
  ["timeout out of range", { ORIGINS: ok, ATTEMPT_TIMEOUT_MS: "0" }, /ATTEMPT_TIMEOUT_MS: 0 is out of range; expected 10 to 100000/],
  ["timeout not a number", { ORIGINS: ok, ATTEMPT_TIMEOUT_MS: "6s" }, /ATTEMPT_TIMEOUT_MS: "6s" is not a whole number/],
  ["rise out of range", { ORIGINS: ok, HEALTH_RISE: 0 }, /HEALTH_RISE: 0 is out of range/],
  ["interval too small", { ORIGINS: ok, HEALTH_INTERVAL_MS: 1 }, /HEALTH_INTERVAL_MS: 1 is out of range/],
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
