// src/js/route.mjs (the fast path's route) held to tests/fixtures/route.json,
// whose every row crates/failover-core/tests/route_fixture.rs holds
// failover_core::edge::route to: a request's order, the origin it was meant for
// (x-failover) and the cookie decision are the same whichever path serves it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { route, setsCookieFor } from "../src/js/route.mjs";

const fixture = JSON.parse(readFileSync(new URL("./fixtures/route.json", import.meta.url), "utf8"));

test("every route matches Rust's", () => {
  assert.ok(fixture.rows.length > 1000);
  assert.ok(fixture.rows.filter((r) => r.standing !== undefined).length > 1000, "rows with overrides in force");
  for (const row of fixture.rows) {
    // The lease's `steer` object, as src/fast.rs and lease.mjs build it.
    const steer = {
      policy: row.steering,
      names: fixture.names,
      weights: fixture.weights,
      healthy: row.healthy,
      affinity: row.affinity,
      affinityFailover: row.failover,
      tokens: row.affinity === "cookie" ? fixture.tokens : undefined,
      // With overrides in force the lease brings what a request may be
      // meant for (lease.mjs grant); otherwise every origin.
      allUp: row.intendable ?? fixture.names.map(() => true),
      allHealthy: row.healthy.every((h) => h),
    };
    const got = route(steer, row.key ?? undefined, row.cookie, Number(row.random));
    const what = JSON.stringify(row);
    assert.deepEqual(got.order, row.order, what);
    assert.equal(got.intended, row.intended, what);
    assert.equal(got.setCookie, row.set_cookie, what);
    if (row.set_cookie === "unless_served_by") assert.equal(got.pinned, row.unless, what);
    const cookieFor = fixture.names.map((_, s) => s).filter((s) => setsCookieFor(got, s, fixture.weights));
    assert.deepEqual(cookieFor, row.cookie_for, what);
  }
});
