// Request paths that try to steer a proxy to another host. Sent raw through
// the whole Worker (forwarding.test.mjs) and into the fast path's URL join
// on its own (lease.test.mjs).
export const HOSTILE_PATHS = [
  "//evil.example/x",
  "/@evil.example",
  "/%2F%2Fevil.example",
  "/..%2F..%2Fevil.example",
  "/http://evil.example/",
  "/%5Cevil.example",
  "/\\\\evil.example/",
  "/?@evil.example",
  "/.evil.example",
  "/:1@evil.example",
];
