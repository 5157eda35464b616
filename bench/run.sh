#!/usr/bin/env bash
# `make bench`: the product Worker vs the JavaScript anchor
# (../shared/anchors/js-worker-lb) in ONE `workerd serve` process, in front of
# the same two real nginx origins (primary, replica), loaded by wrk in
# alternating rounds; in the same process, the product once per steering
# policy and once with SILENCE_MS=0, and two floor Workers
# (bench/floor-*.mjs), loaded in rotating rounds of their own. Prints two
# tables and writes target/bench/bench-<ts>.json and
# target/bench/latest.json. No timing is asserted: it exits non-zero only
# when the bench itself cannot run (a steering setting the build does not
# support is a row "n/a", not a failure). See bench/README.md for what each
# figure means and how it is taken.
#
# Expects the toolchain on PATH (node, workerd) and a fresh build/, which is
# what `make bench` provides. Knobs (environment): BENCH_ROUNDS (5),
# BENCH_SECONDS (5), BENCH_CONNECTIONS (16), BENCH_THREADS (2),
# BENCH_COLD_REPS (3), BENCH_STEERING_ROUNDS (10), BENCH_STEERING_SECONDS (2),
# BENCH_REFAIL_ROUNDS (6), BENCH_ANCHOR_DIR, BENCH_BUILD_DIR (build),
# BENCH_KEEP=1 (keep the scratch directory with configs and logs),
# BENCH_PLAN=1 (print which rows this machine can take and stop).
#
# Without the anchor (a user's clone: it lives outside this repository) it
# runs everything else and says which rows it skipped, before it starts and
# under the table (bench/plan.mjs decides).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$ROOT/bench
OUT=$ROOT/target/bench
BUILD_DIR=${BENCH_BUILD_DIR:-$ROOT/build}
ANCHOR_DIR=${BENCH_ANCHOR_DIR:-$ROOT/../shared/anchors/js-worker-lb}
ROUNDS=${BENCH_ROUNDS:-5}
RUN_SECONDS=${BENCH_SECONDS:-5}
CONNS=${BENCH_CONNECTIONS:-16}
THREADS=${BENCH_THREADS:-2}
COLD_REPS=${BENCH_COLD_REPS:-3}
# The steering rounds compare Workers that differ by a few microseconds per
# request, so they take many short rounds (each ratio is taken within one
# round) rather than a few long ones; 2 KiB only, where a request's own cost
# shows (at 1 MiB, streaming the body dominates every Worker alike).
STEERING_ROUNDS=${BENCH_STEERING_ROUNDS:-10}
STEERING_SECONDS=${BENCH_STEERING_SECONDS:-2}
# The first and the second failover in one isolate, one fresh workerd (so
# one fresh isolate) per round; 6 rounds is the fewest that give the
# median's 95% interval (report.mjs).
REFAIL_ROUNDS=${BENCH_REFAIL_ROUNDS:-6}
# The failover phases set it low, so a hanging origin is given up on quickly
# (the anchor has no attempt timeout at all). The throughput phase runs the
# product's default: at 300 ms, a scheduling stall of this shared machine
# under full load now and then outlasts an attempt and fails over a healthy
# primary, which is the setting's cost, not the Worker's.
ATTEMPT_TIMEOUT_MS=300
THROUGHPUT_ATTEMPT_TIMEOUT_MS=6000
HEALTH_INTERVAL_MS=1000
# The second-failover rounds wait for the Worker to fail back between two
# kills: its probes of the restarted primary come this often.
REFAIL_HEALTH_INTERVAL_MS=200
HEALTH_RISE=2

say() { printf '==> %s\n' "$*" >&2; }
die() {
  printf 'bench: error: %s\n' "$1" >&2
  if [ -n "${2:-}" ]; then printf '       retry by hand: %s\n' "$2" >&2; fi
  exit 1
}

# ---------------------------------------------------------------- tools ----

