// Steering and session affinity for the fast path: the JS twins of
// failover_core::edge::steering (`attemptOrder`, `rendezvousHash`, `ln`),
// failover_core::edge::affinity (`pinnedOrigin`, `withAffinity`),
// failover_core::edge::cookies (`cookie`) and
// `HashKey::key_in` (`hashKeyIn`). Both sides are held to
// tests/fixtures/steering.json, by crates/failover-core/tests/steering_fixture.rs
// and tests/steering-fixture.test.mjs: change a rule here and there together.
//
// The hash steering must send a key to the same origin whichever side
// decides, so every number below is computed with the operations IEEE 754
// rounds the same in both languages (+ - * / and comparisons on doubles,
// Math.imul for u32 products) in the same order as the Rust. Math.log is
// never used: its last bit is not specified. No dependencies, no Node APIs.

// STEERING values, as Rust's `Policy::as_str` spells them.
export const FAILOVER = "failover";
export const WEIGHTED = "weighted";
export const HASH = "hash";

// AFFINITY and AFFINITY_FAILOVER values (`AffinityMode`, `AffinityFailover`).
export const AFFINITY_OFF = "off";
export const AFFINITY_COOKIE = "cookie";
export const TEMPORARY = "temporary";
export const STICKY = "sticky";

// What `withAffinity` says about Set-Cookie (Rust's `SetCookie`).
export const SET_COOKIE_NEVER = "never";
export const SET_COOKIE_ALWAYS = "always";
export const SET_COOKIE_UNLESS_SERVED_BY = "unless_served_by";

export const COOKIE_NAME = "__tf_affinity";

// --- the logarithm (failover_core::edge::det_math::ln) ---------------------------

const LN2 = 0.6931471805599453;
const SQRT2 = 1.4142135623730951;
const SQRT1_2 = 0.7071067811865476;

// 2^k by repeated doubling or halving: exact, whatever Math.pow does.
function pow2(k) {
  let p = 1;
  for (let i = 0; i < k; i++) p *= 2;
  for (let i = 0; i > k; i--) p *= 0.5;
  return p;
}
const TWO_256 = pow2(256);
const TWO_NEG_256 = pow2(-256);
const STEP_K = [128, 64, 32, 16, 8, 4, 2, 1];
const STEP_UP = STEP_K.map((k) => pow2(k));
const STEP_DOWN = STEP_K.map((k) => pow2(-k));

// Natural logarithm from + - * / only: x = m·2^e with m in [√½, √2], then
// ln m = 2·atanh((m-1)/(m+1)) by its odd series through s^21.
export function ln(x) {
  if (Number.isNaN(x) || x < 0) return NaN;
  if (x === 0) return -Infinity;
  if (x === Infinity) return Infinity;
  let m = x;
  let e = 0;
  while (m >= TWO_256) {
    m *= TWO_NEG_256;
    e += 256;
  }
  while (m < TWO_NEG_256) {
    m *= TWO_256;
    e -= 256;
  }
  for (let i = 0; i < 8; i++) {
    if (m >= STEP_UP[i]) {
      m *= STEP_DOWN[i];
      e += STEP_K[i];
    }
  }
  for (let i = 0; i < 8; i++) {
    if (m < STEP_DOWN[i]) {
      m *= STEP_UP[i];
      e -= STEP_K[i];
    }
  }
  if (m > SQRT2) {
    m *= 0.5;
    e += 1;
  } else if (m < SQRT1_2) {
    m *= 2;
    e -= 1;
  }
  const s = (m - 1) / (m + 1);
  const z = s * s;
  let p = 1 / 21;
  p = 1 / 19 + z * p;
  p = 1 / 17 + z * p;
  p = 1 / 15 + z * p;
  p = 1 / 13 + z * p;
  p = 1 / 11 + z * p;
  p = 1 / 9 + z * p;
  p = 1 / 7 + z * p;
  p = 1 / 5 + z * p;
  p = 1 / 3 + z * p;
  p = 1 + z * p;
  return e * LN2 + 2 * s * p;
}

// --- the rendezvous hash ----------------------------------------------------

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const TWO_32 = 4294967296;
const BELOW_ONE = 1 - Number.EPSILON / 2; // the largest double below 1

