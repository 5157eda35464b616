#!/usr/bin/env bash
# `make bench-cost`: instructions per request, counted, not timed. Each
# Worker (the product per steering policy with colo health on and off, the
# JavaScript anchor when it is present, the two floors) runs alone in its
# own `workerd serve` under `valgrind --tool=callgrind`, in front of two
# nginx origins and a Cache API service (bench/cost-cache.mjs). Per
# regime (GETs back to back, 512-byte POSTs back to back, one GET every
# 400 ms) it is warmed, then counted over a few windows: counters zeroed
# (`callgrind_control -z`), N requests (bench/cost-client.mjs, all
# answered), counters dumped (`callgrind_control -d`), the dump's total / N.
# Each row is counted in BENCH_COST_PROCESSES (3) workerd processes, one
# after another, in rounds over the rows (a spell of load or a slow
# minute falls on one process of a row, not on all of them); a process's
# figure is all its windows' instructions / all their requests (periodic
# work included), and a row's is the median of its processes' figures,
# so that one process's rare event (a late compile, a slow minute's
# periodic work) does not move it. (Processes used to land on one of two
# levels up to 12% apart: a background compile that never landed under
# callgrind. V8 now compiles in line; see bench/cost-workerd.capnp.tmpl.)
# The lowest and highest
# process are printed beside it and the JSON keeps every window. Prints
# one table (bench/cost-report.mjs) and writes
# target/bench/cost-<ts>.json and target/bench/cost-latest.json. Asserts
# nothing: it fails only when the bench itself cannot run. See
# bench/README.md ("Instructions per request").
#
# Why counted: the throughput rounds of `make bench` move ±10% between runs
# on these shared machines; a count moves by about 2% (issue #20). What it
# cannot see is time: callgrind runs a request ~30x slower, so work done
# every N ms (the colo read every 250 ms) is charged to ~30x fewer requests
# than at full speed. Compare such work at equal request rates: the sparse
# regime runs every Worker at the same rate, whatever its speed.
#
# Expects the toolchain on PATH (node, workerd) and a fresh build/, which is
# what `make bench-cost` provides. Knobs (environment), defaults in
# brackets: BENCH_COST_ROWS (all; a space-separated list of row ids, see
# `node bench/cost-config.mjs list`), BENCH_COST_PROCESSES (3 per row; 1,
# what `make bench` counts with unless told otherwise, takes about a
# third of the time and cannot resolve a few percent), BENCH_COST_GET_WARM
# (1200 requests), BENCH_COST_GETS (400 per window), BENCH_COST_POST_WARM
# (600), BENCH_COST_POSTS (150 per window), BENCH_COST_SPARSE_WARM (10),
# BENCH_COST_SPARSE (8 per window), BENCH_COST_WINDOWS (2 per process; 3
# with one process), BENCH_COST_SPARSE_WINDOWS (3 per process; 5 with one),
# BENCH_COST_CONNECTIONS (4), BENCH_COST_SPARSE_MS (400),
# BENCH_COST_REGIMES (get sparse post; a subset counts only those, for
# A/B-ing one cell without the whole table's 15 minutes), BENCH_ANCHOR_DIR,
# BENCH_BUILD_DIR (build), BENCH_KEEP=1 (keep the scratch directory:
# configs, workerd logs, the callgrind dumps), BENCH_PLAN=1 (print which
# rows this machine can take and stop).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$ROOT/bench
OUT=$ROOT/target/bench
BUILD_DIR=${BENCH_BUILD_DIR:-$ROOT/build}
ANCHOR_DIR=${BENCH_ANCHOR_DIR:-$ROOT/../shared/anchors/js-worker-lb}
# Warm-up: measured here, a fresh isolate's per-request count falls and
# jumps (V8 and Liftoff tier-up compiles, counted: they run in the same
# process) over its first ~2000 back-to-back GETs, then holds within a few
# percent per 400-request window. 1200 keeps a process near 45 s on a
# loaded 2-core machine; a late compile lands in one window, which the
# notes under the table name. The POST (full) path warms
# slower: its first 100-request window after 300 POSTs was 1.2-1.4x the
# next ones in every product row. The POST (full) path and the sparse
# regime's lease renewals run code the GETs warmed only partly: 10x sparse
# figures after 2 sparse warm-ups instead of 10 were seen here.
GET_WARM=${BENCH_COST_GET_WARM:-1200}
GETS=${BENCH_COST_GETS:-400}
POST_WARM=${BENCH_COST_POST_WARM:-600}
POSTS=${BENCH_COST_POSTS:-150}
SPARSE_WARM=${BENCH_COST_SPARSE_WARM:-10}
SPARSE=${BENCH_COST_SPARSE:-8}
# Back to back, windows of a few hundred requests: V8's young-generation
# GCs come every few hundred, so with 200 GETs or 60 POSTs a window held
# one or none and windows split into two levels 15-25% apart. Sparse:
# short windows; now and then one of them carries ~9 M instructions more
# than the rest. The windows show where the total came from
# (cost-report.mjs). Two and three per process when a row has several
# processes (the windows of one process agree with each other far better
# than processes do, so the time goes to processes); three and five when
# it has one, as before there were several.
# Processes per row; the row's figure is their median (see the header).
PROCESSES=${BENCH_COST_PROCESSES:-3}
if [ "$PROCESSES" = 1 ]; then
  WINDOWS=${BENCH_COST_WINDOWS:-3}
  SPARSE_WINDOWS=${BENCH_COST_SPARSE_WINDOWS:-5}
