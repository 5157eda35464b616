#!/usr/bin/env bash
# The release's Worker bundle deploys with Node alone: unpacked into an
# empty temporary directory (no repository around it), with a PATH that
# holds Node and nothing else (no cargo, rustc, rustup, wasm-bindgen, make,
# git) and an empty environment (no Cloudflare credentials, a fresh HOME),
# `wrangler deploy --dry-run` must pass and bundle the bundle's own wasm.
#
# usage: tests/worker-bundle-check.sh [dist/tunnel-failover-worker-<version>.tar.gz]
#
# wrangler is this repository's (node_modules, the version package.json
# pins and the bundle's package.json names), run by absolute path: the
# check is about what the bundle needs, not about downloading wrangler.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
failures=0
ok() { printf 'ok      %s\n' "$*"; }
not_ok() {
  printf 'NOT OK  %s\n' "$*"
  failures=$((failures + 1))
}

tarball=${1:-}
if [ -z "$tarball" ]; then
  shopt -s nullglob
  found=("$ROOT"/dist/tunnel-failover-worker-*.tar.gz)
  shopt -u nullglob
  [ ${#found[@]} -eq 1 ] || {
    echo "error: expected one dist/tunnel-failover-worker-*.tar.gz, found ${#found[@]}; run make worker-bundle, or name one" >&2
    exit 1
  }
  tarball=${found[0]}
fi
tarball=$(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball")
name=$(basename "$tarball" .tar.gz)
wrangler="$ROOT/node_modules/wrangler/bin/wrangler.js"
[ -f "$wrangler" ] || { echo "error: no $wrangler; npm ci first (make build does)" >&2; exit 1; }
node=$(command -v node) || { echo "error: no node on PATH (source scripts/toolchain.sh && ensure_tools)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/worker-bundle-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/home" "$tmp/unpacked"
ln -s "$node" "$tmp/bin/node"

echo "== $(basename "$tarball")"
tar -xzf "$tarball" -C "$tmp/unpacked"
dir=$tmp/unpacked/$name
if [ -d "$dir" ] && [ "$(ls -A "$tmp/unpacked")" = "$name" ]; then
  ok "one top directory, $name/"
else
  not_ok "the archive's top level is not $name/ alone: $(ls -A "$tmp/unpacked" | tr '\n' ' ')"
  exit 1
fi

expected=".dev.vars.example LICENSE README.md index.js index_bg.wasm operator_bg.wasm package.json wrangler.toml"
got=$(cd "$dir" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort | tr '\n' ' ')
if [ "$got" = "$expected " ]; then ok "files: $expected"; else not_ok "files: $got (expected $expected)"; fi

if grep -qx 'main = "index.js"' "$dir/wrangler.toml" && ! grep -q '^\[build\]' "$dir/wrangler.toml"; then
  ok "wrangler.toml: main = \"index.js\", no [build]"
else
  not_ok "wrangler.toml must say main = \"index.js\" and have no [build] (nothing to build here)"
fi
if grep -q '^\[secrets\]' "$dir/wrangler.toml" && grep -q '^compatibility_date = ' "$dir/wrangler.toml"; then
  ok "wrangler.toml keeps [secrets] and compatibility_date"
else
  not_ok "wrangler.toml lost [secrets] or compatibility_date"
fi
pinned=$(node -p 'require(process.argv[1]).devDependencies.wrangler' "$dir/package.json")
ours=$(node -p 'require(process.argv[1]).devDependencies.wrangler' "$ROOT/package.json")
if [ "$pinned" = "$ours" ]; then ok "package.json pins wrangler $pinned"; else not_ok "package.json pins wrangler $pinned, the tests use $ours"; fi

# Nothing from a build machine: no Rust, no make, no git, no repository.
env_path=$tmp/bin
leaked=$(PATH=$env_path command -v cargo rustc rustup wasm-bindgen make git 2>/dev/null || true)
if [ -z "$leaked" ]; then ok "PATH holds node only"; else not_ok "PATH still reaches: $leaked"; fi
up=$dir
while [ "$up" != / ]; do
  if [ -e "$up/.git" ] || [ -e "$up/Cargo.toml" ]; then
    not_ok "$up has a .git or Cargo.toml: the bundle is not alone"
    break
  fi
  up=$(dirname "$up")
done

out=$tmp/out
log=$tmp/wrangler.log
if (cd "$dir" && env -i PATH="$env_path" HOME="$tmp/home" CI=1 WRANGLER_SEND_METRICS=false \
  "$tmp/bin/node" "$wrangler" deploy --dry-run --outdir "$out") >"$log" 2>&1; then
  ok "wrangler deploy --dry-run from the unpacked bundle (Node $("$node" --version), no Rust)"
else
  not_ok "wrangler deploy --dry-run failed:"
  sed 's/^/     /' "$log"
fi
# Each of the bundle's Wasm modules is in the upload as it is (wrangler
# names them by hash there).
uploaded() {
  local w
  while IFS= read -r w; do cmp -s "$w" "$dir/$1" && return 0; done < <(find "$out" -name '*.wasm' 2>/dev/null)
  return 1
}
if uploaded index_bg.wasm && uploaded operator_bg.wasm && [ -s "$out/index.js" ]; then
  ok "the upload holds index.js and the bundle's index_bg.wasm and operator_bg.wasm, byte for byte"
else
  not_ok "the dry run's output ($out) lacks index.js or the bundle's wasm"
  ls -la "$out" 2>/dev/null | sed 's/^/     /'
fi

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
