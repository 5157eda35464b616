#!/usr/bin/env bash
# `make build`: the Worker to build/index.js + two Wasm modules, with the
# same tools worker-build drives (cargo, wasm-bindgen, wasm-opt, esbuild) but
# our own module entry (src/js/entry.mjs; see why there):
# - build/index_bg.wasm, the request path, which every isolate instantiates;
# - build/operator_bg.wasm, the same crate with `--features operator`: the
#   global checker's Durable Object and the status page's renderers,
#   instantiated only where they are used (src/operator/mod.rs). Expects the
# toolchain on PATH and WASM_BINDGEN_BIN / WASM_OPT_BIN / ESBUILD_BIN set, as
# scripts/toolchain.sh does.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
# WORKER_FEATURES / WORKER_OUT: a test build (e.g. panic-test) into a
# directory of its own, beside the real one.
FEATURES=${WORKER_FEATURES:-}
OUT=${WORKER_OUT:-$ROOT/build}
STAGE=$TARGET_DIR/worker-stage${FEATURES:+-$FEATURES}

WASM_FEATURES=(--enable-bulk-memory --enable-mutable-globals --enable-nontrapping-float-to-int
  --enable-sign-ext --enable-reference-types --enable-multivalue --enable-exception-handling)

# One module: cargo with `features`, wasm-bindgen for `target` into `dir`
# as `name`.js + `name`_bg.wasm, the Wasm optimised into $OUT.
build_module() {
  local features=$1 target=$2 dir=$3 name=$4
  cargo build --release --target wasm32-unknown-unknown -p tunnel-failover ${features:+--features "$features"}
  # The flags worker-build passes: the reset-state function and abort
  # handler are what make panic recovery possible.
  "$WASM_BINDGEN_BIN" "$TARGET_DIR/wasm32-unknown-unknown/release/tunnel_failover.wasm" \
    --out-dir "$dir" --out-name "$name" --target "$target" --no-typescript \
    --experimental-reset-state-function --force-enable-abort-handler
  # The features rustc's wasm32 target emits, plus exception handling for
  # wasm-bindgen's abort handler. Stripping the names section saves ~23 KB
  # gzip; a panic (there should be none) then shows wasm-function[N] names.
  node "$ROOT/scripts/strip-exports.mjs" "$dir/${name}_bg.wasm" "$dir/${name}_bg.stripped.wasm"
  "$WASM_OPT_BIN" "$dir/${name}_bg.stripped.wasm" -O --strip-debug --strip-producers -o "$OUT/${name}_bg.wasm" "${WASM_FEATURES[@]}"
}

rm -rf "$STAGE"
mkdir -p "$STAGE/operator" "$OUT"
# The request path: instantiated when its glue is imported (`module`).
build_module "$FEATURES" module "$STAGE" index
# workerd imports a .wasm module with a plain import, not a source-phase one.
# (Not `sed -i`, whose syntax differs between GNU and BSD/macOS sed.) And
# wasm-bindgen 0.2.130 lists a snippet module that Rust imports functions
# from directly twice in the Wasm's import object (colo.mjs, as two
# namespace imports of the same module, so the same object): the second
# key goes, or esbuild warns about a duplicate key on every build.
sed 's/^import source /import /' "$STAGE/index.js" |
  awk '/^[[:space:]]*"\.\/snippets\/[^"]*": import[0-9]+,$/ { key = $1; if (seen[key]++) next } { print }' >"$STAGE/index.js.tmp"
mv "$STAGE/index.js.tmp" "$STAGE/index.js"
# The operator module: `web`, whose glue instantiates nothing until
# entry.mjs calls its initSync with the module workerd compiled. In a
# directory of its own, so that its copies of the JS it imports (above
# all the worker crate's init state, which a panic marks) are its own,
# and a panic in it never resets the request path's instance.
build_module "operator${FEATURES:+,$FEATURES}" web "$STAGE/operator" operator

# Every module of src/js must exist once, so that state the Rust side and
# the fast path share (the lease, silence) is one object. wasm-bindgen
# copies the modules Rust imports under snippets/<crate>/src/js/; the
# others (those only entry.mjs or a snippet imports) are copied beside
# them, and entry.mjs, the one module outside, reaches each through a
# re-export stub of its name. Nothing here lists the modules: a new one in
# src/js is picked up by itself.
snippet_dir=$(cd "$STAGE" && dirname "$(ls snippets/*/src/js/lease.mjs)")
cp "$ROOT/src/js/entry.mjs" "$STAGE/"
for path in "$ROOT"/src/js/*.mjs; do
  module=$(basename "$path" .mjs)
  [ "$module" = entry ] && continue
  [ -e "$STAGE/$snippet_dir/$module.mjs" ] || cp "$path" "$STAGE/$snippet_dir/"
  echo "export * from \"./$snippet_dir/$module.mjs\";" >"$STAGE/$module.mjs"
  # The operator module's own copies, complete in the same way.
  [ -e "$STAGE/operator/$snippet_dir/$module.mjs" ] || cp "$path" "$STAGE/operator/$snippet_dir/"
done
"$ESBUILD_BIN" "$STAGE/entry.mjs" --bundle --format=esm --minify \
  --external:./index_bg.wasm --external:./operator_bg.wasm --external:'cloudflare:*' \
  --outfile="$OUT/index.js" --log-level=warning
rm -rf "$OUT/worker" "$OUT/package.json"
kb() { du -k "$1" | cut -f1; }
echo "built $(kb "$OUT/index_bg.wasm") KB request-path wasm, $(kb "$OUT/operator_bg.wasm") KB operator wasm, $(kb "$OUT/index.js") KB js into $OUT" >&2