else
  WINDOWS=${BENCH_COST_WINDOWS:-2}
  SPARSE_WINDOWS=${BENCH_COST_SPARSE_WINDOWS:-3}
fi
CONNS=${BENCH_COST_CONNECTIONS:-4}
SPARSE_MS=${BENCH_COST_SPARSE_MS:-400}
# Sparse before the POSTs: run after them, a sparse window of 8 requests
# now and then carried the scavenge of the young generation the POSTs
# left half full (1.3 M per request in that window; which process had one
# was luck). After the GETs, 80 sparse requests had none (bench/README.md,
# "One run of f7b7fb1"). The table's column order stays get, post, sparse.
read -r -a REGIMES <<<"${BENCH_COST_REGIMES:-get sparse post}"
POST_BYTES=512
# workerd under valgrind answers its first request after 10-30 s here.
START_SECONDS=300

say() { printf '==> %s\n' "$*" >&2; }
die() {
  printf 'bench-cost: error: %s\n' "$1" >&2
  if [ -n "${2:-}" ]; then printf '       retry by hand: %s\n' "$2" >&2; fi
  exit 1
}

[[ $PROCESSES =~ ^[1-9][0-9]*$ ]] || die "BENCH_COST_PROCESSES: '$PROCESSES' is not a whole number of processes (1 or more; 3 by default)"
for regime in "${REGIMES[@]}"; do
  case $regime in get | post | sparse) ;; *) die "BENCH_COST_REGIMES: unknown regime '$regime' (get, post, sparse)" ;; esac
done

# ---------------------------------------------------------------- tools ----

# Debian's packages, as bench/run.sh installs nginx and wrk.
ensure_packages() {
  local missing=()
  command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
  { command -v valgrind >/dev/null && command -v callgrind_control >/dev/null; } || missing+=(valgrind)
  [ ${#missing[@]} -eq 0 ] && return
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "${missing[*]} missing and not root" "sudo apt-get install -y ${missing[*]}"
    sudo=(sudo)
  fi
  local install=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}")
  say "installing ${missing[*]} from Debian's packages: ${install[*]}"
  if ! "${install[@]}" >&2; then
    say "retrying after: ${sudo[*]} apt-get update"
    { "${sudo[@]}" apt-get update >&2 && "${install[@]}" >&2; } ||
      die "could not install ${missing[*]}" "${sudo[*]} apt-get update && ${install[*]}"
  fi
}

# ------------------------------------------------------------ the plan ----
# Without the anchor (a user's clone) every other row runs; the plan says
# which are skipped and why, here and under the table (bench/plan.mjs).
# BENCH_PLAN=1 stops after it, with nothing installed or run.

command -v node >/dev/null || die "node is not on PATH" "make bench-cost   (it puts the toolchain on PATH)"
PLAN=$(node "$BENCH/plan.mjs" cost --anchor-dir "$ANCHOR_DIR" --json) ||
  die "bench/plan.mjs failed" "node bench/plan.mjs cost --anchor-dir $ANCHOR_DIR"
node "$BENCH/plan.mjs" cost --anchor-dir "$ANCHOR_DIR" | sed 's/^/==> /' >&2
if [ "${BENCH_PLAN:-}" = 1 ]; then exit 0; fi

ensure_packages
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
for tool in node workerd curl valgrind callgrind_control; do
  command -v "$tool" >/dev/null || case $tool in
    valgrind | callgrind_control) die "$tool is not on PATH" "sudo apt-get install -y valgrind" ;;
    curl) die "curl is not on PATH" "sudo apt-get install -y curl" ;;
    *) die "$tool is not on PATH" "make bench-cost   (it puts the toolchain on PATH)" ;;
  esac
