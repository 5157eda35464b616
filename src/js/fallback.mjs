// The fallback page's plumbing (FALLBACK): one fetch of it, and the 503
// the client gets. Every choice (whether a request gets it, which redirect
// to follow, which answer is the page) is Rust's, in
// failover_core::edge::fallback; src/fallback.rs drives these two through
// src/js_bridge.rs. Off the fast path: only a request that found no origin
// answering comes here.
import { REFUSED, TIMED_OUT } from "./rules.mjs";

// One GET or HEAD of `url` as it is: none of the client's headers (its
// cookies are the site's, not the status host's), redirects handed back
// for Rust to judge, aborted after `timeoutMs` without response headers
// (an abort costs nothing that matters here, and a hung status host must
// not hold a connection past the client's request). Resolves like
// attempt_js: the Response, TIMED_OUT, REFUSED or the error's message;
// never rejects.
export function fallback_fetch_js(url, method, timeoutMs) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  return fetch(url, { method, redirect: "manual", signal: ctl.signal }).then(
    (res) => {
      clearTimeout(timer);
      return res;
    },
    (err) => {
      clearTimeout(timer);
      if (ctl.signal.aborted) return TIMED_OUT;
      return err instanceof TypeError ? REFUSED : String(err && err.message !== undefined ? err.message : err);
    },
  );
}

// The client's answer: 503 with Retry-After, x-failover: fallback and no
// caching, the body the fetched page's stream as it arrives (a page of any
// size passes through, never held) or the configured page's text. Of the
// fetched page's headers only what says how to read the body is kept: a
// status host's Set-Cookie, HSTS, CSP or CORS headers must not speak for
// the site whose name it is served under.
export function fallback_response_js(res, page, retryAfterS) {
  const headers = new Headers();
  let body = null;
  if (res !== undefined && res !== null) {
    for (const name of ["content-type", "content-language"]) {
      const value = res.headers.get(name);
      if (value !== null) headers.set(name, value);
    }
    body = res.body;
  } else {
    headers.set("content-type", "text/html; charset=utf-8");
    body = page;
  }
  headers.set("retry-after", String(retryAfterS));
  headers.set("x-failover", "fallback");
  headers.set("cache-control", "no-store");
  return new Response(body, { status: 503, headers });
}
