// Which site a request belongs to, by its host, when the Worker serves
// several (SITES): the fast path's twin of failover_core::edge::config::
// HostTable::site_for (with hosts::host_of_url), held to the same rows
// (tests/fixtures/fast-path.json `hosts`; crates/failover-core/tests/
// fast_path_fixture.rs and tests/lease.test.mjs). `hosts` is what
// src/fast.rs `host_table` hands over once per instance: `names` and
// `wildcards` (Maps from a lower-case host, or what follows "*.", to the
// site) and `any` (the "*" site, or -1). A Map lookup or two: the cost
// does not grow with the number of sites.

// The site of `url` (request.url as the runtime serializes it), or -1
// when no site claims its host (the full path answers 421).
export function siteOf(url, hosts) {
  const start = url.indexOf("://") + 3;
  let end = start;
  while (end < url.length) {
    const c = url.charCodeAt(end);
    // "/", "\", "?" or "#" ends the authority (hosts::host_of_url).
    if (c === 47 || c === 92 || c === 63 || c === 35) break;
    end++;
  }
  let host = url.slice(start, end);
  const at = host.lastIndexOf("@");
  if (at >= 0) host = host.slice(at + 1);
  host = withoutPort(host).toLowerCase();
  if (host.endsWith(".")) host = host.slice(0, -1);
  const named = hosts.names.get(host);
  if (named !== undefined) return named;
  const dot = host.indexOf(".");
  if (dot >= 0) {
    const wild = hosts.wildcards.get(host.slice(dot + 1));
    if (wild !== undefined) return wild;
  }
  return hosts.any;
}

// `host` without a ":port" (an IPv6 literal keeps its brackets).
function withoutPort(host) {
  if (host.startsWith("[")) {
    const close = host.indexOf("]");
    if (close >= 0) return host.slice(0, close + 1);
  }
  const colon = host.lastIndexOf(":");
  return colon < 0 ? host : host.slice(0, colon);
}
