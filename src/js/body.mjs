// Which request bodies the fast path reads into a buffer and sends itself
// (src/js/entry.mjs): the JS twin of failover_core::edge::replay's
// `BodyPlan::choose`, for the one plan the fast path takes, Buffered, and
// only where the Content-Length is plain digits; anything else (chunked,
// too large, " 12 ", "+12", a GET or HEAD with a body) goes to Rust's full
// path, which has the whole rule. Held to tests/fixtures/fast-path.json
// ("bodies": tests/lease.test.mjs here, fast_path_fixture.rs in the core).

// Digits only, and few enough that Number() is exact.
const LENGTH = /^[0-9]{1,15}$/;

// The body's length in bytes when the fast path may buffer it (1 to `cap`,
// REPLAY_BODY_MAX_BYTES), or undefined. `contentLength` is the header or
// null.
export function bufferedLength(method, contentLength, cap) {
  if (method === "GET" || method === "HEAD" || contentLength === null || !LENGTH.test(contentLength)) return undefined;
  const bytes = Number(contentLength);
  return bytes >= 1 && bytes <= cap ? bytes : undefined;
}
