// What the fast path makes of an attempt's result: the JS twins of
// failover_core::edge::classify (`classify_response`, `is_access_login`). Both
// sides are held to tests/fixtures/fast-path.json, by
// crates/failover-core/tests/fast_path_fixture.rs and tests/lease.test.mjs:
// change a rule here and there together, with a fixture row.

// What attempt_js (attempt.mjs) resolves to when it has no Response; any
// other non-Response is the fetch error's message. src/forward.rs
// (`sent_from_js`) reads the same two numbers.
export const TIMED_OUT = 0; // our timer fired before the response headers came
export const REFUSED = 1; // fetch threw a TypeError: the runtime would not send it

const ACCESS_LOGIN_DOMAIN = ".cloudflareaccess.com";
// Only the login page means "Access turned the request away"; the team
// root, /cdn-cgi/access/logout (an app's Post/Redirect/Get after
// POST /logout) and every other path are the app's own redirects.
const ACCESS_LOGIN_PATH = "/cdn-cgi/access/login";
// One DNS label: Access names a team's login host <team>.cloudflareaccess.com.
const TEAM = /^[a-z0-9-]+$/;

// Whether a Location header (any scheme) points to the login page of a
// Cloudflare Access team domain: the host <team>.cloudflareaccess.com and a
// path that begins with /cdn-cgi/access/login. The URL parser finds the host, so the name elsewhere
// (path, query, userinfo, a longer host) does not count; a relative
// Location, which stays on the origin, never does.
export function isAccessLogin(location) {
  if (typeof location !== "string") return false;
  let url;
  try {
    url = new URL(location);
  } catch {
    return false;
  }
  const host = url.hostname.toLowerCase();
  if (!host.endsWith(ACCESS_LOGIN_DOMAIN)) return false;
  return TEAM.test(host.slice(0, -ACCESS_LOGIN_DOMAIN.length)) && url.pathname.startsWith(ACCESS_LOGIN_PATH);
}

// Whether a response is the origin's answer for the client, or a failed
// attempt to hand to the full path. Every 5xx fails (Cloudflare's 520-527
// and a down Tunnel's 530 included); so does a redirect to an Access login
// page (its login path only), which means our service token is missing or wrong: Access stopped
// the request, and the client could not log in there on our behalf.
// `location` is the Location header or null; it is read only for 302, 303
// and 307.
export function isAnswer(status, location) {
  // 5xx, and what no Response can carry: an interim 1xx but a WebSocket's
  // 101 (workerd resolves with an origin's 100 or 103), 600 and above.
  if (status >= 500 || (status < 200 && status !== 101)) return false;
  if (status === 302 || status === 303 || status === 307) return !isAccessLogin(location);
  return true;
}