done
{ [ -f "$BUILD_DIR/index.js" ] && [ -f "$BUILD_DIR/index_bg.wasm" ] && [ -f "$BUILD_DIR/operator_bg.wasm" ]; } ||
  die "no Worker build in $BUILD_DIR" "make build"
# The anchor lives beside this repository on our machines, not in it: on a
# user's clone its row is skipped and the ratios to it left out (the plan
# above said so).
if [ -f "$ANCHOR_DIR/worker.mjs" ]; then ANCHOR_DIR=$(cd "$ANCHOR_DIR" && pwd); fi

# -------------------------------------------------- processes & cleanup ----

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tunnel-failover-cost.XXXXXX")
mkdir -p "$WORK/pids" "$WORK/www" "$WORK/product" "$WORK/callgrind"
RESULTS=$WORK/results.jsonl
printf '{"kind":"plan","result":%s}\n' "$PLAN" >"$RESULTS"

alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $state != Z* ]]
}

# Stops one process we started (by the pid recorded under $WORK/pids/NAME):
# SIGTERM, SIGKILL after 5 s (valgrind writes its last dump on the way out).
stop_proc() {
  local file=$WORK/pids/$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  rm -f "$file"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  local file
  for file in "$WORK"/pids/*; do
    [ -f "$file" ] && stop_proc "$(basename "$file")"
  done
  if [ -n "${BENCH_KEEP:-}" ]; then say "scratch files kept in $WORK"; else rm -rf "$WORK"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

# Starts a long-running process in the background, registered for cleanup.
spawn() { # NAME LOG COMMAND...
  local name=$1 log=$2
  shift 2
  "$@" >>"$log" 2>&1 &
  echo $! >"$WORK/pids/$name"
  # Out of the job table: bash would report "Terminated" when we stop it.
  disown $!
}

wait_http() { # URL SECONDS
  local url=$1 seconds=$2
  for _ in $(seq $((seconds * 4))); do
    curl -fsS -o /dev/null --max-time 5 "$url" 2>/dev/null && return 0
    sleep 0.25
  done
  return 1
}

free_ports() {
  node -e '
    const net = require("node:net");
    const servers = Array.from({ length: Number(process.argv[1]) }, () => net.createServer());
    Promise.all(servers.map((s) => new Promise((r) => s.listen(0, "127.0.0.1", r)))).then(() => {
      console.log(servers.map((s) => s.address().port).join(" "));
      servers.forEach((s) => s.close());
    });' "$1"
}

record() { printf '%s\n' "$1" >>"$RESULTS"; }

# -------------------------------------------------------------- set up ----

read -r PORT_PRIMARY PORT_REPLICA PORT_CACHE PORT_WORKER <<<"$(free_ports 4)"
PRIMARY=http://127.0.0.1:$PORT_PRIMARY
REPLICA=http://127.0.0.1:$PORT_REPLICA
WORKER=http://127.0.0.1:$PORT_WORKER
CACHE=http://127.0.0.1:$PORT_CACHE
say "scratch directory $WORK; ports: primary $PORT_PRIMARY, replica $PORT_REPLICA, cache $PORT_CACHE, Worker $PORT_WORKER"

# A snapshot of the build, so a concurrent `make build` cannot change the
# Worker halfway through the run.
cp "$BUILD_DIR/index.js" "$BUILD_DIR/index_bg.wasm" "$BUILD_DIR/operator_bg.wasm" "$WORK/product/"
head -c 2048 /dev/urandom >"$WORK/www/2k.bin"

# The origins of `make bench` (bench/nginx.conf.tmpl), plus one line: nginx
# answers a POST to a static file with 405, and the POST regime should get
# the same 2 KiB 200 a GET does (a proxied API call's answer). error_page
# redirects internally as a GET, so the file is served.
start_origin() { # NAME PORT
  local name=$1 port=$2 prefix=$WORK/nginx-$1
  mkdir -p "$prefix/tmp"
  node "$BENCH/render.mjs" nginx "$prefix/nginx.conf" --prefix "$prefix" --port "$port" --docroot "$WORK/www"
  # shellcheck disable=SC2016 # $uri is nginx's variable, not the shell's
  sed -i 's|^\( *\)root .*;$|&\n\1error_page 405 =200 $uri;|' "$prefix/nginx.conf"
  grep -q 'error_page 405' "$prefix/nginx.conf" || die "bench/nginx.conf.tmpl has no 'root' line to add the POST answer after"
  spawn "nginx-$name" "$prefix/stdout.log" "$NGINX" -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log"
  wait_http "http://127.0.0.1:$port/health" 10 ||
    die "nginx ($name, port $port) did not start: $(tail -3 "$prefix/error.log" "$prefix/stdout.log" 2>/dev/null)"
}
start_origin primary "$PORT_PRIMARY"
start_origin replica "$PORT_REPLICA"

spawn cache "$WORK/cache.log" node "$BENCH/cost-cache.mjs" --port "$PORT_CACHE"
wait_http "$CACHE/__bench/stats" 10 || die "the cache service did not start: $(tail -5 "$WORK/cache.log")"

# --------------------------------------------------------------- count ----

client() { # ARGS... -> one JSON line
  node "$BENCH/cost-client.mjs" --url "$WORKER" "$@"
}

# callgrind_control, quiet unless it fails ("sending command ..." is chatter).
control() { # -z|-d PID
  local said
  said=$(callgrind_control "$1" "$2" 2>&1) || die "callgrind_control $1 $2 failed: $said"
}

failed_of() { # CLIENT_JSON -> its "failed" count
  [[ $1 =~ \"failed\":([0-9]+) ]] && echo "${BASH_REMATCH[1]}" || echo "?"
}

json_field() { # JSON FIELD
  node -e 'const v = JSON.parse(process.argv[1])[process.argv[2]]; console.log(v ?? "")' "$1" "$2"
}

# One process of one row: its own workerd under callgrind, the regimes,
# the windows of each counted.
count_row() { # ROW PROCESS
  local row=$1 process=$2 config=$WORK/$1.capnp log=$WORK/workerd-$1-p$2.log out=$WORK/callgrind/$1-p$2.out pid dumps=0
  node "$BENCH/cost-config.mjs" workerd "$config" --row "$row" --port "$PORT_WORKER" --cache "127.0.0.1:$PORT_CACHE" \
    --product-dir "$WORK/product" --anchor-dir "$ANCHOR_DIR" --primary "$PRIMARY" --replica "$REPLICA"
  local started=$SECONDS
  # --smc-check: V8 writes the code it runs (JIT), which valgrind must
  # notice. The pid is valgrind's own (it execs into the tool), which is
  # what callgrind_control addresses.
  spawn workerd "$log" valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file="$out" \
    workerd serve "$config" --experimental
  pid=$(cat "$WORK/pids/workerd")
  wait_http "$WORKER/2k.bin" "$START_SECONDS" ||
    die "$row: workerd under callgrind did not answer in ${START_SECONDS} s: $(tail -5 "$log")"
  say "  $row, process $process: first answer after $((SECONDS - started)) s"
  local cookie=
  # The row's own client arguments (an Authorization header on every
  # request, for one row), on top of the regime's.
  local row_args=()
  mapfile -t row_args < <(node "$BENCH/cost-config.mjs" client-args --row "$row")
  # Per regime: the client's arguments, the warm-up, requests per window,
  # windows.
  for regime in "${REGIMES[@]}"; do
    local args warm n windows
    case $regime in
      get) args=(--concurrency "$CONNS") warm=$GET_WARM n=$GETS windows=$WINDOWS ;;
      post) args=(--concurrency "$CONNS" --method POST --body-bytes "$POST_BYTES") warm=$POST_WARM n=$POSTS windows=$WINDOWS ;;
      sparse) args=(--interval-ms "$SPARSE_MS") warm=$SPARSE_WARM n=$SPARSE windows=$SPARSE_WINDOWS ;;
    esac
    args+=("${row_args[@]}")
    local got
    got=$(client "${args[@]}" ${cookie:+--cookie "$cookie"} --count "$warm") || die "$row: the $regime warm-up client failed"
    # Not fatal: the warm-up is not counted; the windows check their own.
    [ "$(failed_of "$got")" = 0 ] ||
      say "  $row: $regime warm-up: $(json_field "$got" failed) of $warm requests failed ($(json_field "$got" first_failure))"
    # The affinity row's pin, sent back from here on (a returning client).
    cookie=$(json_field "$got" cookie)
    [ -n "$cookie" ] && args+=(--cookie "$cookie")
    local window=1 retried=0
    while [ "$window" -le "$windows" ]; do
      control -z "$pid"
      curl -fsS -o /dev/null "$CACHE/__bench/stats?reset=1"
      got=$(client "${args[@]}" --count "$n") || die "$row: the $regime client failed"
      control -d "$pid"
      dumps=$((dumps + 1))
      # A failed request is not a request's cost: such a window is counted
      # again, once; a second one is kept and flagged under the table.
      if [ "$(failed_of "$got")" != 0 ] && [ "$retried" = 0 ]; then
        say "  $row: $regime: $(json_field "$got" failed) of $n requests failed ($(json_field "$got" first_failure)); counting the window again"
        record "{\"kind\":\"failed_window\",\"row\":\"$row\",\"process\":$process,\"regime\":\"$regime\",\"client\":$got}"
        retried=1
        continue
      fi
      local total
      total=$(sed -n 's/^summary: //p' "$out.$dumps")
      [ -n "$total" ] || die "$row: no summary line in the callgrind dump $out.$dumps"
      record "{\"kind\":\"window\",\"row\":\"$row\",\"process\":$process,\"regime\":\"$regime\",\"window\":$window,\"instructions\":$total,\"client\":$got,\"cache\":$(curl -fsS "$CACHE/__bench/stats")}"
      window=$((window + 1))
    done
    say "  $row, process $process: $regime counted ($windows x $n requests)"
  done
  stop_proc workerd
  # A healthy primary is never failed over: an attempt failed here would
  # make the row a failover's cost. The colo reads must reach the cache.
  record "{\"kind\":\"row\",\"row\":\"$row\",\"process\":$process,\"attempt_failed\":$(grep -c '"attempt_failed"' "$log" || true),\"shared_health_error\":$(grep -c '"shared_health_error"' "$log" || true),\"seconds\":$((SECONDS - started))}"
}

if [ -n "${BENCH_COST_ROWS:-}" ]; then
  read -r -a rows <<<"$BENCH_COST_ROWS"
else
  mapfile -t rows < <(node "$BENCH/cost-config.mjs" list --anchor-dir "$ANCHOR_DIR")
fi
say "counting ${#rows[@]} Workers one at a time under callgrind, each in $PROCESSES processes (rounds over the rows; 40-60 s a process): ${rows[*]}"
for process in $(seq "$PROCESSES"); do
  for row in "${rows[@]}"; do count_row "$row" "$process"; done
done

# -------------------------------------------------------------- report ----

revision=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$ROOT" status --porcelain -- src crates 2>/dev/null | head -1)
mkdir -p "$OUT"
node "$BENCH/cost-report.mjs" "$RESULTS" "$OUT" \
  --meta "$(printf '{"revision":"%s","src_modified":%s,"workerd":"%s","valgrind":"%s","nginx":"%s","node":"%s","cpus":%s,"loadavg_end":"%s","get_warm":%s,"gets":%s,"post_warm":%s,"posts":%s,"post_bytes":%s,"sparse_warm":%s,"sparse":%s,"sparse_ms":%s,"windows":%s,"sparse_windows":%s,"processes":%s,"connections":%s,"wall_s":%s}' \
    "$revision" "$([ -n "$dirty" ] && echo true || echo false)" "$(workerd --version 2>&1 | head -1)" "$(valgrind --version)" \
    "$("$NGINX" -v 2>&1 | head -1)" "$(node --version)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "$GET_WARM" "$GETS" "$POST_WARM" "$POSTS" "$POST_BYTES" "$SPARSE_WARM" "$SPARSE" "$SPARSE_MS" "$WINDOWS" "$SPARSE_WINDOWS" "$PROCESSES" "$CONNS" "$SECONDS")"
