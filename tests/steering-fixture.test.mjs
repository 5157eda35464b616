// Steering on its own, in Node: src/js/steer.mjs held to
// tests/fixtures/steering.json, whose every row
// crates/failover-core/tests/steering_fixture.rs holds the Rust twins to, so
// the fast path and the full path send a request to the same origin. Then
// the properties that make the policies worth having, checked on the JS side.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  attemptOrder,
  emitCookieFor,
  hashKeyIn,
  ln,
  pinnedOrigin,
  rendezvousHash,
  score,
  withAffinity,
  HASH,
  WEIGHTED,
} from "../src/js/steer.mjs";

const fixture = JSON.parse(readFileSync(new URL("./fixtures/steering.json", import.meta.url), "utf8"));

// Doubles are decimal strings in the fixture; Number() rounds them correctly.
const same = (got, expected, what) => assert.ok(Object.is(got, Number(expected)), `${what}: ${got} != ${expected}`);

test("the logarithm matches Rust's to the bit", () => {
  assert.ok(fixture.ln.length >= 100);
  for (const row of fixture.ln) same(ln(Number(row.x)), row.ln, `ln(${row.x})`);
});

test("hashes and scores match Rust's", () => {
  for (const row of fixture.hashes) {
    const hash = rendezvousHash(row.key, row.name);
    assert.equal(hash, row.hash, JSON.stringify(row));
    same(score(1, hash), row.score_w1, JSON.stringify(row));
    same(score(1000, hash), row.score_w1000, JSON.stringify(row));
  }
});

test("attempt orders match Rust's, case by case", () => {
  assert.ok(fixture.orders.filter((r) => r.policy === HASH).length >= 200);
  for (const row of fixture.orders) {
    const got = attemptOrder(row.policy, row.names, row.weights, row.healthy, row.key ?? undefined, Number(row.random));
    assert.deepEqual(got, row.order, JSON.stringify(row));
  }
});

test("hash keys are read as Rust reads them", () => {
  for (const row of fixture.hash_keys) {
    assert.equal(hashKeyIn(row.value ?? undefined, row.cookie ?? undefined), row.key ?? undefined, JSON.stringify(row));
  }
});

test("the affinity cookie pins what Rust pins", () => {
  const { tokens, cases } = fixture.cookies;
  for (const row of cases) {
    assert.equal(pinnedOrigin(row.cookie ?? undefined, tokens), row.pinned ?? undefined, JSON.stringify(row));
  }
});

test("affinity decisions match Rust's", () => {
  for (const row of fixture.affinity) {
    const plan = withAffinity(row.mode, row.failover, row.pinned ?? undefined, row.pinned_healthy, row.policy_order);
    assert.deepEqual(plan.order, row.order, JSON.stringify(row));
    assert.equal(plan.setCookie, row.set_cookie, JSON.stringify(row));
    assert.deepEqual(
      row.emit.map((_, served) => emitCookieFor(plan, served)),
      row.emit,
      JSON.stringify(row),
    );
  }
});

test("a lone surrogate hashes as U+FFFD, as it reaches Rust", () => {
  for (const name of ["primary", "replica"]) {
    assert.equal(rendezvousHash("a\ud800b", name), rendezvousHash("a\ufffdb", name));
    assert.equal(rendezvousHash("\udc00", name), rendezvousHash("\ufffd", name));
    assert.notEqual(rendezvousHash("\ud83d\ude00", name), rendezvousHash("\ufffd\ufffd", name));
  }
});

