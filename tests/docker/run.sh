#!/usr/bin/env bash
# `make test-docker`: the agent's docker controller against a real Docker
# daemon (crates/failover-agent/tests/docker.rs).
#
#   1. dockerd and the docker CLI: Debian's docker.io, installed if missing.
#   2. A private dockerd, whatever else runs here: its own data root under
#      target/, its socket, exec root and pidfile under a short /tmp path
#      (a Unix socket path is limited to 108 bytes), no bridge, no
#      iptables (every container here uses the host's network). Stopped
#      by its pid on exit, however this script ends.
#   3. The fake connector built static (musl, by scripts/dist.sh with the
#      release's flags) into a FROM scratch image: no registry needed.
#   4. cargo test --test docker with the daemon, the image and a command
#      that restarts the daemon (one scenario restarts it mid-stop).
#
# usage: tests/docker/run.sh            (the tests)
#        tests/docker/run.sh restart    (restart the private dockerd; the
#                                        tests call this)

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$TARGET_DIR"
TARGET_DIR=$(cd "$TARGET_DIR" && pwd)
# Short and per target dir: two checkouts may test at once.
RUN=/tmp/tfd-$(printf %s "$TARGET_DIR" | md5sum | cut -c1-8)
SOCKET=$RUN/docker.sock
PIDFILE=$RUN/dockerd.pid
DATA=$TARGET_DIR/docker-data
IMAGE=failover-test/fake-connector:latest
export DOCKER_HOST=unix://$SOCKET

step() { printf '==> %s\n' "$*" >&2; }
fail() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start_dockerd() {
  mkdir -p "$RUN" "$DATA"
  # --storage-driver=vfs: works on any file system (overlay2 does not
  # nest in every container); it copies layers, fine for one small image.
  dockerd --storage-driver=vfs --data-root "$DATA" --exec-root "$RUN/exec" \
    --host "unix://$SOCKET" --pidfile "$PIDFILE" --bridge=none \
    --iptables=false --ip6tables=false >>"$RUN/dockerd.log" 2>&1 &
  local i
  for i in $(seq 1 150); do
    answers && return 0
    kill -0 $! 2>/dev/null || break
    sleep 0.2
  done
  tail -20 "$RUN/dockerd.log" >&2
  fail "the private dockerd did not answer at $SOCKET"
}

stop_dockerd() {
  [ -f "$PIDFILE" ] || return 0
  local pid i
  pid=$(cat "$PIDFILE")
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
}

# The end: dockerd, and the containerd it started (by its pidfile) should
# it have outlived it.
stop_all() {
  stop_dockerd
  local pidfile=$RUN/exec/containerd/containerd.pid pid
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  fi
  # dockerd leaves its default network namespace mounted under exec-root.
  if mountpoint -q "$RUN/exec/netns/default" 2>/dev/null; then
    umount "$RUN/exec/netns/default" || true
  fi
  rm -rf "$RUN"
}

if [ "${1:-}" = restart ]; then
  stop_dockerd
  start_dockerd
  exit 0
fi

if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
  step "installing docker.io (dockerd and the docker CLI)"
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq docker.io >/dev/null
fi
[ "$(id -u)" = 0 ] || fail "dockerd runs as root: run make test-docker as root"

step "building the fake connector static (musl)"
DIST_BUILD_ONLY=1 DIST_BINS="failover-agent fake-connector" bash "$ROOT/scripts/dist.sh" x86_64 2>&1 |
  grep -v '^   Compiling' >&2 || fail "the musl build failed"
FAKE=$TARGET_DIR/x86_64-unknown-linux-musl/release/fake-connector

step "starting a private dockerd at $SOCKET"
stop_all
trap stop_all EXIT
start_dockerd

CONTEXT=$RUN/image
rm -rf "$CONTEXT" && mkdir -p "$CONTEXT"
cp "$FAKE" "$CONTEXT/fake-connector"
printf 'FROM scratch\nCOPY fake-connector /fake-connector\nENTRYPOINT ["/fake-connector"]\n' >"$CONTEXT/Dockerfile"
DOCKER_BUILDKIT=0 docker build -q -t "$IMAGE" "$CONTEXT" >/dev/null

step "cargo test --test docker (the agent against that daemon)"
cd "$ROOT"
FAILOVER_TEST_DOCKER_HOST=$DOCKER_HOST FAILOVER_TEST_CONNECTOR_IMAGE=$IMAGE \
  FAILOVER_TEST_DOCKERD_RESTART="bash '$ROOT/tests/docker/run.sh' restart" \
  cargo test --quiet -p failover-agent --test docker -- --test-threads=1
