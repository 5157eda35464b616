// bench/js-count.sh: stands in for the operator module's glue
// (build/operator/operator.js), which src/js/entry.mjs imports beside its
// Wasm. The fast path never instantiates it (the Durable Object and the
// status page's HTML/text do): any call here means a request left the
// fast path, and the count stops there, as in wasm.mjs.
function notFastPath() {
  throw new Error("js-count: the operator module was instantiated; that is not the fast path");
}
export const initSync = notFastPath;
export const __worker_init_state = notFastPath;
export const __wbg_reset_state = notFastPath;
