// The admin API's request body (src/admin.rs), read with a bound: a body
// longer than `max` bytes is refused as soon as it passes the bound, never
// read whole into memory (a chunked body has no Content-Length to refuse it
// by first).
//
// Resolves to the body as UTF-8 text ("" for none), or null when it is over
// the bound or cannot be read; never rejects.
export async function read_bounded_js(request, max) {
  if (request.body === null) return "";
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > max) {
        reader.cancel().catch(() => {});
        return null;
      }
      chunks.push(value);
    }
  } catch {
    return null;
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

// The Rate Limiting binding's verdict on one more wrong token from `key`
// (src/guesses.rs): resolves to false when the binding says the client
// is over its limit in this location, true otherwise: no binding under
// that name (it is optional), not a rate limiter, or a call that failed
// (a brake that cannot be asked never refuses anyone). Never rejects.
export async function guess_allowed_js(env, binding, key) {
  const limiter = env[binding];
  if (limiter == null || typeof limiter.limit !== "function") return true;
  try {
    const outcome = await limiter.limit({ key });
    return outcome == null || outcome.success !== false;
  } catch {
    return true;
  }
}
