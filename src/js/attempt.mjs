// The two per-request steps that are pure JS plumbing, shared by the Rust
// shell (imported through wasm-bindgen) and the fast path in entry.mjs.
// Built from Rust they cost ~15 boundary crossings and two closures each.

// One attempt against one origin. The timer times the wait for the response
// headers only, and for a streamed upload it starts once the whole body has
// been handed over: a slow client uploading a large file must not look like
// a dead origin. The stream is re-piped through a FixedLengthStream when its
// length is known, so the origin still gets a Content-Length.
//
// Resolves to the Response, 0 for our own timeout, 1 when fetch refused the
// request (TypeError), or the error's message; it never rejects. Redirects
// go to the client as they are: following one could leave the origin.
export function attempt_js(url, method, headers, body, streamedLength, timeoutMs) {
  const ctl = new AbortController();
  let timer;
  const arm = () => {
    timer = setTimeout(() => ctl.abort(), timeoutMs);
  };
  const init = { method, redirect: "manual", signal: ctl.signal };
  if (headers !== undefined) {
    // The client's Host header rides along, as in the JavaScript Worker this
    // replaces: the runtime sets Host from the URL (workerd ignores a Host in
    // the init; Cloudflare changes it only through cf.resolveOverride), and
    // tests/forwarding.test.mjs checks the origin sees its own hostname.
    // Copying the headers to drop it cost ~7% of throughput in make bench.
    init.headers = headers;
  }
  if (streamedLength !== undefined) {
    const pipe = streamedLength >= 0 ? new FixedLengthStream(streamedLength) : new TransformStream();
    body.pipeTo(pipe.writable).then(arm, () => {});
    init.body = pipe.readable;
  } else {
    if (body !== undefined) init.body = body;
    arm();
  }
  return fetch(url, init).then(
    (res) => {
      clearTimeout(timer);
      return res;
    },
    (err) => {
      clearTimeout(timer);
      if (ctl.signal.aborted) return 0;
      if (err instanceof TypeError) return 1;
      return String(err && err.message !== undefined ? err.message : err);
    },
  );
}

// Re-wraps the origin's response so its headers can be changed: the body
// stream is handed over as is, and passing the response itself as the init
// keeps status, status text, headers and a WebSocket (101) attached.
export function served_by_js(res, origin, failedOver) {
  const out = new Response(res.body, res);
  out.headers.set("X-Served-By", origin);
  if (failedOver) out.headers.set("x-failover", origin);
  return out;
}
