#!/usr/bin/env bash
# `make dist`: the node agent's release artifacts, in dist/:
#
#   failover-agent-<version>-x86_64-linux-musl    static binary
#   failover-agent-<version>-aarch64-linux-musl   static binary
#   failover-agent_<version>_amd64.deb
#   failover-agent_<version>_arm64.deb
#   SHA256SUMS
#
# usage: scripts/dist.sh [x86_64] [aarch64]      (default: both)
#        DIST_DIR=target/dist-test scripts/dist.sh x86_64   (elsewhere than dist/)
#        DIST_BUILD_ONLY=1 DIST_BINS="failover-agent fake-connector" scripts/dist.sh x86_64
#          (only the static binaries, in $CARGO_TARGET_DIR/<triple>/release:
#          what `make image` and `make test-docker` put in scratch images,
#          built with the release's flags so the compiled crates are shared)
#
# Static musl binaries, so one .deb per architecture installs on any Debian or
# Ubuntu release (Depends: none). The .deb is staged by hand and packed with
# dpkg-deb: no cargo-deb to compile on every fresh CI machine, and the
# maintainer scripts in packaging/debian/ are plain files one can read.
#
# Every run first deletes what a previous run left in dist/ (failover-agent*,
# SHA256SUMS; nothing else), so dist/ holds exactly this run's artifacts, and
# running it twice gives the same bytes (same commit and toolchain: file
# times in the .deb come from the last commit, SOURCE_DATE_EPOCH).
#
# Needs: rustup (installs the musl targets itself), dpkg-deb, a C compiler,
# and for aarch64 a C cross compiler, because ring (TLS, through
# tokio-rustls) compiles C and assembly for the target. Debian/Ubuntu:
# apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross. Override with
# CC_<triple>, AR_<triple>, CARGO_TARGET_<TRIPLE>_LINKER as cargo and cc-rs
# read them.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIST=${DIST_DIR:-$ROOT/dist}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
STAGE=$TARGET_DIR/dist-stage

step() { printf '==> %s\n' "$*" >&2; }
fail() {
  printf 'error: %s\n' "$1" >&2
  shift
  local how
  for how in "$@"; do printf '       %s\n' "$how" >&2; done
  exit 1
}

# arch name in our file names -> Rust target, Debian architecture
rust_target() { printf '%s-unknown-linux-musl' "$1"; }
deb_arch() {
  case $1 in
  x86_64) echo amd64 ;;
  aarch64) echo arm64 ;;
  esac
}

arches=("$@")
[ ${#arches[@]} -gt 0 ] || arches=(x86_64 aarch64)
for arch in "${arches[@]}"; do
  case $arch in
  x86_64 | aarch64) ;;
  *) fail "unknown architecture '$arch'" "usage: scripts/dist.sh [x86_64] [aarch64]" ;;
  esac
done

command -v cargo >/dev/null || fail "cargo not found" "install Rust with rustup: https://rustup.rs"
command -v dpkg-deb >/dev/null ||
  fail "dpkg-deb not found (it packs the .deb)" "Debian/Ubuntu: it is in the dpkg package; elsewhere: install dpkg"