// mulberry32: a repeatable uniform [0, 1) stream.
function uniform(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// |observed − n·p| within 5 binomial standard deviations.
function withinBinomial(observed, n, p) {
  return Math.abs(observed - n * p) <= 5 * Math.sqrt(n * p * (1 - p)) + 1;
}

const NAMES = ["primary", "replica", "backup", "spare"];

test("weighted: each origin is first in proportion to its weight", () => {
  const weights = [1, 2, 1, 4];
  const healthy = [true, true, true, true];
  const total = 8;
  const n = 40_000;
  const first = [0, 0, 0, 0];
  const next = uniform(7);
  for (let k = 0; k < n; k++) first[attemptOrder(WEIGHTED, NAMES, weights, healthy, undefined, next())[0]]++;
  weights.forEach((w, i) => assert.ok(withinBinomial(first[i], n, w / total), `${first}`));
});

test("hash: each origin holds keys in proportion to its weight", () => {
  const weights = [1, 2, 1];
  const healthy = [true, true, true];
  const n = 30_000;
  const first = [0, 0, 0];
  for (let k = 0; k < n; k++) {
    const key = `198.51.${k >> 8}.${k & 255}`;
    first[attemptOrder(HASH, NAMES, weights, healthy, key, 0)[0]]++;
  }
  weights.forEach((w, i) => assert.ok(withinBinomial(first[i], n, w / 4), `${first}`));
});

test("hash: losing an origin moves only its keys, and they come back", () => {
  const weights = [1, 2, 1, 3];
  const up = [true, true, true, true];
  const keys = Array.from({ length: 3000 }, (_, k) => `session-${k}`);
  const before = keys.map((key) => attemptOrder(HASH, NAMES, weights, up, key, 0.5));
  for (let lost = 0; lost < 4; lost++) {
    const healthy = up.map((_, i) => i !== lost);
    let moved = 0;
    keys.forEach((key, k) => {
      const now = attemptOrder(HASH, NAMES, weights, healthy, key, 0.5);
      assert.deepEqual(now, [...before[k].filter((i) => i !== lost), lost], `${key} with ${lost} down`);
      if (before[k][0] === lost) moved++;
    });
    assert.ok(moved > 0, `origin ${lost} held some keys`);
  }
  const again = keys.map((key) => attemptOrder(HASH, NAMES, weights, up, key, 0.9));
  assert.deepEqual(again, before);
});

test("weight 0 is never first while an origin of weight above 0 is up", () => {
  const next = uniform(11);
  for (let k = 0; k < 5000; k++) {
    const n = 1 + Math.floor(next() * 4);
    const weights = Array.from({ length: n }, () => (next() < 0.4 ? 0 : 1 + Math.floor(next() * 1000)));
    const healthy = Array.from({ length: n }, () => next() < 0.7);
    for (const policy of [WEIGHTED, HASH]) {
      const order = attemptOrder(policy, NAMES, weights, healthy, next() < 0.5 ? `k${k}` : undefined, next());
      assert.deepEqual([...order].sort(), [...Array(n).keys()], "every origin once");
      const anyUp = weights.some((w, i) => w > 0 && healthy[i]);
      if (anyUp) assert.ok(weights[order[0]] > 0 && healthy[order[0]], `${policy} ${weights} ${healthy} -> ${order}`);
      else if (healthy.some(Boolean)) assert.ok(healthy[order[0]], `${policy} ${weights} ${healthy} -> ${order}`);
    }
  }
});

// A Cookie header is parsed in time linear in its length on the fast path
// (Rust's split is linear by construction): counted as the characters
// String.prototype.indexOf scans, not timed. A header of 120 KiB of ";"
// once cost a fresh search for "=" per piece, ~7.5 billion characters.
test("cookie parsing is linear: a 120 KiB header of ';' scans each character a bounded number of times", () => {
  const header = `${";".repeat(120 * 1024)}x=1; __tf_affinity=forged; sid=abc`;
  const original = String.prototype.indexOf;
  let scanned = 0;
  String.prototype.indexOf = function (needle, from = 0) {
    const at = original.call(this, needle, from);
    scanned += (at < 0 ? this.length : at) - Math.min(from, this.length);
    return at;
  };
  let results;
  try {
    results = [
      pinnedOrigin(header, ["a", "b"]),
      hashKeyIn(header, "sid"),
      pinnedOrigin(";".repeat(120 * 1024), ["a"]),
      hashKeyIn("=".repeat(120 * 1024), "sid"),
    ];
  } finally {
    String.prototype.indexOf = original;
  }
  assert.deepEqual(results, [undefined, "abc", undefined, undefined]);
  assert.ok(scanned <= 4 * 4 * (header.length + 1), `${scanned} characters scanned for ${4 * header.length}`);
});
