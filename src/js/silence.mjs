// Silence (no Rust twin: every attempt is JS, so both paths ask this one
// definition; held to its table on a simulated clock in
// tests/silence.test.mjs). An origin that has had an attempt outstanding (its request handed
// over whole, body included; see attempt.mjs) for longer than
// SILENCE_MS, and has sent no response headers to anyone since that attempt
// began, is skipped by new requests (as if down, with x-failover) instead
// of each of them waiting out the attempt timeout. A routing hint, not a
// verdict: no probe, no colo publish, the health map untouched; it ends
// with the origin's first response, or when its outstanding attempts end
// (a timeout then sends a probe, which marks it down if it agrees). If
// every other origin is down, a silent one is still tried.
//
// The one definition, for both paths: every attempt goes through
// attempt_js (attempt.mjs), which records here; the fast path asks
// `isSilent`, the Rust full path asks `is_silent` (src/js_bridge.rs).

// Per origin: the start times (ms) of its outstanding attempts, oldest
// first, and when it last sent response headers.
const outstanding = [];
const heardAt = [];

export function attemptStarted(origin, now) {
  (outstanding[origin] ??= []).push(now);
  return now;
}

// `answered`: response headers came (whatever the status).
export function attemptEnded(origin, started, answered, now) {
  const list = outstanding[origin];
  if (list !== undefined) {
    const at = list.indexOf(started);
    if (at >= 0) list.splice(at, 1);
  }
  if (answered) heard(origin, now);
}

// Response headers came from `origin` (also after its attempt timed out).
export function heard(origin, now) {
  heardAt[origin] = now;
}

// An attempt still on the list this long after the attempt timeout
// (`timeoutMs`) should have ended: its end was lost (a request the runtime
// dropped with its client). It never counts, and it is let go.
export const LOST_AFTER_TIMEOUT_MS = 1000;

export function isSilent(origin, silenceMs, timeoutMs, now) {
  if (!(silenceMs > 0)) return false;
  // The common case without the walk: nothing outstanding, or nothing
  // outstanding for SILENCE_MS (the list is oldest first). Lost attempts,
  // which the walk lets go of, are older still: the next walk takes them.
  const list = outstanding[origin];
  if (list === undefined || list.length === 0 || now - list[0] <= silenceMs) return false;
  const oldest = oldestOutstanding(origin, timeoutMs, now);
  return now - oldest > silenceMs && !(heardAt[origin] >= oldest);
}

// For Rust (wasm-bindgen import): the same question at the current time.
export function is_silent(origin, silenceMs, timeoutMs) {
  return isSilent(origin, silenceMs, timeoutMs, Date.now());
}

// Whether some origin has had an attempt outstanding for `forMs` or longer
// (lost ones aside, as above), whether or not it has answered anyone else
// since. Not silence: a hint that the colo's verdicts are worth reading
// (edge::Isolate::colo_read_wanted; `forMs` is its suspect_after), since
// another isolate may already know why the attempt waits.
export function isWaiting(forMs, timeoutMs, now) {
  for (let origin = 0; origin < outstanding.length; origin++) {
    // Oldest first: none has waited `forMs` unless the first has (the walk
    // only when it has, as in isSilent).
    const list = outstanding[origin];
    if (list === undefined || list.length === 0 || now - list[0] < forMs) continue;
    if (now - oldestOutstanding(origin, timeoutMs, now) >= forMs) return true;
  }
  return false;
}

// For Rust (wasm-bindgen import): the same question at the current time.
export function is_waiting(forMs, timeoutMs) {
  return isWaiting(forMs, timeoutMs, Date.now());
}

// When `origin`'s oldest outstanding attempt started (Infinity: none),
// letting go of lost ones.
function oldestOutstanding(origin, timeoutMs, now) {
  const list = outstanding[origin];
  if (list === undefined) return Infinity;
  while (list.length > 0 && now - list[0] > timeoutMs + LOST_AFTER_TIMEOUT_MS) list.shift();
  return list.length === 0 ? Infinity : list[0];
}
