#!/usr/bin/env bash
# `make build`: the Worker to build/index.js + build/index_bg.wasm, with the
# same tools worker-build drives (cargo, wasm-bindgen, wasm-opt, esbuild) but
# our own module entry (src/js/entry.mjs; see why there). Expects the
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

cargo build --release --target wasm32-unknown-unknown -p tunnel-failover ${FEATURES:+--features "$FEATURES"}
rm -rf "$STAGE"
mkdir -p "$STAGE" "$OUT"
# The flags worker-build passes: the reset-state function and abort handler
# are what make panic recovery possible.
"$WASM_BINDGEN_BIN" "$TARGET_DIR/wasm32-unknown-unknown/release/tunnel_failover.wasm" \
  --out-dir "$STAGE" --out-name index --target module --no-typescript \
  --experimental-reset-state-function --force-enable-abort-handler
# workerd imports a .wasm module with a plain import, not a source-phase one.
# (Not `sed -i`, whose syntax differs between GNU and BSD/macOS sed.)
sed 's/^import source /import /' "$STAGE/index.js" >"$STAGE/index.js.tmp"
mv "$STAGE/index.js.tmp" "$STAGE/index.js"
# The features rustc's wasm32 target emits, plus exception handling for
# wasm-bindgen's abort handler. Stripping the names section saves ~23 KB
# gzip; a panic (there should be none) then shows wasm-function[N] names.
"$WASM_OPT_BIN" "$STAGE/index_bg.wasm" -O --strip-debug --strip-producers -o "$OUT/index_bg.wasm" \
  --enable-bulk-memory --enable-mutable-globals --enable-nontrapping-float-to-int \
  --enable-sign-ext --enable-reference-types --enable-multivalue --enable-exception-handling
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
done
"$ESBUILD_BIN" "$STAGE/entry.mjs" --bundle --format=esm --minify \
  --external:./index_bg.wasm --external:'cloudflare:*' --outfile="$OUT/index.js" --log-level=warning
rm -rf "$OUT/worker" "$OUT/package.json"
echo "built $(du -k "$OUT/index_bg.wasm" | cut -f1) KB wasm, $(du -k "$OUT/index.js" | cut -f1) KB js into $OUT" >&2
