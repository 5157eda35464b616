// Floor 1 of `make bench`: the least a Worker in front of one origin can do.
// It forwards the request and hands back the origin's response as it is: no
// attempt timeout, no header of its own, no health, no steering. The
// product's req/s over this one's, in the same rounds, is what all of its
// work costs. Bench-only; bindings: ORIGIN (scheme://authority, no path).
//
// The URL is joined the way the product's fast path joins it
// (src/js/lease.mjs `upstreamUrl`): after "scheme://", the first "/" starts
// the path, appended to the origin. `new URL(path, ORIGIN)` gives the same
// URL for these requests but parses twice, and a floor must not cost more
// than what it is the floor of.
export default {
  fetch(request, env) {
    const url = request.url;
    const path = url.indexOf("/", url.indexOf("://") + 3);
    return fetch(env.ORIGIN + url.slice(path), request);
  },
};
