#!/usr/bin/env bash
# `make worker-bundle`: the built Worker as a release file, so deploying it
# needs Node and wrangler only (no Rust, no wasm-bindgen, no clone):
#
#   dist/tunnel-failover-worker-<version>.tar.gz
#     tunnel-failover-worker-<version>/
#       index.js, index_bg.wasm, operator_bg.wasm, and any other file
#       index.js imports
#       wrangler.toml       this repository's, for the bundle: main =
#                           "index.js", no [build] (there is nothing to build),
#                           make commands in its comments turned into wrangler's
#       .dev.vars.example   secrets for `wrangler dev`
#       package.json        wrangler pinned to the version the tests use
#       README.md           packaging/worker/README.md: the four commands
#       LICENSE
#
# usage: scripts/worker-bundle.sh              (after `make build`)
#        DIST_DIR=target/bundle-test scripts/worker-bundle.sh
#
# Then SHA256SUMS in the same directory covers it and the agent's files
# (scripts/dist.sh writes the same list). Every run first deletes the
# bundles a previous run left there. Same commit, same bytes: file times
# come from the last commit (SOURCE_DATE_EPOCH), owners and order are fixed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIST=${DIST_DIR:-$ROOT/dist}
BUILD=${WORKER_BUILD:-$ROOT/build}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

step() { printf '==> %s\n' "$*" >&2; }
fail() {
  printf 'error: %s\n' "$1" >&2
  shift
  local how
  for how in "$@"; do printf '       %s\n' "$how" >&2; done
  exit 1
}

for f in index.js index_bg.wasm operator_bg.wasm; do
  [ -s "$BUILD/$f" ] || fail "no $BUILD/$f" "make build"
done

# The Worker's version, as its status endpoint reports it (the workspace's).
VERSION=$(bash "$ROOT/scripts/version.sh")
WRANGLER_VERSION=$(node -p 'require(process.argv[1]).devDependencies.wrangler' "$ROOT/package.json") ||
  fail "could not read wrangler's version from package.json" "node -p \"require('./package.json').devDependencies.wrangler\""

NAME=tunnel-failover-worker-$VERSION
STAGE=$TARGET_DIR/worker-bundle/$NAME
rm -rf "$TARGET_DIR/worker-bundle" "$DIST"/tunnel-failover-worker-*.tar.gz
mkdir -p "$STAGE" "$DIST"

# What the bundle imports besides the runtime's own modules (cloudflare:*,
# node:*): esbuild leaves only the two Wasm modules outside today, but a file added
# to the build and imported by name must travel too, or the deploy breaks
# with "could not resolve". Static imports only: the entry has no dynamic ones.
mapfile -t imports < <(grep -oE '(from|import) ?"[^"]+"' "$BUILD/index.js" |
  sed -E 's/^(from|import) ?"//; s/"$//' | grep -vE '^(cloudflare|node):' | LC_ALL=C sort -u)
files=(index.js)
for spec in "${imports[@]}"; do
  case $spec in
  ./*) ;;
  *) fail "build/index.js imports '$spec', which is not a file beside it" "bundle it (scripts/build-worker.sh) or mark it external there" ;;
  esac
  [ -f "$BUILD/${spec#./}" ] || fail "build/index.js imports $spec, which is not in $BUILD" "make build"
  files+=("${spec#./}")
done
for wasm in index_bg.wasm operator_bg.wasm; do
  [[ " ${files[*]} " == *" $wasm "* ]] || fail "build/index.js does not import ./$wasm" "make build"
done
for f in "${files[@]}"; do install -m 0644 "$BUILD/$f" "$STAGE/$f"; done

# wrangler.toml for a directory that holds the built Worker and nothing to
# build: the repository's own, so every comment and default stays one text.
awk -v version="$VERSION" '
  NR == 1 {
    print "# The tunnel-failover Worker " version ", built. Edit [vars] and routes below,"
    print "# then `npx wrangler deploy` uploads index.js and its two .wasm as they are."
    print "# Every setting: https://github.com/tunnel-failover/tunnel-failover#worker-settings-vars"
  }
  NR == 1, /^name = / { if (!/^name = /) next }
  /^main = / { print "main = \"index.js\""; next }
  /^\[build\]$/ { skip = 1; next }
  /^\[/ { skip = 0 }
  skip { next }
  {
    gsub(/`make secret NAME=\.\.\.`/, "`npx wrangler secret put <NAME>`")
    gsub(/`make secret NAME=/, "`npx wrangler secret put ")
    gsub(/\(`make origin`\)/, "(the admin API: POST <STATUS_PATH>/origins/<name>)")
    gsub(/`make deploy`/, "`npx wrangler deploy`")
    gsub(/`wrangler dev`/, "`npx wrangler dev`")
    print
  }' "$ROOT/wrangler.toml" >"$STAGE/wrangler.toml"
# A line still naming make, or a build/ path, would send the reader to a
# repository they do not have.
if grep -nE '(^|[^a-z])make |build/' "$STAGE/wrangler.toml" >&2; then
  fail "the bundle's wrangler.toml still names make or build/ (above)" "extend the substitutions in scripts/worker-bundle.sh"
fi
sed -e 's/`make secret NAME=\.\.\.`/`npx wrangler secret put <NAME>`/' -e 's/`make dev` (wrangler dev)/`npx wrangler dev`/' \
  -e 's/(overrides: make origin)/(overrides: the admin API)/' -e 's/under `make dev`/under `npx wrangler dev`/' \
  "$ROOT/.dev.vars.example" >"$STAGE/.dev.vars.example"
if grep -n 'make ' "$STAGE/.dev.vars.example" >&2; then
  fail "the bundle's .dev.vars.example still names make (above)" "extend the substitutions in scripts/worker-bundle.sh"
fi
cat >"$STAGE/package.json" <<JSON
{
  "name": "tunnel-failover-worker",
  "version": "$VERSION",
  "private": true,
  "description": "The tunnel-failover edge Worker, built: npx wrangler deploy",
  "license": "Apache-2.0",
  "scripts": {
    "deploy": "wrangler deploy",
    "dev": "wrangler dev"
  },
  "devDependencies": {
    "wrangler": "$WRANGLER_VERSION"
  },
  "engines": {
    "node": ">=22.12"
  }
}
JSON
install -m 0644 "$ROOT/packaging/worker/README.md" "$STAGE/README.md"
install -m 0644 "$ROOT/LICENSE" "$STAGE/LICENSE"

SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}
tar_flags=()
# GNU tar (Linux, the release runner): a reproducible archive. Another tar
# (macOS) packs the same files, with this machine's times and owners.
if tar --version 2>/dev/null | grep -q 'GNU tar'; then
  tar_flags=(--sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --format=gnu)
fi
tar -C "$(dirname "$STAGE")" "${tar_flags[@]}" -cf - "$NAME" | gzip -9n >"$DIST/$NAME.tar.gz"

# Checksums of every release file here: the agent's (scripts/dist.sh) and
# this bundle, whichever script ran last.
(cd "$DIST" && shopt -s nullglob && sha256sum -- failover-agent* tunnel-failover-worker-*.tar.gz >SHA256SUMS)
step "built $DIST/$NAME.tar.gz ($(stat -c %s "$DIST/$NAME.tar.gz" 2>/dev/null || wc -c <"$DIST/$NAME.tar.gz") bytes): ${files[*]}, wrangler.toml"