// FNV-1a-32 over the UTF-8 bytes of a string, encoded on the fly (no
// TextEncoder, no allocation). A lone surrogate counts as U+FFFD, as
// TextEncoder and wasm-bindgen's string passing make it.
function fnvString(h, s) {
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      h = Math.imul(h ^ c, FNV_PRIME);
      continue;
    }
    if (c < 0x800) {
      h = Math.imul(h ^ (0xc0 | (c >> 6)), FNV_PRIME);
      h = Math.imul(h ^ (0x80 | (c & 0x3f)), FNV_PRIME);
      continue;
    }
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        h = Math.imul(h ^ (0xf0 | (cp >> 18)), FNV_PRIME);
        h = Math.imul(h ^ (0x80 | ((cp >> 12) & 0x3f)), FNV_PRIME);
        h = Math.imul(h ^ (0x80 | ((cp >> 6) & 0x3f)), FNV_PRIME);
        h = Math.imul(h ^ (0x80 | (cp & 0x3f)), FNV_PRIME);
        i++;
        continue;
      }
    }
    if (c >= 0xd800 && c < 0xe000) c = 0xfffd;
    h = Math.imul(h ^ (0xe0 | (c >> 12)), FNV_PRIME);
    h = Math.imul(h ^ (0x80 | ((c >> 6) & 0x3f)), FNV_PRIME);
    h = Math.imul(h ^ (0x80 | (c & 0x3f)), FNV_PRIME);
  }
  return h;
}