ensure_packages() {
  local missing=()
  command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
  command -v wrk >/dev/null || missing+=(wrk)
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

command -v node >/dev/null || die "node is not on PATH" "make bench   (it puts the toolchain on PATH)"
PLAN=$(node "$BENCH/plan.mjs" bench --anchor-dir "$ANCHOR_DIR" --json) ||
  die "bench/plan.mjs failed" "node bench/plan.mjs bench --anchor-dir $ANCHOR_DIR"
node "$BENCH/plan.mjs" bench --anchor-dir "$ANCHOR_DIR" | sed 's/^/==> /' >&2
if [ "${BENCH_PLAN:-}" = 1 ]; then exit 0; fi
HAVE_ANCHOR=$(node -p 'JSON.parse(process.argv[1]).anchor' "$PLAN")

ensure_packages
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
for tool in node workerd wrk curl gzip; do
  command -v "$tool" >/dev/null || die "$tool is not on PATH" "make bench   (it puts the toolchain on PATH)"
done
[ -f "$BUILD_DIR/index.js" ] && [ -f "$BUILD_DIR/index_bg.wasm" ] && [ -f "$BUILD_DIR/operator_bg.wasm" ] ||
  die "no Worker build in $BUILD_DIR" "make build"
# The Workers compared head to head in the first table.
if [ "$HAVE_ANCHOR" = true ]; then
  ANCHOR_DIR=$(cd "$ANCHOR_DIR" && pwd)
  VERSUS=(product anchor)
else
  VERSUS=(product)
fi

# -------------------------------------------------- processes & cleanup ----

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tunnel-failover-bench.XXXXXX")
mkdir -p "$WORK/pids" "$WORK/www" "$WORK/product"
RESULTS=$WORK/results.jsonl
printf '{"kind":"plan","result":%s}\n' "$PLAN" >"$RESULTS"
# workerd.capnp.tmpl embeds the anchor's module whether or not it is
# served: without one, a stand-in that is never served.
if [ "$HAVE_ANCHOR" != true ]; then
  ANCHOR_DIR=$WORK/no-anchor
  mkdir -p "$ANCHOR_DIR"
  echo 'export default { fetch: () => new Response("no anchor in this run", { status: 503 }) };' >"$ANCHOR_DIR/worker.mjs"
fi

alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $state != Z* ]]
}

# Stops one process we started (by the pid recorded under $WORK/pids/NAME):
# SIGCONT first (it may be SIGSTOPped), then SIGTERM, SIGKILL after 3 s.
stop_proc() {
  local file=$WORK/pids/$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  rm -f "$file"
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 30); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  wait "$pid" 2>/dev/null || true
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

# Runs a command in the background, registered for cleanup, and waits for it
# (a trapped Ctrl-C interrupts `wait`, unlike a foreground child).
run_logged() {
  local name=$1 log=$2 pid rc=0
  shift 2
  "$@" >"$log" 2>&1 &
  pid=$!
  echo "$pid" >"$WORK/pids/$name"
  wait "$pid" || rc=$?
  rm -f "$WORK/pids/$name"
  return "$rc"
}

wait_http() {
  local url=$1 seconds=$2
  for _ in $(seq $((seconds * 20))); do
    curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null && return 0
    sleep 0.05
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

# The Workers of the steering rounds, by the names render.mjs and
# report.mjs know them by: `product` is STEERING=failover, today's, with the
# default SILENCE_MS; `silence_off` is the same with SILENCE_MS=0.
STEERING_TARGETS=(product weighted hash affinity silence_off floor_bare floor_work)
declare -A PORT
read -r PORT_PRIMARY PORT_REPLICA PORT_COLD PORT[product] PORT[anchor] PORT[weighted] PORT[hash] PORT[affinity] \
  PORT[silence_off] PORT[floor_bare] PORT[floor_work] <<<"$(free_ports 11)"
PRIMARY=http://127.0.0.1:$PORT_PRIMARY
REPLICA=http://127.0.0.1:$PORT_REPLICA
PRODUCT=http://127.0.0.1:${PORT[product]}
ANCHOR=http://127.0.0.1:${PORT[anchor]}

url_of() { # target
  case $1 in
    origin) echo "$PRIMARY" ;;
    *) echo "http://127.0.0.1:${PORT[$1]}" ;;
  esac
}

