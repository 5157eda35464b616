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
sed -i 's/^import source /import /' "$STAGE/index.js"
# The features rustc's wasm32 target emits, plus exception handling for
# wasm-bindgen's abort handler. Stripping the names section saves ~23 KB
# gzip; a panic (there should be none) then shows wasm-function[N] names.
"$WASM_OPT_BIN" "$STAGE/index_bg.wasm" -O --strip-debug --strip-producers -o "$OUT/index_bg.wasm" \
  --enable-bulk-memory --enable-mutable-globals --enable-nontrapping-float-to-int \
  --enable-sign-ext --enable-reference-types --enable-multivalue --enable-exception-handling
cp "$ROOT/src/js/entry.mjs" "$ROOT/src/js/route.mjs" "$ROOT/src/js/steer.mjs" "$STAGE/"
# entry.mjs must import the very modules the Rust side imports (wasm-bindgen
# copies them under snippets/): lease.mjs holds state both sides share.
# attempt.mjs imports rules.mjs, which wasm-bindgen does not copy along
# with the snippet: it goes beside it, and entry.mjs re-exports that copy.
snippet_dir=$(cd "$STAGE" && dirname "$(ls snippets/*/src/js/attempt.mjs)")
cp "$ROOT/src/js/rules.mjs" "$STAGE/$snippet_dir/"
for module in attempt lease rules silence; do
  snippet=$(cd "$STAGE" && ls snippets/*/src/js/$module.mjs)
  echo "export * from \"./$snippet\";" >"$STAGE/$module.mjs"
done
"$ESBUILD_BIN" "$STAGE/entry.mjs" --bundle --format=esm --minify \
  --external:./index_bg.wasm --external:'cloudflare:*' --outfile="$OUT/index.js" --log-level=warning
rm -rf "$OUT/worker" "$OUT/package.json"
echo "built $(du -k "$OUT/index_bg.wasm" | cut -f1) KB wasm, $(du -k "$OUT/index.js" | cut -f1) KB js into $OUT" >&2