// MurmurHash3's finaliser, on the u32 bits of h.
function fmix32(h) {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

// The hash of an origin's name after the key's FNV state (`keyState`).
function nameHash(keyState, name) {
  return fmix32(fnvString(Math.imul(keyState ^ 0, FNV_PRIME), name));
}

// fmix32(FNV-1a-32(UTF-8(key) ‖ 0x00 ‖ UTF-8(name))), a u32.
export function rendezvousHash(key, name) {
  return nameHash(fnvString(FNV_OFFSET, key), name);
}

// An origin's rendezvous score for a key's hash: weight / -ln(u).
export function score(weight, hash) {
  const u = (hash + 0.5) / TWO_32;
  return weight / -ln(u);
}

// --- the attempt order (failover_core::edge::steering::attempt_order) -------------

// The attempt order: origin indices, each once, the policy's pick first.
// `names`, `weights` and `healthy` are per origin in priority order (the
// config's names and weights, the health map's verdicts); `key` is the
// request's hash key (a string, or undefined/null/"" for none: then `hash`
// steers as `weighted`); `random` is uniform in [0, 1), e.g. Math.random(),
// clamped into it. An unknown policy steers as `failover`.
export function attemptOrder(policy, names, weights, healthy, key, random) {
  const steered = policy === WEIGHTED || policy === HASH;
  const n = weights.length;
  const order = [];
  for (let i = 0; i < n; i++) {
    if (healthy[i] && (!steered || weights[i] > 0)) order.push(i);
  }
  if (policy === HASH && typeof key === "string" && key.length > 0) {
    orderByHash(order, names, weights, key);
  } else if (steered) {
    orderByWeight(order, weights, random);
  }
  if (steered) {
    for (let i = 0; i < n; i++) if (healthy[i] && !(weights[i] > 0)) order.push(i);
  }
  for (let i = 0; i < n; i++) if (!healthy[i]) order.push(i);
  return order;
}

// Highest score first, ties to the lower index (insertion sort: a handful
// of origins).
function orderByHash(order, names, weights, key) {
  const keyState = fnvString(FNV_OFFSET, key);
  const scores = [];
  for (let j = 0; j < order.length; j++) {
    const i = order[j];
    const s = score(weights[i], nameHash(keyState, names[i]));
    let k = j;
    while (k > 0 && (scores[k - 1] < s || (scores[k - 1] === s && order[k - 1] > i))) {
      scores[k] = scores[k - 1];
      order[k] = order[k - 1];
      k--;
    }
    scores[k] = s;
    order[k] = i;
  }
}

// A weighted random order without replacement from one random number: x =
// r·total picks by cumulative weight, and (x − start)/weight, again uniform
// in [0, 1), draws the next pick from the rest.
function orderByWeight(order, weights, random) {
  let r = random >= 0 ? Math.min(random, BELOW_ONE) : 0;
  let total = 0;
  for (let j = 0; j < order.length; j++) total += weights[order[j]];
  for (let start = 0; start < order.length; start++) {
    const x = r * total;
    // The first origin whose cumulative interval holds x; the last one takes
    // whatever is left, should rounding put x at or past the end.
    let pick = start;
    let before = 0;
    while (pick + 1 < order.length) {
      const w = weights[order[pick]];
      if (x < before + w) break;
      before += w;
      pick++;
    }
    const chosen = order[pick];
    const w = weights[chosen];
    r = Math.min(Math.max((x - before) / w, 0), BELOW_ONE);
    total -= w;
    for (let j = pick; j > start; j--) order[j] = order[j - 1];
    order[start] = chosen;
  }
}

// --- cookies (failover_core::edge::affinity) --------------------------------------

// Trims spaces and tabs only, as the Rust does (String.prototype.trim would
// also take newlines and NBSP).
function trimSpTab(s) {
  let a = 0;
  let b = s.length;
  while (a < b && (s[a] === " " || s[a] === "\t")) a++;
  while (b > a && (s[b - 1] === " " || s[b - 1] === "\t")) b--;
  return s.slice(a, b);
}

// Calls visit(name, value) for each name=value pair of a Cookie header, in
// order, until it returns something other than undefined; returns that.
// Linear in the header's length: the next "=" is searched for again only
// once the pieces have passed it (a header of 100 KB of ";" would make a
// fresh search per piece quadratic).
function eachCookie(header, visit) {
  let start = 0;
  let eq = header.indexOf("=");
  for (;;) {
    let end = header.indexOf(";", start);
    if (end < 0) end = header.length;
    if (eq >= 0 && eq < start) eq = header.indexOf("=", start);
    if (eq >= 0 && eq < end) {
      const name = trimSpTab(header.slice(start, eq));
      let value = trimSpTab(header.slice(eq + 1, end));
      if (value.length >= 2 && value[0] === '"' && value[value.length - 1] === '"') {
        value = value.slice(1, -1);
      }
      if (name.length > 0) {
        const found = visit(name, value);
        if (found !== undefined) return found;
      }
    }
    if (end === header.length) return undefined;
    start = end + 1;
  }
}

// The value of the first cookie called `name` (case-sensitive), or undefined.
export function cookie(header, name) {
  if (typeof header !== "string") return undefined;
  return eachCookie(header, (n, v) => (n === name ? v : undefined));
}

// The origin a Cookie header pins: the index of the first __tf_affinity
// value found in `tokens` (Rust's `affinity::tokens`, by origin index), or
// undefined. Forged, stale and malformed values are skipped.
export function pinnedOrigin(cookieHeader, tokens) {
  if (typeof cookieHeader !== "string") return undefined;
  return eachCookie(cookieHeader, (n, v) => {
    if (n !== COOKIE_NAME) return undefined;
    const i = tokens.indexOf(v);
    return i >= 0 ? i : undefined;
  });
}

// The request's hash key from the value of the header Rust names
// (`HashKey::header`), reading the cookie `cookieName` out of it when the
// key is a cookie; undefined when there is none or it is empty.
export function hashKeyIn(headerValue, cookieName) {
  if (typeof headerValue !== "string") return undefined;
  const key = cookieName === undefined || cookieName === null ? headerValue : cookie(headerValue, cookieName);
  return key ? key : undefined;
}

// Affinity applied to the policy's order (Rust's `with_affinity`): the
// pinned origin first while it is healthy, and whether the response sets the
// cookie. Returns { order, setCookie, pinned } with setCookie one of the
// SET_COOKIE_* constants; `pinned` matters to SET_COOKIE_UNLESS_SERVED_BY.
export function withAffinity(mode, failover, pinned, pinnedHealthy, policyOrder) {
  const pin = pinned !== undefined && pinned !== null && policyOrder.includes(pinned) ? pinned : undefined;
  if (mode !== AFFINITY_COOKIE) return { order: policyOrder, setCookie: SET_COOKIE_NEVER, pinned: undefined };
  if (pin === undefined) return { order: policyOrder, setCookie: SET_COOKIE_ALWAYS, pinned: undefined };
  const setCookie = failover === STICKY ? SET_COOKIE_UNLESS_SERVED_BY : SET_COOKIE_NEVER;
  if (!pinnedHealthy) return { order: policyOrder, setCookie, pinned: pin };
  const order = [pin];
  for (const i of policyOrder) if (i !== pin) order.push(i);
  return { order, setCookie, pinned: pin };
}

// Whether an origin of this weight may be honoured as a pin, or pinned to
// (Rust's `affinity::may_pin`): a weight-0 backup only while no origin of
// weight > 0 is up.
export function mayPin(weight, weightedUp) {
  return weight > 0 || !weightedUp;
}

// Whether the response served by origin `served` sets the cookie.
export function emitCookieFor(plan, served) {
  if (plan.setCookie === SET_COOKIE_ALWAYS) return true;
  if (plan.setCookie === SET_COOKIE_UNLESS_SERVED_BY) return served !== plan.pinned;
  return false;
}
