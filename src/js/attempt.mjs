// The two per-request steps that are pure JS plumbing, shared by the Rust
// shell (imported through wasm-bindgen) and the fast path in entry.mjs.
// Built from Rust they cost ~15 boundary crossings and two closures each.
import { REFUSED, TIMED_OUT } from "./rules.mjs";
import { attemptEnded, attemptStarted, heard } from "./silence.mjs";

// One attempt against one origin. The timer times the wait for the response
// headers only, and for a streamed upload it starts once the whole body has
// been handed over: a slow client uploading a large file must not look like
// a dead origin. The stream is re-piped through a FixedLengthStream when its
// length is known, so the origin still gets a Content-Length.
//
// Resolves to the Response, TIMED_OUT for our own timeout, REFUSED when
// fetch refused the request (TypeError), or the error's message; it never
// rejects (the constants live in rules.mjs, read by src/forward.rs too). Redirects
// go to the client as they are: following one could leave the origin.
//
// The timeout races the fetch instead of aborting it: an AbortSignal on the
// fetch cost ~5-10% of throughput in `make bench`. A fetch that loses the
// race is not cancelled at once; the runtime drops it with the client's
// request (tests/failover.test.mjs checks the origin sees its connection
// close), and a late answer's body is cancelled here. Without a signal,
// nothing can cut a body that is still streaming.
//
// `origin` (its index) is recorded in silence.mjs: when the request was
// handed over whole (the timer's start), and whether response headers came
// before the attempt ended.
export function attempt_js(url, method, headers, body, streamedLength, timeoutMs, origin) {
  return new Promise((resolve) => race(url, method, headers, body, streamedLength, timeoutMs, origin, undefined, resolve));
}

// The fast path's attempt (src/js/entry.mjs; its body, if any, already read
// into a buffer): what attempt_js would resolve to is handed to `then` as
// soon as it is known, and the promise resolves to what `then` returns (or
// rejects with what it throws). The same as attempt_js(...).then(then),
// without the second promise and the microtask between the two: a
// small site's requests run this code in V8's interpreter, where every
// promise, call and closure on the path is counted (bench/README.md).
// `now`: the caller's Date.now() when it was taken in the same task (the
// runtime's clock stands still while a task runs, so it is the reading
// the timer's start would take), or undefined. `then` gets the result and
// the Date.now() its arrival was recorded at, for the same reason.
export function attemptThen(url, method, headers, body, timeoutMs, origin, now, then) {
  return new Promise((resolve, reject) =>
    race(url, method, headers, body, undefined, timeoutMs, origin, now, (result, ended) => {
      try {
        resolve(then(result, ended));
      } catch (e) {
        reject(e);
      }
    }),
  );
}

// The attempt itself: `deliver` gets its result and the time it was
// recorded at, once. `now`: as attemptThen's. Each Date.now() is a call
// into the runtime (~250 instructions counted).
function race(url, method, headers, body, streamedLength, timeoutMs, origin, now, deliver) {
  const init = { method, redirect: "manual" };
  if (headers !== undefined) {
    // The client's Host header rides along, as in the JavaScript Worker this
    // replaces: the runtime sets Host from the URL (workerd ignores a Host in
    // the init; Cloudflare changes it only through cf.resolveOverride), and
    // tests/forwarding.test.mjs checks the origin sees its own hostname.
    // Copying the headers to drop it cost ~7% of throughput in make bench.
    init.headers = headers;
  }
  let settled = false;
  // The attempt counts toward silence (silence.mjs) only once the whole
  // request, body included, is the origin's to answer: a client uploading
  // slowly (or trickling on purpose) must not make a healthy origin look
  // silent. `started` is undefined until then.
  let started;
  const settle = (result) => {
    if (settled) return false;
    settled = true;
    const ended = Date.now();
    if (started !== undefined) attemptEnded(origin, started, typeof result === "object", ended);
    else if (typeof result === "object") heard(origin, ended);
    deliver(result, ended);
    return true;
  };
  let timer;
  if (streamedLength !== undefined) {
    const pipe = streamedLength >= 0 ? new FixedLengthStream(streamedLength) : new TransformStream();
    body.pipeTo(pipe.writable).then(
      () => {
        if (settled) return;
        started = attemptStarted(origin, Date.now());
        timer = setTimeout(settle, timeoutMs, TIMED_OUT);
      },
      () => {},
    );
    init.body = pipe.readable;
  } else {
    // Handed over whole at once: the timer starts now.
    if (body !== undefined) init.body = body;
    started = attemptStarted(origin, now === undefined ? Date.now() : now);
    timer = setTimeout(settle, timeoutMs, TIMED_OUT);
  }
  fetch(url, init).then(
    (res) => {
      // A timer left pending until a 1 MiB body has streamed cost ~15% of
      // workerd's CPU per request in `make bench`: clear it.
      clearTimeout(timer);
      if (!settle(res)) {
        // A late answer still ends the origin's silence.
        heard(origin, Date.now());
        if (res.body !== null) res.body.cancel().catch(() => {});
      }
    },
    (err) => {
      clearTimeout(timer);
      settle(failureOf(err));
    },
  );
}

