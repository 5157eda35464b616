// Whether an Authorization header carries one of the Worker's own tokens
// (STATUS_TOKEN, ADMIN_TOKEN), as a bearer token or as the password of
// Basic credentials: the fast path's twin of failover_core::secret::
// carries_any, held to the same rows (tests/fixtures/fast-path.json
// `workers_tokens`; crates/failover-core/tests/fast_path_fixture.rs and
// tests/lease.test.mjs). A request that carries one goes to the full path,
// which removes the header before any attempt (src/proxy.rs); an app's own
// credentials stay on the fast path (handing every request with
// Authorization to the full path cost such a request 1.47x: bench/README.md,
// "Issue #28").
//
// Compared in time that depends on the lengths only, never on where the
// first wrong byte is; every token is compared. On ASCII headers it says
// exactly what Rust says; on any other it says "may carry" (true).

// The longest header decoded as Basic credentials (secret::MAX_BASIC_HEADER_BYTES).
const MAX_BASIC_HEADER_BYTES = 4096;
const EMPTY = new Uint8Array(0);
const encoder = new TextEncoder();

// The tokens as `carriesToken` takes them: their UTF-8 bytes, once per
// instance (lease.mjs `configure`).
export function tokenBytes(tokens) {
  return tokens.map((t) => encoder.encode(t));
}

// Any character outside ASCII: Rust's and JS's trims disagree there
// (U+0085 is whitespace to Rust only, U+FEFF to JS only), so the header
// may carry a token this twin would miss. The full path decides (no real client puts non-ASCII in
// Authorization; the cost is that request's alone).
const NON_ASCII = /[^\x00-\x7f]/;

// `header`: the Authorization value (not null); `tokens`: tokenBytes(...).
// True when it carries one of them, or may (non-ASCII): the request then
// takes the full path, which decides. Never false where Rust says true.
export function carriesToken(header, tokens) {
  if (NON_ASCII.test(header)) return true;
  const presented = credentialOf(header);
  let found = 0;
  for (let i = 0; i < tokens.length; i++) found |= sameBytes(presented, tokens[i]) & (tokens[i].length > 0 ? 1 : 0);
  return found === 1;
}

// The secret the header presents: a bearer token's bytes, or a Basic
// password's (everything after the first colon), or no bytes at all.
function credentialOf(header) {
  const h = trim(header);
  const space = h.indexOf(" ");
  if (space < 0) return EMPTY;
  const scheme = h.slice(0, space).toLowerCase();
  const rest = trim(h.slice(space + 1));
  if (scheme === "bearer") return encoder.encode(rest);
  if (scheme !== "basic" || byteLength(header) > MAX_BASIC_HEADER_BYTES) return EMPTY;
  const credentials = decodeStrict(rest);
  if (credentials === null) return EMPTY;
  const colon = credentials.indexOf(58);
  return colon < 0 ? EMPTY : credentials.subarray(colon + 1);
}

// Rust's str::trim on ASCII (non-ASCII headers never get here).
function trim(text) {
  return text.trim();
}

// The header's length in UTF-8 bytes, as Rust measures it.
function byteLength(text) {
  return text.length <= MAX_BASIC_HEADER_BYTES / 3 ? text.length : encoder.encode(text).length;
}

// 1 when equal, else 0, in time that depends on the lengths only.
function sameBytes(a, b) {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0 ? 1 : 0;
}

// Strict base64 as failover_core::base64::decode takes it (RFC 4648 4: a
// multiple of four, padding only closing the last group, zero leftover
// bits, nothing else), or null.
function decodeStrict(text) {
  if (text.length % 4 !== 0) return null;
  const out = new Uint8Array((text.length / 4) * 3);
  let at = 0;
  for (let g = 0; g < text.length; g += 4) {
    let pad = 0;
    while (pad < 4 && text.charCodeAt(g + 3 - pad) === 61) pad++;
    if (pad > 2 || (pad > 0 && g + 4 !== text.length)) return null;
    let n = 0;
    for (let i = 0; i < 4; i++) {
      const v = i < 4 - pad ? sextet(text.charCodeAt(g + i)) : 0;
      if (v < 0) return null;
      n = (n << 6) | v;
    }
    const b0 = (n >> 16) & 255;
    const b1 = (n >> 8) & 255;
    const b2 = n & 255;
    if (pad === 0) {
      out[at++] = b0;
      out[at++] = b1;
      out[at++] = b2;
    } else if (pad === 1 && b2 === 0) {
      out[at++] = b0;
      out[at++] = b1;
    } else if (pad === 2 && b1 === 0 && b2 === 0) {
      out[at++] = b0;
    } else return null;
  }
  return out.subarray(0, at);
}

function sextet(c) {
  if (c >= 65 && c <= 90) return c - 65;
  if (c >= 97 && c <= 122) return c - 71;
  if (c >= 48 && c <= 57) return c + 4;
  if (c === 43) return 62;
  if (c === 47) return 63;
  return -1;
}
