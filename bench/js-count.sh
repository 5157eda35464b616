#!/usr/bin/env bash
# The fast path's own JavaScript, counted: src/js/entry.mjs bundled with a
# stand-in for the Wasm (bench/js-count/wasm.mjs) and run in Node against
# stand-ins for the runtime's Headers, Response and fetch
# (bench/js-count/runtime.mjs), N plain GETs one after another, under
# `valgrind --tool=callgrind`: (total(2000 + N) - total(2000)) / N
# instructions per request. In V8's interpreter (`node --jitless`) by
# default, which is where a small site's requests run (bench/README.md:
# the sparse regime), and with the JIT too when JS_COUNT_JIT=1.
#
# Why: `make bench-cost` cannot resolve a change of 1-2 k instructions per
# request (a process's count lands on one of two levels ~15 k apart, by
# how V8's tiering went in it); this count of the same JavaScript with
# everything else held still can (three alternating runs of two builds
# agree within 0.5 k). Its figure includes the stand-ins' own cost: compare
# two sources with it, never its figure with a workerd one.
#
#   bash bench/js-count.sh [SRC_JS_DIR]   (default src/js; e.g. a copy from
#                                          `git archive REV src/js`)
# Environment: JS_COUNT_N (20000), JS_COUNT_JIT=1 (also count with the
# JIT), JS_COUNT_STEER (a STEERING policy for the stand-in's config, e.g.
# weighted), JS_COUNT_COLO=off (no colo reads allowed: `COLO_HEALTH=off`).
# Expects the toolchain on PATH and ESBUILD_BIN (source
# scripts/toolchain.sh && ensure_tools), and valgrind.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=${1:-$ROOT/src/js}
N=${JS_COUNT_N:-20000}
WARM=2000
[ -f "$SRC/entry.mjs" ] || { echo "bench/js-count.sh: no entry.mjs in $SRC" >&2; exit 1; }
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "bench/js-count.sh: JS_COUNT_N: '$N' is not a whole number of requests" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "bench/js-count.sh: valgrind is not on PATH (sudo apt-get install -y valgrind)" >&2; exit 1; }
: "${ESBUILD_BIN:?bench/js-count.sh: ESBUILD_BIN is unset (source scripts/toolchain.sh && ensure_tools)}"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tunnel-failover-js-count.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/js"
cp "$SRC"/*.mjs "$WORK/js/"
# entry.mjs imports wasm-bindgen's glue as ./index.js.
cp "$ROOT/bench/js-count/wasm.mjs" "$WORK/js/index.js"
# ... and the operator module's glue and Wasm, which the fast path never
# instantiates: a stand-in that throws if it is, and an empty module.
mkdir "$WORK/js/operator"
cp "$ROOT/bench/js-count/operator.mjs" "$WORK/js/operator/operator.js"
: >"$WORK/js/operator_bg.wasm"
"$ESBUILD_BIN" "$WORK/js/entry.mjs" --bundle --format=esm --minify --platform=neutral --loader:.wasm=empty \
  --outfile="$WORK/bundle.mjs" --log-level=warning

total() { # REQUESTS NODE_FLAGS... -> instructions of the whole node process
  local requests=$1
  shift
  valgrind --tool=callgrind --callgrind-out-file=/dev/null node "$@" \
    --import "$ROOT/bench/js-count/runtime.mjs" "$ROOT/bench/js-count/client.mjs" "$WORK/bundle.mjs" "$requests" 2>&1 |
    sed -n 's/.*Collected : //p'
}

per_request() { # NODE_FLAGS...
  local before after
  before=$(total "$WARM" "$@")
  after=$(total $((WARM + N)) "$@")
  [ -n "$before" ] && [ -n "$after" ] || { echo "bench/js-count.sh: node failed under valgrind" >&2; exit 1; }
  echo $(((after - before) / N))
}

echo "fast path JS, interpreter (node --jitless): $(per_request --jitless) instructions per request ($SRC)"
if [ "${JS_COUNT_JIT:-}" = 1 ]; then
  echo "fast path JS, with the JIT:                 $(per_request) instructions per request ($SRC)"
fi
