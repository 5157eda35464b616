// The fast path's URL join (src/js/lease.mjs) on its own, in Node: whatever
// path a client sends, the runtime serializes the request URL, and the join
// must keep the lease's origin as the authority. The same hostile paths go
// through the whole Worker in forwarding.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { grant, lease, revoke_lease, upstreamUrl } from "../src/js/lease.mjs";
import { HOSTILE_PATHS } from "./support/hostile.mjs";

const BASE = "https://primary.example.com:8443";

function leased(statusPath) {
  const granted = { origin: 0, until: Date.now() + 60_000, base: BASE, name: "primary", timeoutMs: 6000, statusPath, generation: 0 };
  assert.equal(grant(granted, 0), true);
}

// What request.url looks like once the runtime has parsed an origin-form
// request target (which is always a path, even "//evil.example/x").
const served = (target) => new URL(`https://site.example${target}`).href;

test("the path and query are appended byte for byte to the origin", () => {
  leased(undefined);
  assert.equal(upstreamUrl(served("/"), "GET"), `${BASE}/`);
  assert.equal(upstreamUrl(served("/a/b?x=1&y=%2F%20+"), "GET"), `${BASE}/a/b?x=1&y=%2F%20+`);
  assert.equal(upstreamUrl("https://site.example:9/p?q", "GET"), `${BASE}/p?q`);
  assert.equal(upstreamUrl("https://user:pa%2Fss@site.example/p", "GET"), `${BASE}/p`);
});

test("hostile paths never name another host", () => {
  leased(undefined);
  for (const path of HOSTILE_PATHS) {
    const url = upstreamUrl(served(path), "GET");
    assert.ok(url !== undefined, path);
    assert.equal(new URL(url).host, new URL(BASE).host, `${path} -> ${url}`);
  }
});

test("random paths keep the origin's authority", () => {
  leased(undefined);
  const alphabet = "/\\?#@:.%2Fe-vil_~!$&'()*+,;=[] \t\u00e9";
  for (let i = 0; i < 5000; i++) {
    let path = "/";
    const n = Math.floor(Math.random() * 24);
    for (let k = 0; k < n; k++) path += alphabet[Math.floor(Math.random() * alphabet.length)];
    let raw;
    try {
      raw = served(path);
    } catch {
      continue; // not a URL the runtime would hand over
    }
    const url = upstreamUrl(raw, "GET");
    if (url === undefined) {
      assert.ok(raw.includes("#"), `only a fragment sends ${raw} to the full path`);
      continue;
    }
    assert.equal(new URL(url).host, new URL(BASE).host, `${raw} -> ${url}`);
  }
});

test("the status endpoint and fragments are left to the full path", () => {
  leased("/__failover/status");
  assert.equal(upstreamUrl(served("/__failover/status"), "GET"), undefined);
  assert.equal(upstreamUrl(served("/__failover/status?x=1"), "HEAD"), undefined);
  assert.equal(upstreamUrl(served("/__failover/status"), "POST"), `${BASE}/__failover/status`);
  assert.equal(upstreamUrl(served("/__failover/statusx"), "GET"), `${BASE}/__failover/statusx`);
  assert.equal(upstreamUrl("https://site.example/p#frag", "GET"), undefined);
  leased(undefined);
  assert.equal(upstreamUrl(served("/__failover/status"), "GET"), `${BASE}/__failover/status`, "no token: proxied");
});

test("a revoked lease is asked for again", () => {
  leased(undefined);
  assert.ok(Date.now() < lease.until);
  revoke_lease();
  assert.equal(lease.until, 0);
  assert.equal(grant(undefined), false);
});