start_origin() {
  local name=$1 port=$2 prefix=$WORK/nginx-$1
  mkdir -p "$prefix/tmp"
  [ -f "$prefix/nginx.conf" ] ||
    node "$BENCH/render.mjs" nginx "$prefix/nginx.conf" --prefix "$prefix" --port "$port" --docroot "$WORK/www"
  "$NGINX" -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" >>"$prefix/stdout.log" 2>&1 &
  echo $! >"$WORK/pids/nginx-$name"
  # Out of the job table: bash would report "Killed" when the bench kills it.
  disown $!
  wait_http "http://127.0.0.1:$port/health" 10 ||
    die "nginx ($name, port $port) did not start: $(tail -3 "$prefix/error.log" "$prefix/stdout.log" 2>/dev/null)"
}

# A killed or stopped primary is replaced by a fresh nginx on the same port.
restart_primary() {
  stop_proc nginx-primary
  start_origin primary "$PORT_PRIMARY"
}

start_workerd() { # [config [--product-only]]
  stop_proc workerd
  workerd serve "${1:-$WORK/workerd.capnp}" >>"$WORK/workerd.log" 2>&1 &
  echo $! >"$WORK/pids/workerd"
  disown $!
  if [ "${2:-}" = --product-only ]; then
    wait_http "$PRODUCT/health" 20 || die "workerd did not serve the product: $(tail -20 "$WORK/workerd.log")"
  else
    wait_http "$PRODUCT/health" 20 && { [ "$HAVE_ANCHOR" != true ] || wait_http "$ANCHOR/health" 5; } ||
      die "workerd did not serve ${VERSUS[*]}: $(tail -20 "$WORK/workerd.log")"
  fi
}

record() { printf '%s\n' "$1" >>"$RESULTS"; }