// A health probe: a GET aborted on timeout, resolving like attempt_js.
// Probes also run where no client request ends to drop an abandoned fetch
// (the HealthChecker's alarms, which would pile up connections to a hung
// origin), and they are off the hot path, so the abort's cost is no matter.
// `headers`: an origin's Access service token, or undefined.
export function probe_js(url, timeoutMs, headers) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  const init = { redirect: "manual", signal: ctl.signal };
  if (headers !== undefined) init.headers = headers;
  return fetch(url, init).then(
    (res) => {
      clearTimeout(timer);
      return res;
    },
    (err) => {
      clearTimeout(timer);
      return ctl.signal.aborted ? TIMED_OUT : failureOf(err);
    },
  );
}

function failureOf(err) {
  return err instanceof TypeError ? REFUSED : String(err && err.message !== undefined ? err.message : err);
}

// Re-wraps the origin's response so its headers can be changed: the body
// stream is handed over as is, and passing the response itself as the init
// keeps status, status text, headers and a WebSocket (101) attached.
// X-Served-By and x-failover are the Worker's alone: an origin's own (a
// replica behind another copy of this Worker, a forged one) never reaches
// the client. The full path's answer (src/respond.rs): tagged, and a
// redirect to the origin's own host made one to the site (`relocate`);
// `requestUrl` is the client's URL, `originUrl` the origin's base. The
// fast path calls the two halves itself, with the status it already read.
export function served_by_js(res, origin, failedOver, requestUrl, originUrl) {
  const out = tagged(res, origin, failedOver);
  if (hasLocation(out.status)) relocate(out.headers, originUrl, requestUrl);
  return out;
}

export function tagged(res, origin, failedOver) {
  const out = new Response(res.body, res);
  // One getter: each is a call into the runtime.
  const headers = out.headers;
  headers.set("X-Served-By", origin);
  if (failedOver) headers.set("x-failover", origin);
  else headers.delete("x-failover");
  return out;
}

// The statuses whose Location means something: no header is read on the
// rest.
export function hasLocation(status) {
  return (status >= 300 && status < 400) || status === 201;
}

// Sets the Location the client should get (`publicLocation`), if it is
// not the one the app sent.
export function relocate(headers, originUrl, requestUrl) {
  const location = headers.get("location");
  const fixed = location === null ? undefined : publicLocation(location, originUrl, requestUrl);
  if (fixed !== undefined) headers.set("location", fixed);
}

