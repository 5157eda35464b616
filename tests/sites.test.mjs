// SITES: several services behind one Worker, routed by host, each with its
// own origins and policy; a node's connector gone (530) moves every site
// off that node at once; a host no site claims is never proxied.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, eventually } from "./support/worker.mjs";

const TOKEN = "status-token-of-the-sites-test";

// Three services on two nodes, "home" and "vps": a site, a git forge (its
// own steering) and a dashboard (affinity on) under a wildcard.
async function threeSites(extra = {}, options = {}) {
  const names = ["www-home", "www-vps", "git-home", "git-vps", "dash-home", "dash-vps"];
  const o = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await startOrigin(n)])));
  const origin = (name) => ({ name, url: o[name].url, health_path: "/health", node: name.split("-")[1] });
  const sites = [
    { name: "www", hosts: ["www.example.com", "example.com"], origins: [origin("www-home"), origin("www-vps")] },
    { name: "git", hosts: ["git.example.com"], steering: "weighted", origins: [origin("git-home"), origin("git-vps")] },
    { name: "dash", hosts: ["*.dash.example.com"], affinity: "cookie", origins: [origin("dash-home"), origin("dash-vps")] },
  ];
  const worker = await startWorker({ SITES: JSON.stringify(sites), COLO_HEALTH: "off", HEALTH_INTERVAL_MS: "60000", STATUS_TOKEN: TOKEN, ...extra }, options);
  const get = (url, init = {}) => worker.mf.dispatchFetch(url, { redirect: "manual", ...init });
  return {
    o,
    worker,
    get,
    async close() {
      await worker.dispose();
      for (const origin of Object.values(o)) await origin.stop();
    },
  };
}

test("each host goes to its own site's origins; a host no site claims is never proxied", async () => {
  const { o, get, close } = await threeSites();
  try {
    for (const [url, servedBy] of [
      ["http://www.example.com/a", "www-home"],
      ["http://EXAMPLE.com:8443/b", "www-home"],
      ["http://grafana.dash.example.com/c", "dash-home"],
    ]) {
      const res = await get(url);
      assert.equal(res.status, 200, url);
      assert.equal(res.headers.get("x-served-by"), servedBy, url);
      await res.arrayBuffer();
    }
    const git = await get("http://git.example.com/repo");
    assert.ok(["git-home", "git-vps"].includes(git.headers.get("x-served-by")), "weighted over the git site's own two");
    await git.arrayBuffer();
    for (const url of ["http://other.example.com/", "http://dash.example.com/", "http://a.b.dash.example.com/", "http://127.0.0.1/"]) {
      const res = await get(url, { method: "POST", body: "x" });
      assert.equal(res.status, 421, url);
      assert.equal(res.headers.get("x-served-by"), null, url);
      assert.match(await res.text(), /no site behind this Worker answers for this host/);
    }
    const total = Object.values(o).reduce((n, origin) => n + origin.requests.filter((r) => r.path !== "/health").length, 0);
    assert.equal(total, 4, "the unclaimed hosts reached no origin");
  } finally {
    await close();
  }
});

test("each site keeps its own policy: only the affinity site pins", async () => {
  const { get, close } = await threeSites();
  try {
    const dash = await get("http://grafana.dash.example.com/");
    assert.match(dash.headers.get("set-cookie") ?? "", /__tf_affinity=/);
    await dash.arrayBuffer();
    const www = await get("http://www.example.com/");
    assert.doesNotMatch(www.headers.get("set-cookie") ?? "", /__tf_affinity/);
    await www.arrayBuffer();
  } finally {
    await close();
  }
});

