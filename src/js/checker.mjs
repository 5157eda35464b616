// The global checker's Durable Object as the request path reaches it
// (src/checker.rs): its binding, its one object's id, and one request to
// it. Rust names the binding and the object (failover_core::edge::consult
// BINDING and OBJECT_NAME); nothing here decides anything. In JS because
// workers-rs's namespace, stub, request and response wrappers, and the
// error type they share, cost the request path's Wasm some 9 KB gzipped
// for three calls.

// The binding's namespace, or null when `env` has none by that name (the
// global checker is off) or it is not a Durable Object namespace.
function namespace(env, binding) {
  const ns = env[binding];
  return ns && typeof ns.idFromName === "function" ? ns : null;
}

export function checker_bound_js(env, binding) {
  return namespace(env, binding) !== null;
}

// The object's id as text, or null without the binding.
export function checker_id_js(env, binding, object) {
  const ns = namespace(env, binding);
  if (ns === null) return null;
  // A binding that is not a Durable Object namespace (a misconfigured
  // wrangler.toml) must not throw into Wasm: the caller treats null as
  // "no checker".
  try {
    return ns.idFromName(object).toString();
  } catch (e) {
    return null;
  }
}

// One request to the object: `method` to `url` with `body` (a string, or
// null). Resolves to [status, text, the `header` of the answer or null],
// or to a string that says why there is no answer (no binding, or the
// error's message); never rejects.
export function checker_fetch_js(env, binding, object, url, method, body, header) {
  const ns = namespace(env, binding);
  if (ns === null) return Promise.resolve(`no ${binding} binding`);
  let sent;
  try {
    // A throw anywhere here (a namespace or stub that is not what it
    // should be) is an answer-less call, never an exception into Wasm.
    sent = Promise.resolve(ns.get(ns.idFromName(object)).fetch(url, body === null ? { method } : { method, body }));
  } catch (e) {
    return Promise.resolve(String(e?.message ?? e));
  }
  return sent
    .then((res) => res.text().then((text) => [res.status, text, header === null ? null : res.headers.get(header)]))
    .catch((e) => String(e?.message ?? e));
}