# Cargo's version of the agent (the workspace version), made a Debian version:
# a semver pre-release "1.2.0-rc.1" must sort BEFORE "1.2.0", which in Debian
# is "1.2.0~rc.1" ("-" would start a Debian revision).
pkgid=$(cd "$ROOT" && { cargo pkgid --offline -p failover-agent 2>/dev/null || cargo pkgid -p failover-agent; })
VERSION=${pkgid##*[#@]}
[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || fail "could not read the agent's version (cargo pkgid said '$pkgid')" "cargo pkgid -p failover-agent"
DEB_VERSION=${VERSION/-/\~}

# --- toolchain: targets and the cross C compiler ---------------------------

ensure_target() {
  local target=$1
  if command -v rustup >/dev/null; then
    if ! rustup target list --installed | grep -qx "$target"; then
      step "installing the $target Rust target"
      rustup target add "$target" || fail "could not install the $target target" "rustup target add $target"
    fi
  elif ! rustc --print target-libdir --target "$target" >/dev/null 2>&1 ||
    [ ! -d "$(rustc --print target-libdir --target "$target")" ]; then
    fail "the $target standard library is missing and rustup is not here to add it" \
      "install Rust with rustup, then: rustup target add $target"
  fi
}

# ring compiles C and assembly for the target, and cc-rs would look for
# x86_64-linux-musl-gcc / aarch64-linux-musl-gcc, which Debian and Ubuntu do
# not ship. Their glibc-targeting gcc works: ring's C only includes
# <string.h> (memcpy, memset) from libc, and the link uses Rust's own
# self-contained musl (crt objects and libc.a), never the compiler's glibc.
# The link is static, so a glibc-only symbol would fail it, not ship.
# -U_FORTIFY_SOURCE: Ubuntu's gcc fortifies by default, which can turn memcpy
# into __memcpy_chk, a glibc symbol musl lacks.
# setup_cc <arch> <candidate compilers...>
setup_cc() {
  local arch=$1
  shift
  local triple
  triple=$(rust_target "$arch")
  local var_cc=CC_${triple//-/_} var_ar=AR_${triple//-/_} var_cflags=CFLAGS_${triple//-/_}
  local var_ld
  var_ld=CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$triple")_LINKER
  local cc=${!var_cc:-}
  if [ -z "$cc" ]; then
    local candidate
    for candidate in "$@"; do
      if command -v "$candidate" >/dev/null; then
        cc=$candidate
        break
      fi
    done
  fi
  if [ -z "$cc" ] || ! command -v "${cc%% *}" >/dev/null; then
    if [ "$arch" = aarch64 ]; then
      fail "no C cross compiler for aarch64 (ring compiles C and assembly for the target)" \
        "Debian/Ubuntu: sudo apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross" \
        "or point $var_cc (and $var_ld) at another aarch64 gcc or clang" \
        "or build x86_64 only: scripts/dist.sh x86_64"
    else
      fail "no C compiler for $triple (ring compiles C and assembly)" \
        "Debian/Ubuntu: sudo apt-get install gcc (or musl-tools, then $var_cc=musl-gcc)"
    fi
  fi
  # gcc's <stdint.h> and ring's <string.h> come from the C library's headers:
  # with --no-install-recommends, apt leaves them out of the cross gcc.
  if ! printf '#include <string.h>\n#include <stdint.h>\n' | $cc -E -x c - >/dev/null 2>&1; then
    if [ "$arch" = aarch64 ]; then
      fail "$cc cannot find the C headers (<string.h>, <stdint.h>) for aarch64" \
        "Debian/Ubuntu: sudo apt-get install libc6-dev-arm64-cross"
    else
      fail "$cc cannot find the C headers (<string.h>, <stdint.h>)" \
        "Debian/Ubuntu: sudo apt-get install libc6-dev"
    fi
  fi
  export "$var_cc=$cc"
  # The host `ar` cannot index aarch64 objects: use the cross one beside gcc.
  if [ -z "${!var_ar:-}" ] && [[ $cc == *-gcc ]] && command -v "${cc%gcc}ar" >/dev/null; then
    export "$var_ar=${cc%gcc}ar"
  fi
  export "$var_cflags=${!var_cflags:-} -U_FORTIFY_SOURCE"
  # x86_64: rustc's default linker (cc) is right; aarch64 needs the cross one.
  if [ "$arch" = aarch64 ]; then
    export "$var_ld=${!var_ld:-$cc}"
  fi
  step "$triple: CC=${!var_cc} AR=${!var_ar:-ar} linker=${!var_ld:-cc}"
}

targets=()
for arch in "${arches[@]}"; do
  ensure_target "$(rust_target "$arch")"
  targets+=(--target "$(rust_target "$arch")")
done
for arch in "${arches[@]}"; do
  case $arch in
  x86_64) setup_cc x86_64 x86_64-linux-musl-gcc cc gcc ;;
  aarch64) setup_cc aarch64 aarch64-linux-musl-gcc aarch64-linux-gnu-gcc ;;
  esac
done

# --- build -----------------------------------------------------------------

step "building failover-agent $VERSION for ${arches[*]} (release, static musl)"
# Stripped, as Debian ships binaries (the agent's errors are log lines, not
# backtraces). Through the per-triple flags, which reach only this build's
# target units, not the host build scripts that other release builds share
# in target/release.
for arch in "${arches[@]}"; do
  triple=$(rust_target "$arch")
  var=CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$triple")_RUSTFLAGS
  export "$var=${!var:-} -C strip=symbols"
done
bins=()
for bin in ${DIST_BINS:-failover-agent}; do bins+=(--bin "$bin"); done
(cd "$ROOT" && nice -n 10 cargo build --release --locked -p failover-agent "${bins[@]}" "${targets[@]}")
if [ -n "${DIST_BUILD_ONLY:-}" ]; then
  for arch in "${arches[@]}"; do
    step "built: $TARGET_DIR/$(rust_target "$arch")/release/{${DIST_BINS:-failover-agent}}"
  done
  exit 0
fi

mkdir -p "$DIST"
DIST=$(cd "$DIST" && pwd)
rm -rf "$STAGE" "$DIST"/failover-agent[-_]* "$DIST/SHA256SUMS"
mkdir -p "$STAGE"

# File times inside the .deb: the last commit's, so a rebuild of the same
# commit gives the same bytes (dpkg-deb clamps to SOURCE_DATE_EPOCH).
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

# The unit in packaging/ is for a from-source install (/usr/local/bin, the
# admin's own tree); the package owns /usr/bin. Rewrite the path and refuse to
# pack a unit that still names /usr/local: a future edit of the unit must not
# ship a service that points at nothing.
packaged_unit() {
  local out=$1
  sed 's#/usr/local/bin/failover-agent#/usr/bin/failover-agent#g' "$ROOT/packaging/failover-agent.service" >"$out"
  if grep -n '/usr/local' "$out" >&2; then
    fail "packaging/failover-agent.service names /usr/local above; dist.sh only rewrites /usr/local/bin/failover-agent" \
      "make the unit use /usr/local/bin/failover-agent, or teach scripts/dist.sh the new path"
  fi
  grep -q '^ExecStart=/usr/bin/failover-agent ' "$out" ||
    fail "the packaged unit has no ExecStart=/usr/bin/failover-agent" "check packaging/failover-agent.service"
}

# The man page and the shell completions come from the binary itself
# (clap): generated by one that runs here, the same text for every arch.
docs_binary() {
  local native
  native=$TARGET_DIR/$(rust_target "$(uname -m)")/release/failover-agent
  if [ -x "$native" ]; then
    echo "$native"
    return
  fi
  cargo build --quiet -p failover-agent --manifest-path "$ROOT/Cargo.toml" >&2 ||
    fail "could not build a native failover-agent for the man page" "cargo build -p failover-agent"
  echo "$TARGET_DIR/debug/failover-agent"
}

install_docs() {
  local root=$1 bin
  bin=$(docs_binary)
  install -d -m 0755 "$root/usr/share/man/man1" "$root/usr/share/bash-completion/completions" \
    "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
  "$bin" manpage | gzip -9n >"$root/usr/share/man/man1/failover-agent.1.gz"
  "$bin" completions bash >"$root/usr/share/bash-completion/completions/failover-agent"
  "$bin" completions zsh >"$root/usr/share/zsh/vendor-completions/_failover-agent"
  "$bin" completions fish >"$root/usr/share/fish/vendor_completions.d/failover-agent.fish"
  chmod 0644 "$root/usr/share/man/man1/failover-agent.1.gz" "$root/usr/share/bash-completion/completions/failover-agent" \
    "$root/usr/share/zsh/vendor-completions/_failover-agent" "$root/usr/share/fish/vendor_completions.d/failover-agent.fish"
}

build_deb() {
  local arch=$1 binary=$2
  local debarch root
  debarch=$(deb_arch "$arch")
  root=$STAGE/$debarch
  local doc=$root/usr/share/doc/failover-agent
  local debian=$ROOT/packaging/debian

  install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$doc/examples"
  # Same modes as the from-source install in the README: the config names
  # the token file, so only root reads the directory.
  install -d -m 0750 "$root/etc/failover-agent" "$root/var/lib/failover-agent"

  install -m 0755 "$binary" "$root/usr/bin/failover-agent"
  packaged_unit "$STAGE/failover-agent.service"
  install -m 0644 "$STAGE/failover-agent.service" "$root/lib/systemd/system/failover-agent.service"
  # The recommended setup, a tunnel per node, is the config; the shared
  # tunnel's is an example beside it.
  install -m 0640 "$ROOT/packaging/config.tunnel-per-node.example.toml" "$root/etc/failover-agent/config.toml"
  install -m 0644 "$ROOT/README.md" "$doc/README.md"
  install -m 0644 "$debian/copyright" "$doc/copyright"
  install -m 0644 "$ROOT/packaging/cloudflared-override.conf" "$doc/examples/cloudflared-override.conf"
  # The pristine configs, to diff an edited /etc copy against after
  # upgrades, or to start a shared tunnel from.
  install -m 0644 "$ROOT/packaging/config.tunnel-per-node.example.toml" "$doc/examples/config.tunnel-per-node.example.toml"
  install -m 0644 "$ROOT/packaging/config.example.toml" "$doc/examples/config.example.toml"
  # Debian wants a changelog in every package: CHANGELOG.md's sections for
  # this version and every older one, in Debian's format.
  local maintainer
  maintainer=$(sed -n 's/^Maintainer: //p' "$debian/control.in")
  bash "$ROOT/scripts/changelog.sh" debian "$VERSION" failover-agent "$DEB_VERSION" "$maintainer" \
    "$(date -u -R -d "@$SOURCE_DATE_EPOCH")" | gzip -9n >"$doc/changelog.gz"
  chmod 0644 "$doc/changelog.gz"
  install -D -m 0644 "$debian/lintian-overrides" "$root/usr/share/lintian/overrides/failover-agent"
  install_docs "$root"

  install -m 0644 "$debian/conffiles" "$root/DEBIAN/conffiles"
  local script
  for script in postinst prerm postrm; do
    install -m 0755 "$debian/$script" "$root/DEBIAN/$script"
  done
  # dpkg --verify reads md5sums; conffiles are tracked by dpkg itself.
  (cd "$root" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\n' | LC_ALL=C sort |
    xargs md5sum) >"$root/DEBIAN/md5sums"
  chmod 0644 "$root/DEBIAN/md5sums"

  local size
  size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
  sed -e "s/@VERSION@/$DEB_VERSION/" -e "s/@ARCH@/$debarch/" -e "s/@INSTALLED_SIZE@/$size/" \
    "$debian/control.in" >"$root/DEBIAN/control"
  chmod 0644 "$root/DEBIAN/control"
  if grep -n '@[A-Z_]*@' "$root/DEBIAN/control" >&2; then
    fail "packaging/debian/control.in has a placeholder dist.sh does not fill (above)" "edit scripts/dist.sh"
  fi

  # -Zxz: Ubuntu's dpkg-deb defaults to zstd, which Debian's dpkg before
  # 1.21.18 (bullseye and older) cannot unpack.
  dpkg-deb --build --root-owner-group -Zxz "$root" "$DIST/failover-agent_${DEB_VERSION}_${debarch}.deb" >/dev/null
}

for arch in "${arches[@]}"; do
  binary=$TARGET_DIR/$(rust_target "$arch")/release/failover-agent
  [ -x "$binary" ] || fail "cargo built no $binary" "cargo build --release -p failover-agent --target $(rust_target "$arch")"
  install -m 0755 "$binary" "$DIST/failover-agent-$VERSION-$arch-linux-musl"
  build_deb "$arch" "$binary"
done

# Checksums of every release file here: these and the Worker bundle
# (scripts/worker-bundle.sh writes the same list), whichever script ran last.
(cd "$DIST" && shopt -s nullglob && sha256sum -- failover-agent* tunnel-failover-worker-*.tar.gz >SHA256SUMS)

step "built in $DIST/:"
(cd "$DIST" && for f in failover-agent* SHA256SUMS; do
  printf '  %-48s %9s bytes\n' "$f" "$(stat -c %s "$f")"
done) >&2