// An http(s) URL's authority, absolute or scheme-relative ("//host/x",
// which a browser resolves against the site): what follows "//" up to the
// path, query or fragment; no match for a path or another scheme.
const ABSOLUTE_HTTP = /^(?:https?:)?\/\/([^/?#]*)/i;

// A host without its port (an IPv6 literal keeps its brackets), in
// lower case; undefined when the authority carries userinfo.
function hostOf(authority) {
  if (authority.includes("@")) return undefined;
  const host = authority.startsWith("[") ? authority.slice(0, authority.indexOf("]") + 1) : authority.replace(/:[0-9]*$/, "");
  return host.toLowerCase();
}

// The Location the client should get for an origin's `location`, or
// undefined to leave it as it is. The origin sees its own tunnel hostname
// in Host, so an app that builds absolute redirects from Host (nginx's
// default directory redirect, `http://primary.example.com:8080/dir/`)
// would send the client straight to that origin, past the Worker and its
// failover, and show it the tunnel's hostname. A Location whose host is
// the origin's own (any scheme of http and https, any port) gets the
// site's scheme and host instead, its path, query and fragment kept.
// Anything else (relative, another host, userinfo) is the app's business.
export function publicLocation(location, originUrl, requestUrl) {
  const m = ABSOLUTE_HTTP.exec(location);
  if (m === null) return undefined;
  const target = hostOf(m[1]);
  const origin = ABSOLUTE_HTTP.exec(originUrl);
  if (target === undefined || origin === null || target === "" || target !== hostOf(origin[1])) return undefined;
  const site = ABSOLUTE_HTTP.exec(requestUrl);
  if (site === null) return undefined;
  return site[0] + location.slice(m[0].length);
}

// The headers an attempt carries (both paths; Rust through
// src/js_bridge.rs): a copy of the client's, without its hop-by-hop
// headers (`dropHopByHop`), with X-Forwarded-Host (the host the client
// asked for, its port included) and X-Forwarded-Proto (http or https) set
// from the request URL, so the origin can build absolute links to the
// public site; whatever the client sent under those names is replaced,
// since only the Worker knows. With `accessId`, an origin's Access service
// token replaces any the client sent. With `dropAuthorization` (the full
// path's decision: the header carries the Worker's own STATUS_TOKEN or
// ADMIN_TOKEN, failover_core::secret::carries_any), Authorization stays
// with the Worker. The client's Host header still rides along (see
// attempt_js).
export function forward_headers(client, requestUrl, accessId, accessSecret, dropAuthorization) {
  const headers = new Headers(client);
  dropHopByHop(headers);
  if (dropAuthorization === true) headers.delete("authorization");
  const scheme = requestUrl.indexOf("://");
  if (scheme > 0) {
    // request.url is as the runtime serialized it, always with a path: the
    // first "/" after the scheme ends the authority (lease.mjs relies on the
    // same), and a "@" before it ends any userinfo.
    let end = requestUrl.indexOf("/", scheme + 3);
    if (end < 0) end = requestUrl.length;
    const at = requestUrl.lastIndexOf("@", end);
    headers.set("x-forwarded-host", requestUrl.slice(at > scheme ? at + 1 : scheme + 3, end));
    headers.set("x-forwarded-proto", requestUrl.slice(0, scheme));
  }
  if (accessId !== undefined) {
    headers.set("cf-access-client-id", accessId);
    headers.set("cf-access-client-secret", accessSecret);
  }
  return headers;
}

// Names a client's Connection may not remove (hop_by_hop::KEPT), the ones
// the runtime's fetch never sends anyway (hop_by_hop::BY_THE_RUNTIME) and
// the option that names no header (hop_by_hop::OPTIONS).
const SKIPPED = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "x-forwarded-host",
  "x-forwarded-proto",
  "cf-access-client-id",
  "cf-access-client-secret",
  "connection",
  "keep-alive",
  "te",
  "trailer",
  "upgrade",
  "close",
  "cf-connecting-ip",
  "cf-connecting-ipv6",
  "true-client-ip",
  "x-forwarded-for",
  "x-real-ip",
  "cf-ipcountry",
  "cf-ray",
  "cf-visitor",
  "cf-access-jwt-assertion",
]);
// An RFC 9110 token (hop_by_hop::is_field_name): anything else names no
// header, and Headers.delete would throw on it.
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;

// Removes what belongs to the client's connection to the Worker, not to
// the request (RFC 9110 section 7.6.1), as failover_core::edge::hop_by_hop
// specifies and tests/fixtures/fast-path.json `hop_by_hop` holds both
// languages to: Proxy-Connection, and the headers Connection names.
// Connection itself, Keep-Alive, TE, Trailer and Upgrade (but a
// WebSocket's) the runtime's fetch never sends (hop_by_hop::BY_THE_RUNTIME;
// tests/hop-by-hop.test.mjs holds it to that at a real origin): removing
// them here too cost four more calls into the runtime per request
// (bench/README.md, "Issue #28"). `Connection: keep-alive` or `close`,
// what HTTP/1.1 clients send, names nothing to remove.
export function dropHopByHop(headers) {
  const connection = headers.get("connection");
  if (connection !== null) {
    const value = connection.toLowerCase();
    if (value !== "keep-alive" && value !== "close") dropNamed(headers, value);
  }
  headers.delete("proxy-connection");
}

function dropNamed(headers, connection) {
  for (const part of connection.split(",")) {
    const name = part.trim();
    if (FIELD_NAME.test(name) && !SKIPPED.has(name)) headers.delete(name);
  }
}

// Whether a failed attempt's 530 is Cloudflare saying the Tunnel has no
// connector (error 1033, its plain or HTML error page, or the JSON body it
// sends when asked): evidence against the origin's whole node
// (src/proxy.rs). An app's own 530, passed through a tunnel that works,
// is not. Reads at most 4 KiB of a clone's body; resolves to a boolean,
// never rejects.
export async function no_connector_js(res) {
  if (res == null || res.status !== 530 || res.body === null) return false;
  try {
    const reader = res.clone().body.getReader();
    const chunks = [];
    let size = 0;
    while (size < 4096) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
    reader.cancel().catch(() => {});
    // At most 4 KiB, however large the chunks came.
    const bytes = new Uint8Array(Math.min(size, 4096));
    let at = 0;
    for (const c of chunks) {
      if (at >= bytes.length) break;
      const part = c.subarray(0, bytes.length - at);
      bytes.set(part, at);
      at += part.byteLength;
    }
    return /(?:\berror code:? *|"error_code": *)1033\b|\bError 1033\b/.test(new TextDecoder().decode(bytes));
  } catch {
    return false;
  }
}