# run_wrk TARGET SIZE CONNS THREADS SECONDS LABEL [SCRIPT [WRK ARGS...]]
#   -> one JSON line in results. SCRIPT defaults to wrk-json.lua.
run_wrk() {
  local target=$1 size=$2 conns=$3 threads=$4 seconds=$5 label=$6 script=${7:-$BENCH/wrk-json.lua} url log json
  shift $(($# < 7 ? $# : 7))
  url=$(url_of "$target")
  log=$WORK/wrk-$label-$target-$size.log
  run_logged wrk "$log" wrk -t"$threads" -c"$conns" -d"${seconds}s" --latency --timeout 5s \
    -s "$script" "$@" "$url/$size.bin" || die "wrk failed: $(tail -5 "$log")" "wrk -c$conns -d${seconds}s $url/$size.bin"
  json=$(sed -n 's/^WRK_JSON //p' "$log")
  [ -n "$json" ] || die "wrk printed no summary: $(tail -5 "$log")"
  record "{\"kind\":\"wrk\",\"label\":\"$label\",\"target\":\"$target\",\"size\":\"$size\",\"connections\":$conns,\"seconds\":$seconds,\"result\":$json}"
}

# -------------------------------------------------------------- set up ----

say "scratch directory $WORK; ports: primary $PORT_PRIMARY, replica $PORT_REPLICA, product ${PORT[product]}, anchor ${PORT[anchor]}"
# A snapshot of the build, so a concurrent `make build` cannot change the
# Worker halfway through the run.
cp "$BUILD_DIR/index.js" "$BUILD_DIR/index_bg.wasm" "$BUILD_DIR/operator_bg.wasm" "$WORK/product/"
grep -q '"./index_bg.wasm"' "$WORK/product/index.js" ||
  die "build/index.js does not import \"./index_bg.wasm\"; bench/workerd.capnp.tmpl names the wasm module after that import"
head -c 2048 /dev/urandom >"$WORK/www/2k.bin"
head -c 1048576 /dev/urandom >"$WORK/www/1m.bin"

start_origin primary "$PORT_PRIMARY"
start_origin replica "$PORT_REPLICA"
render_workerd() { # OUT ATTEMPT_TIMEOUT_MS HEALTH_INTERVAL_MS --serve TARGET=PORT...
  local out=$1 timeout=$2 interval=$3
  shift 3
  node "$BENCH/render.mjs" workerd "$out" --product-dir "$WORK/product" --anchor-dir "$ANCHOR_DIR" \
    --primary "$PRIMARY" --replica "$REPLICA" --attempt-timeout-ms "$timeout" \
    --health-interval-ms "$interval" --health-rise "$HEALTH_RISE" "$@"
}
serve_all=()
for target in "${!PORT[@]}"; do
  if [ "$target" = anchor ] && [ "$HAVE_ANCHOR" != true ]; then continue; fi
  serve_all+=(--serve "$target=${PORT[$target]}")
done
serve_versus=()
for target in "${VERSUS[@]}"; do serve_versus+=(--serve "$target=${PORT[$target]}"); done
render_workerd "$WORK/throughput.capnp" "$THROUGHPUT_ATTEMPT_TIMEOUT_MS" "$HEALTH_INTERVAL_MS" "${serve_all[@]}"
render_workerd "$WORK/workerd.capnp" "$ATTEMPT_TIMEOUT_MS" "$HEALTH_INTERVAL_MS" "${serve_versus[@]}"
render_workerd "$WORK/refail.capnp" "$ATTEMPT_TIMEOUT_MS" "$REFAIL_HEALTH_INTERVAL_MS" --serve "product=${PORT[product]}"
render_workerd "$WORK/cold-product.capnp" "$ATTEMPT_TIMEOUT_MS" "$HEALTH_INTERVAL_MS" --serve "product=$PORT_COLD"
if [ "$HAVE_ANCHOR" = true ]; then
  render_workerd "$WORK/cold-anchor.capnp" "$ATTEMPT_TIMEOUT_MS" "$HEALTH_INTERVAL_MS" --serve "anchor=$PORT_COLD"
fi
start_workerd "$WORK/throughput.capnp"

# Both Workers must really proxy both files from the primary before any
# figure is worth taking.
for target in "${VERSUS[@]}"; do
  url=$PRODUCT
  [ "$target" = anchor ] && url=$ANCHOR
  for size in 2k:2048 1m:1048576; do
    got=$(curl -sS -o /dev/null -D "$WORK/check-headers" -w '%{http_code} %{size_download}' "$url/${size%%:*}.bin") ||
      die "$target did not answer $url/${size%%:*}.bin"
    served=$(tr -d '\r' <"$WORK/check-headers" | sed -n 's/^[Xx]-[Ss]erved-[Bb]y: //p')
    [ "$got" = "200 ${size#*:}" ] && [ "$served" = primary ] ||
      die "$target answered '$got' (served by '${served:-nobody}') for ${size%%:*}.bin; expected '200 ${size#*:}' from primary. workerd log: $(tail -5 "$WORK/workerd.log")"
  done
done

wasm_raw=$(stat -c %s "$WORK/product/index_bg.wasm")
wasm_gz=$(gzip -9 -c "$WORK/product/index_bg.wasm" | wc -c)
operator_raw=$(stat -c %s "$WORK/product/operator_bg.wasm")
operator_gz=$(gzip -9 -c "$WORK/product/operator_bg.wasm" | wc -c)
js_raw=$(stat -c %s "$WORK/product/index.js")
js_gz=$(gzip -9 -c "$WORK/product/index.js" | wc -c)
anchor_raw=null
anchor_gz=null
if [ "$HAVE_ANCHOR" = true ]; then
  anchor_raw=$(stat -c %s "$ANCHOR_DIR/worker.mjs")
  anchor_gz=$(gzip -9 -c "$ANCHOR_DIR/worker.mjs" | wc -c)
fi
record "{\"kind\":\"size\",\"wasm_raw\":$wasm_raw,\"wasm_gzip\":$wasm_gz,\"operator_raw\":$operator_raw,\"operator_gzip\":$operator_gz,\"js_raw\":$js_raw,\"js_gzip\":$js_gz,\"anchor_raw\":$anchor_raw,\"anchor_gzip\":$anchor_gz}"

# ---------------------------------------------------------- throughput ----

say "warm-up (1 s per Worker and size)"
for size in 2k 1m; do
  for target in "${VERSUS[@]}"; do run_wrk "$target" "$size" "$CONNS" "$THREADS" 1 warmup; done
done

say "throughput: $ROUNDS rounds x ${RUN_SECONDS} s, wrk -t$THREADS -c$CONNS, ${VERSUS[*]} / origin direct, alternating order"
for round in $(seq "$ROUNDS"); do
  order=("${VERSUS[@]}" origin)
  [ $((round % 2)) -eq 0 ] && [ "$HAVE_ANCHOR" = true ] && order=(anchor product origin)
  for size in 2k 1m; do
    for target in "${order[@]}"; do
      run_wrk "$target" "$size" "$CONNS" "$THREADS" "$RUN_SECONDS" "round$round"
    done
  done
  say "  round $round/$ROUNDS done"
done

# A healthy primary should never have been failed over during the rounds.
attempts_failed() { grep -c '"attempt_failed"' "$WORK/workerd.log" || true; }
failed_before_steering=$(attempts_failed)
record "{\"kind\":\"throughput_failures\",\"attempt_failed\":$failed_before_steering}"

# One connection, one request at a time: the latency a Worker adds when
# nothing queues (at -c$CONNS, p50 is mostly queueing behind other requests).
unloaded_rounds=$((ROUNDS < 3 ? ROUNDS : 3))
say "unloaded latency: $unloaded_rounds rounds x 2 s, wrk -t1 -c1, 2 KiB"
for round in $(seq "$unloaded_rounds"); do
  for target in "${VERSUS[@]}" origin; do run_wrk "$target" 2k 1 1 2 "unloaded$round"; done
done

# ------------------------------------------------------------ steering ----
# The product once per steering policy, and the two floors, all in the
# workerd above (its own isolate each). A variant the build rejects or
# ignores is checked out first and becomes an "n/a" row. Every target gets
# the same client (wrk-users.lua: varying x-user, and the affinity Worker's
# pin as a cookie when it issued one), the order rotating between rounds.

steering=()
affinity_cookie=
for target in "${STEERING_TARGETS[@]}"; do
  check=$(node "$BENCH/steering-check.mjs" --target "$target" --url "$(url_of "$target")") ||
    die "steering-check.mjs failed for $target" "node bench/steering-check.mjs --target $target --url $(url_of "$target")"
  record "{\"kind\":\"steering_check\",\"result\":$check}"
  { read -r supported && read -r why && read -r cookie; } < <(node -e '
    const c = JSON.parse(process.argv[1]);
    console.log([c.supported, c.why ?? "", c.cookie ?? ""].join("\n"));' "$check")
  if [ "$supported" = true ]; then
    steering+=("$target")
    [ -n "$cookie" ] && affinity_cookie=$cookie
  else
    say "  $target: n/a (setting not supported by this build): $why"
  fi
done
client=("$BENCH/wrk-users.lua")
[ -n "$affinity_cookie" ] && client+=(-H "Cookie: $affinity_cookie")

if [ ${#steering[@]} -gt 0 ]; then
  say "steering: warm-up, 1 s each: ${steering[*]}"
  for target in "${steering[@]}"; do run_wrk "$target" 2k "$CONNS" "$THREADS" 1 warmup "${client[@]}"; done
  say "steering: $STEERING_ROUNDS rounds x ${STEERING_SECONDS} s, wrk -t$THREADS -c$CONNS, 2 KiB, rotating order"
  for round in $(seq "$STEERING_ROUNDS"); do
    for i in "${!steering[@]}"; do
      target=${steering[$(((i + round - 1) % ${#steering[@]}))]}
      run_wrk "$target" 2k "$CONNS" "$THREADS" "$STEERING_SECONDS" "steering$round" "${client[@]}"
    done
    if [ $((round % 5)) -eq 0 ] || [ "$round" -eq "$STEERING_ROUNDS" ]; then say "  round $round/$STEERING_ROUNDS done"; fi
  done
fi
record "{\"kind\":\"steering_failures\",\"attempt_failed\":$(($(attempts_failed) - failed_before_steering))}"

# ------------------------------------------------------------ failover ----
# Each scenario gets a fresh workerd, so both Workers start it believing the
# primary is up (the anchor re-checks health only every 30 s, the product
# probes a down origin every HEALTH_INTERVAL_MS). Within a scenario the
# product goes first, then the primary is replaced and the anchor goes.

failover() { # fault window_ms
  local fault=$1 window=$2 target url
  say "failover: primary $( [ "$fault" = kill ] && echo killed || echo hanging), one request at a time (attempt timeout ${ATTEMPT_TIMEOUT_MS} ms)"
  start_workerd
  for target in "${VERSUS[@]}"; do
    url=$PRODUCT
    [ "$target" = anchor ] && url=$ANCHOR
    # Warm this Worker's connections to the primary.
    for _ in 1 2 3 4 5; do curl -fsS -o /dev/null "$url/2k.bin" || die "$target did not answer before the $fault test"; done
    run_logged failover "$WORK/failover-$fault-$target.log" node "$BENCH/failover.mjs" --url "$url/2k.bin" \
      --pid "$(cat "$WORK/pids/nginx-primary")" --fault "$fault" --window-ms "$window" --timeout-ms "$window" ||
      die "failover measurement failed: $(tail -5 "$WORK/failover-$fault-$target.log")"
    record "{\"kind\":\"failover\",\"target\":\"$target\",\"result\":$(tail -1 "$WORK/failover-$fault-$target.log")}"
    restart_primary
  done
}

kill_under_load() {
  local target url log pid
  local seconds=$((RUN_SECONDS > 4 ? RUN_SECONDS + 1 : 5))
  say "requests failed when the primary is killed under load: wrk -c$CONNS ${seconds} s, SIGKILL at 2 s"
  start_workerd
  for target in "${VERSUS[@]}"; do
    url=$PRODUCT
    [ "$target" = anchor ] && url=$ANCHOR
    log=$WORK/wrk-kill-$target.log
    wrk -t"$THREADS" -c"$CONNS" -d"${seconds}s" --timeout 5s -s "$BENCH/wrk-json.lua" "$url/2k.bin" >"$log" 2>&1 &
    pid=$!
    echo "$pid" >"$WORK/pids/wrk"
    sleep 2
    kill -KILL "$(cat "$WORK/pids/nginx-primary")"
    wait "$pid" || die "wrk failed: $(tail -5 "$log")"
    rm -f "$WORK/pids/wrk"
    record "{\"kind\":\"kill_under_load\",\"target\":\"$target\",\"connections\":$CONNS,\"seconds\":$seconds,\"result\":$(sed -n 's/^WRK_JSON //p' "$log")}"
    restart_primary
  done
}

# The first and the second failover in one isolate: the first runs code
# the isolate has not run for a request yet (the warm path, src/warm.rs,
# ran it once off the request's path); by the second, a failover and a
# fail-back have run it. A fresh workerd per round, product only, probing
# every REFAIL_HEALTH_INTERVAL_MS so the fail-back between the kills is
# quick.
second_failover() {
  local round nth log
  say "first vs second failover in one isolate: $REFAIL_ROUNDS rounds (fresh workerd each), kill, fail back (probes every ${REFAIL_HEALTH_INTERVAL_MS} ms), kill again"
  for round in $(seq "$REFAIL_ROUNDS"); do
    start_workerd "$WORK/refail.capnp" --product-only
    for _ in 1 2 3 4 5; do curl -fsS -o /dev/null "$PRODUCT/2k.bin" || die "product did not answer before the failover round"; done
    for nth in 1 2; do
      if [ "$nth" = 2 ]; then
        log=$WORK/failback-$round.log
        run_logged failback "$log" node "$BENCH/failback.mjs" --url "$PRODUCT/2k.bin" ||
          die "the product did not fail back to the restarted primary: $(tail -3 "$log")"
        record "{\"kind\":\"failback\",\"round\":$round,\"result\":$(tail -1 "$log")}"
      fi
      log=$WORK/refail-$round-$nth.log
      run_logged failover "$log" node "$BENCH/failover.mjs" --url "$PRODUCT/2k.bin" \
        --pid "$(cat "$WORK/pids/nginx-primary")" --fault kill --window-ms 500 --timeout-ms 3000 ||
        die "failover measurement failed: $(tail -5 "$log")"
      record "{\"kind\":\"refailover\",\"round\":$round,\"nth\":$nth,\"result\":$(tail -1 "$log")}"
      restart_primary
    done
  done
}

failover kill 3000
kill_under_load
failover hang 5000
second_failover
stop_proc workerd

# ---------------------------------------------------------- cold start ----

say "cold start: workerd start to first answered request, $COLD_REPS x ${VERSUS[*]}, one Worker per process"
for rep in $(seq "$COLD_REPS"); do
  for target in "${VERSUS[@]}"; do
    log=$WORK/cold-$target-$rep.log
    run_logged coldstart "$log" node "$BENCH/coldstart.mjs" --workerd "$(command -v workerd)" \
      --config "$WORK/cold-$target.capnp" --url "http://127.0.0.1:$PORT_COLD/2k.bin" --pidfile "$WORK/pids/cold-workerd" ||
      die "cold start of $target failed: $(tail -5 "$log")"
    rm -f "$WORK/pids/cold-workerd"
    record "{\"kind\":\"cold_start\",\"target\":\"$target\",\"rep\":$rep,\"result\":$(tail -1 "$log")}"
  done
done

# ------------------------------------------------------- shared health ----

say "many isolates, primary hung: requests that waited a full timeout, isolate-local vs colo-shared health, SILENCE_MS off vs on (about 40 s)"
run_logged isolates "$WORK/isolates.log" node "$BENCH/isolates.mjs" "$WORK/isolates.json" ||
  die "shared-health run failed: $(tail -5 "$WORK/isolates.log")"
record "{\"kind\":\"isolates\",\"result\":$(cat "$WORK/isolates.json")}"

# -------------------------------------------------------------- report ----

revision=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
mkdir -p "$OUT"
node "$BENCH/report.mjs" "$RESULTS" "$OUT" \
  --meta "$(printf '{"revision":"%s","workerd":"%s","nginx":"%s","wrk":"%s","node":"%s","cpus":%s,"loadavg_end":"%s","rounds":%s,"seconds":%s,"steering_rounds":%s,"steering_seconds":%s,"connections":%s,"threads":%s,"attempt_timeout_ms":%s,"refail_rounds":%s,"refail_health_interval_ms":%s,"wall_s":%s}' \
    "$revision" "$(workerd --version 2>&1 | head -1)" "$("$NGINX" -v 2>&1 | head -1)" "$(wrk -v 2>&1 | head -1 | cut -c1-40)" \
    "$(node --version)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$ROUNDS" "$RUN_SECONDS" "$STEERING_ROUNDS" "$STEERING_SECONDS" \
    "$CONNS" "$THREADS" "$ATTEMPT_TIMEOUT_MS" "$REFAIL_ROUNDS" "$REFAIL_HEALTH_INTERVAL_MS" "$SECONDS")"