test("a node whose connector is gone (530) is left by every site after one failed attempt", async () => {
  const { o, get, close } = await threeSites();
  try {
    // Cloudflare's answer for a Tunnel without a connector.
    const noConnector = { status: 530, headers: { "content-type": "text/plain; charset=UTF-8" }, body: "error code: 1033" };
    for (const name of ["www-home", "git-home", "dash-home"]) o[name].mode = noConnector;
    const www = await get("http://www.example.com/first");
    assert.equal(www.headers.get("x-served-by"), "www-vps");
    assert.equal(www.headers.get("x-failover"), "www-vps");
    await www.arrayBuffer();
    // The other sites never try node home: the first 530 was its node's.
    for (let i = 0; i < 5; i++) {
      for (const [url, vps] of [
        ["http://git.example.com/x", "git-vps"],
        ["http://grafana.dash.example.com/x", "dash-vps"],
      ]) {
        const res = await get(url, { method: "POST", body: `form ${i}` });
        assert.equal(res.status, 200, url);
        assert.equal(res.headers.get("x-served-by"), vps, url);
        await res.arrayBuffer();
      }
    }
    assert.equal(o["git-home"].hits(), 0, "no attempt at git-home");
    assert.equal(o["dash-home"].hits(), 0, "no attempt at dash-home");
    assert.equal(o["www-home"].requests.filter((r) => r.path === "/first").length, 1, "one failed attempt for node home");
    assert.equal(o["git-vps"].requests.filter((r) => r.method === "POST").length, 5, "no POST twice");
  } finally {
    await close();
  }
});

test("an app's own 530 (no error 1033 from the edge) is no evidence against its node", async () => {
  const { o, get, close } = await threeSites();
  try {
    // An app that passes an upstream's status through (or answers 530 itself).
    o["www-home"].pathModes["/status/530"] = 530;
    const www = await get("http://www.example.com/status/530");
    await www.arrayBuffer();
    for (const url of ["http://git.example.com/still", "http://grafana.dash.example.com/still"]) {
      const res = await get(url);
      await res.arrayBuffer();
    }
    assert.equal(o["dash-home"].hits("/still"), 1, "node home's other origins still serve");
    assert.equal(o["git-home"].hits("/still") + o["git-vps"].hits("/still"), 1);
  } finally {
    await close();
  }
});

test("an app's own failure stays with its origin: the other sites on its node keep it", async () => {
  const { o, get, close } = await threeSites();
  try {
    o["www-home"].mode = 502;
    o["www-home"].healthModes = Array(50).fill(503);
    const www = await get("http://www.example.com/broken");
    assert.equal(www.headers.get("x-served-by"), "www-vps");
    await www.arrayBuffer();
    // The probe of www-home's health path confirms it down, in the background.
    await eventually(async () => {
      const res = await get("http://www.example.com/again");
      await res.arrayBuffer();
      return o["www-home"].requests.filter((r) => r.path === "/again").length === 0 && res.headers.get("x-served-by") === "www-vps";
    });
    const git = await get("http://git.example.com/still-home");
    await git.arrayBuffer();
    assert.ok(o["git-home"].hits("/still-home") + o["git-vps"].hits("/still-home") === 1);
    const dash = await get("http://grafana.dash.example.com/still-home");
    assert.equal(dash.headers.get("x-served-by"), "dash-home", "node home's other apps still serve");
    await dash.arrayBuffer();
  } finally {
    await close();
  }
});

test("the status path answers on every host, and the document names each origin's site and node", async () => {
  const { get, close } = await threeSites();
  try {
    for (const host of ["www.example.com", "unclaimed.example.org"]) {
      const res = await get(`http://${host}/__failover/status`, { headers: { authorization: `Bearer ${TOKEN}`, accept: "application/json" } });
      assert.equal(res.status, 200, host);
      const doc = await res.json();
      assert.deepEqual(
        doc.sites.map((s) => [s.name, s.hosts, s.origins, s.steering, s.affinity]),
        [
          ["www", ["www.example.com", "example.com"], ["www-home", "www-vps"], "failover", "off"],
          ["git", ["git.example.com"], ["git-home", "git-vps"], "weighted", "off"],
          ["dash", ["*.dash.example.com"], ["dash-home", "dash-vps"], "failover", "cookie"],
        ],
      );
      assert.deepEqual(
        doc.origins.map((x) => [x.name, x.site, x.node, x.priority]),
        [
          ["www-home", "www", "home", 0],
          ["www-vps", "www", "vps", 1],
          ["git-home", "git", "home", 0],
          ["git-vps", "git", "vps", 1],
          ["dash-home", "dash", "home", 0],
          ["dash-vps", "dash", "vps", 1],
        ],
      );
    }
  } finally {
    await close();
  }
});

