// Delivering one notification for the global checker (src/checker/deliver.rs):
// the signature (WebCrypto's HMAC-SHA256) and the POST with a deadline.
// Plumbing on JS objects, off the request path: the checker's alarm alone
// runs it.

const encoder = new TextEncoder();

// HMAC-SHA256 of `body` under `secret` (both text, as UTF-8): resolves to
// the 32 bytes of the MAC; Rust formats the header (format::signature_value).
export async function hmac_sha256(secret, body) {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(body)));
}

// POSTs `body` with `headers` to `url`. Resolves to the answer's
// { status, retry_after } (its Retry-After header or null; Rust reads it),
// status 0 when there was none (refused, reset, no headers within
// `timeoutMs`); never rejects. Redirects are not followed: a receiver's
// redirect is its answer (refused for good), and following one could carry
// the event (and its signature) somewhere the operator never configured.
// The answer's body is never read, so a receiver sending a huge one costs
// nothing.
export function post_js(url, body, headers, timeoutMs) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  return fetch(url, { method: "POST", body, headers, redirect: "manual", signal: ctl.signal }).then(
    (res) => {
      clearTimeout(timer);
      if (res.body !== null) res.body.cancel().catch(() => {});
      return { status: res.status, retry_after: res.headers.get("retry-after") };
    },
    () => {
      clearTimeout(timer);
      return { status: 0, retry_after: null };
    },
  );
}
