// One request's route on the fast path: the JS twin of
// failover_core::edge::route (crates/failover-core/src/edge/route.rs), held
// to tests/fixtures/route.json (written by the core's route_fixture.rs,
// checked here by tests/route-fixture.test.mjs). It is composed of the
// same pieces as there (steer.mjs: attemptOrder, pinnedOrigin,
// withAffinity), which tests/fixtures/steering.json holds to Rust bit for bit. `steer` is
// the lease's `steer` object (src/fast.rs `steering`; `allUp` is added by
// lease.mjs's configure and grant).
import { AFFINITY_COOKIE, attemptOrder, emitCookieFor, mayPin, pinnedOrigin, SET_COOKIE_NEVER, withAffinity } from "./steer.mjs";

// { order, intended, setCookie, pinned, weightedUp }, as Rust's `Route`.
// Per request on the fast path, so it allocates only when it must reorder.
export function route(steer, key, cookieHeader, random) {
  const { policy, names, weights, healthy } = steer;
  const policyOrder = attemptOrder(policy, names, weights, healthy, key, random);
  const affinity = steer.affinity === AFFINITY_COOKIE;
  let weightedUp = false;
  for (let i = 0; i < weights.length; i++) if (weights[i] > 0 && healthy[i] === true) weightedUp = true;
  let pinned = affinity ? pinnedOrigin(cookieHeader, steer.tokens) : undefined;
  // A weight-0 backup is a pin only while no weighted origin is up.
  if (pinned !== undefined && pinned !== null && !mayPin(weights[pinned], weightedUp)) pinned = undefined;
  let meant = pinned;
  if (meant === undefined || meant === null) {
    // With every origin up, the order health aside is the order itself.
    meant = steer.allHealthy ? policyOrder[0] : attemptOrder(policy, names, weights, steer.allUp, key, random)[0];
  }
  const plan = affinity
    ? withAffinity(steer.affinity, steer.affinityFailover, pinned, pinned !== undefined && pinned !== null && healthy[pinned] === true, policyOrder)
    : { order: policyOrder, setCookie: SET_COOKIE_NEVER, pinned: undefined };
  let order = plan.order;
  // The origin a request was meant for goes first whenever it is up, so
  // that x-failover means "the intended origin was down or failed".
  if (meant !== undefined && healthy[meant] === true && order[0] !== meant) {
    order = order.slice();
    order.splice(order.indexOf(meant), 1);
    order.unshift(meant);
  }
  return { order, intended: meant ?? order[0], setCookie: plan.setCookie, pinned: plan.pinned, weightedUp };
}

// Whether the response served by origin `served` sets the affinity cookie
// (Rust's `Route::sets_cookie_for`): never to a weight-0 backup while a
// weighted origin is up.
export function setsCookieFor(plan, served, weights) {
  return emitCookieFor(plan, served) && mayPin(weights[served], plan.weightedUp);
}