test("a host claimed by two sites is a configuration error naming the path, not the value", async () => {
  const a = await startOrigin("a");
  const sites = [
    { name: "one", hosts: ["www.example.com"], origins: [{ name: "a", url: a.url }] },
    { name: "two", hosts: ["WWW.example.com"], origins: [{ name: "b", url: a.url }] },
  ];
  const worker = await startWorker({ SITES: JSON.stringify(sites) });
  try {
    const res = await worker.mf.dispatchFetch("http://www.example.com/");
    const body = await res.text();
    assert.equal(res.status, 500);
    assert.match(body, /SITES\[1\]\.hosts\[0\]: is claimed by SITES\[0\] too/);
    assert.ok(!body.includes("WWW.example.com"), body);
    assert.equal(a.requests.length, 0);
  } finally {
    await worker.dispose();
    await a.stop();
  }
});

test("one call takes a whole node out of every site, and says what it set", async () => {
  const ADMIN = "admin-token-of-the-sites-test";
  const { o, get, close } = await threeSites({ ADMIN_TOKEN: ADMIN, HEALTH_INTERVAL_MS: "1000" }, { durableObjects: { HEALTH_CHECKER: "HealthChecker" } });
  try {
    const set = (node, body) =>
      get(`http://www.example.com/__failover/status/nodes/${node}`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const unknown = await set("attic", { mode: "disable" });
    assert.equal(unknown.status, 400);
    assert.match((await unknown.json()).error, /^node: no origin is on node "attic"; expected one of home, vps/);
    const res = await set("home", { mode: "disable", ttl_s: 600 });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-tunnel-failover"), "admin");
    const doc = await res.json();
    assert.equal(doc.node, "home");
    assert.deepEqual(Object.keys(doc.origins).sort(), ["dash-home", "git-home", "www-home"]);
    assert.ok(Object.values(doc.origins).every((x) => x.mode === "disable"));
    for (const [url, vps] of [
      ["http://www.example.com/after", "www-vps"],
      ["http://git.example.com/after", "git-vps"],
      ["http://grafana.dash.example.com/after", "dash-vps"],
    ]) {
      const r = await get(url);
      assert.equal(r.headers.get("x-served-by"), vps, url);
      await r.arrayBuffer();
    }
    assert.equal(o["www-home"].hits("/after") + o["git-home"].hits("/after") + o["dash-home"].hits("/after"), 0);
  } finally {
    await close();
  }
});

test("one site with its own hosts: a host it does not name is never proxied, on the fast path too", async () => {
  const a = await startOrigin("a");
  const sites = [{ name: "www", hosts: ["www.example.com"], origins: [{ name: "a", url: a.url }] }];
  const worker = await startWorker({ SITES: JSON.stringify(sites), COLO_HEALTH: "off" });
  try {
    const get = (url) => worker.mf.dispatchFetch(url, { redirect: "manual" });
    const ok = await get("http://www.example.com/warm");
    assert.equal(ok.status, 200);
    await ok.arrayBuffer();
    for (const path of ["/a", "/b", "/c"]) {
      const res = await get(`http://elsewhere.example.org${path}`);
      assert.equal(res.status, 421, path);
      await res.arrayBuffer();
    }
    assert.equal(a.requests.filter((r) => r.path !== "/warm").length, 0);
  } finally {
    await worker.dispose();
    await a.stop();
  }
});
