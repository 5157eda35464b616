#!/usr/bin/env bash
# `make image`: the agent's container image, failover-agent:<version> (and
# :latest), FROM scratch with the static musl binary the release builds
# (scripts/dist.sh, DIST_BUILD_ONLY), for this machine's architecture;
# then its size (target: under 10 MiB).
#
# usage: scripts/image.sh [x86_64|aarch64]
# Needs a Docker daemon answering at DOCKER_HOST (or the default socket)
# and the docker CLI.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
ARCH=${1:-$(uname -m)}
CONTEXT=$TARGET_DIR/image

fail() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

command -v docker >/dev/null || fail "the docker CLI is missing (Debian: apt-get install docker.io)"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  fail "no Docker daemon answers${DOCKER_HOST:+ at $DOCKER_HOST}: start dockerd (or set DOCKER_HOST)"

# Docker's name for the architecture: the Dockerfile's TARGETARCH.
case $ARCH in
x86_64) PLATFORM_ARCH=amd64 ;;
aarch64) PLATFORM_ARCH=arm64 ;;
*) fail "unknown architecture '$ARCH'; usage: scripts/image.sh [x86_64|aarch64]" ;;
esac

DIST_BUILD_ONLY=1 bash "$ROOT/scripts/dist.sh" "$ARCH"
pkgid=$(cd "$ROOT" && cargo pkgid --offline -p failover-agent 2>/dev/null || cargo pkgid -p failover-agent)
VERSION=${pkgid##*[#@]}

rm -rf "$CONTEXT" && mkdir -p "$CONTEXT/state" "$CONTEXT/bin/$PLATFORM_ARCH"
cp "$TARGET_DIR/$ARCH-unknown-linux-musl/release/failover-agent" "$CONTEXT/bin/$PLATFORM_ARCH/"
cp "$ROOT/packaging/docker/Dockerfile" "$CONTEXT/"
# The legacy builder: BuildKit (buildx) is a separate package on Debian,
# and a FROM scratch image needs nothing it adds. It does not set
# TARGETARCH itself.
DOCKER_BUILDKIT=0 docker build -q --platform "linux/$PLATFORM_ARCH" \
  --build-arg "TARGETARCH=$PLATFORM_ARCH" \
  -t "failover-agent:$VERSION" -t failover-agent:latest "$CONTEXT" >/dev/null
size=$(docker image inspect -f '{{.Size}}' "failover-agent:$VERSION")
printf 'failover-agent:%s (and :latest): %s bytes (%s KiB)\n' "$VERSION" "$size" "$((size / 1024))"
[ "$size" -lt $((10 * 1024 * 1024)) ] || fail "the image is over 10 MiB"
