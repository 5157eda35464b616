// The operator module (build/operator_bg.wasm: src/operator/ in Rust) as
// the request path reaches it. entry.mjs, which imports that module's
// glue, hands over the function that instantiates it on first use
// (`provideOperator`); nothing here instantiates anything at load, so an
// isolate that only ever serves requests never pays for it.

let load = () => {
  throw new Error("the operator module was not provided (src/js/entry.mjs)");
};

export function provideOperator(loader) {
  load = loader;
}

// The status page as HTML or text (src/status.rs): `representation` is
// "html" or "text", `doc` the status document as JSON. Throws a plain
// Error when the module cannot be had or fails, which Rust catches. Never
// the module's own trap: a WebAssembly.RuntimeError stays uncatchable by
// Wasm when it crosses into another module, and would unwind through the
// request path's instance and take it down with it.
export function render_status_js(representation, doc) {
  try {
    return load().render_status(representation, doc);
  } catch (e) {
    throw new Error(`the operator module failed: ${e?.message ?? e}`);
  }
}
