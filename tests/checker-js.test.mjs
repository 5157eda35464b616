// src/js/checker.mjs: the request path's calls to the global checker's
// Durable Object. A broken binding (not a namespace, one whose methods
// throw, a stub that throws or rejects, or answers garbage) must come back
// as "no checker" or a reason, never as an exception into Wasm.
import { test } from "node:test";
import assert from "node:assert/strict";
import { checker_bound_js, checker_fetch_js, checker_id_js } from "../src/js/checker.mjs";

const B = "HEALTH_CHECKER";
const call = (env) => checker_fetch_js(env, B, "global", "https://health-checker.internal/verdicts", "GET", null, "x-h");

test("no binding, or a binding that is not a namespace: no checker", async () => {
  for (const env of [{}, { [B]: "text" }, { [B]: 42 }, { [B]: null }, { [B]: { idFromName: "not a function" } }]) {
    assert.equal(checker_bound_js(env, B), false);
    assert.equal(checker_id_js(env, B, "global"), null);
    assert.equal(await call(env), `no ${B} binding`);
  }
});

test("a namespace whose idFromName throws: no id, and the call says why", async () => {
  const env = { [B]: { idFromName() { throw new Error("bad name"); }, get() { throw new Error("unreached"); } } };
  assert.equal(checker_id_js(env, B, "global"), null);
  assert.equal(await call(env), "bad name");
});

test("a stub that throws, rejects or throws a non-Error: the reason as text", async () => {
  const ns = (fetch) => ({ [B]: { idFromName: (n) => ({ toString: () => `id:${n}` }), get: () => ({ fetch }) } });
  assert.equal(checker_id_js(ns(() => null), B, "global"), "id:global");
  assert.equal(await call(ns(() => { throw new Error("sync"); })), "sync");
  assert.equal(await call(ns(() => Promise.reject(new Error("async")))), "async");
  assert.equal(await call(ns(() => { throw "plain"; })), "plain");
  // An answer whose body cannot be read is a failed call too.
  const unreadable = { status: 200, headers: new Headers(), text: () => Promise.reject(new Error("body gone")) };
  assert.equal(await call(ns(() => Promise.resolve(unreadable))), "body gone");
});

test("an answer: its status, text and the header asked for", async () => {
  const ns = { [B]: { idFromName: () => "id", get: () => ({ fetch: async () => new Response("ok", { status: 200, headers: { "x-h": "v" } }) }) } };
  assert.deepEqual(await call(ns), [200, "ok", "v"]);
});
