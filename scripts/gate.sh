#!/usr/bin/env bash
# The operator's gate test, end to end on loopback: two real failover-agent
# processes (primary, standby) with fake connectors, 1 s intervals. Prints a
# timing table and exits non-zero if any step did not happen within its
# deadline. Run by `make gate`.
#
# Scenario A, failover: cut the primary's egress (its connector loses the
# edge), restore it. Scenario B, maintenance: set the flag on the primary,
# hold it, release it. A bare connector stop would test fail-back instead
# (the primary restarts it first), so it is not used to test failover.
#
# A sampler reads both connectors' /ready every 50 ms throughout, so the
# table also shows how long both served at once after a fail-back (make
# before break: the primary stops the standby once its own is ready; target
# <= 2 s) and how long NONE served during planned maintenance (target 0),
# at the sampler's resolution (50-100 ms); the primary's log adds the order
# of the two events, which no sampling can miss.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEADLINE_S=${GATE_DEADLINE_S:-30}
HOLD_S=${GATE_HOLD_S:-5}

cargo build --quiet -p failover-agent --bins --manifest-path "$ROOT/Cargo.toml"
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps --manifest-path "$ROOT/Cargo.toml" \
  | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
AGENT="$TARGET_DIR/debug/failover-agent"
FAKE="$TARGET_DIR/debug/fake-connector"

# Not under /tmp, /var/tmp or /home: the agent refuses a maintenance flag
# there (the packaged unit hides those from it). /dev/shm is on every Linux.
SCRATCH_ROOT=/dev/shm
[ -d "$SCRATCH_ROOT" ] || SCRATCH_ROOT="$ROOT/target"
WORK=$(mktemp -d "$SCRATCH_ROOT/failover-gate.XXXXXX")
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for node in primary standby; do
    if [ -f "$WORK/$node.pid" ]; then kill "$(cat "$WORK/$node.pid")" 2>/dev/null || true; fi
  done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
}

now_ms() { date +%s%3N; }
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$1$2" 2>/dev/null || true; }
serving() { [ "$(code "$1" /ready)" = 200 ]; }
running() { [ -f "$WORK/$1.pid" ] && kill -0 "$(cat "$WORK/$1.pid")" 2>/dev/null; }

# wait_for DESCRIPTION COMMAND...: polls every 100 ms; prints ms waited.
wait_for() {
  local what=$1; shift
  local start; start=$(now_ms)
  while ! "$@"; do
    if [ $(( $(now_ms) - start )) -gt $((DEADLINE_S * 1000)) ]; then
      echo "GATE FAILED: not within ${DEADLINE_S}s: $what" >&2
      for node in primary standby; do echo "----- $node agent log -----" >&2; cat "$WORK/$node.log" >&2; done
      exit 1
    fi
    sleep 0.1
  done
}

egress() { "$FAKE" --listen "127.0.0.1:$1" --id egress >/dev/null 2>&1 & PIDS+=($!); eval "$2=$!"; }

P_AGENT=$(free_port); S_AGENT=$(free_port); P_CONN=$(free_port); S_CONN=$(free_port)
P_EDGE=$(free_port); S_EDGE=$(free_port)
# Owner-only and at least 16 characters, or check-config refuses it.
(umask 077; echo "gate-token-$(printf '%05d%05d' "$RANDOM" "$RANDOM")" > "$WORK/token")

write_config() { # name role agent_port conn_port edge_port peer_port
  mkdir -p "$WORK/$1.state"
  cat > "$WORK/$1.toml" <<TOML
role = "$2"
listen = "127.0.0.1:$3"
token_file = "$WORK/token"
maintenance_flag = "$WORK/$1.maintenance"
state_dir = "$WORK/$1.state"
poll_interval = "1s"
failback_interval = "1s"
probe_timeout = "800ms"

[connector]
ready_url = "http://127.0.0.1:$4/ready"
control = "command"
start_command = "'$FAKE' --listen 127.0.0.1:$4 --edge 127.0.0.1:$5 --id $1 >/dev/null 2>&1 & echo \$! > '$WORK/$1.pid'"
stop_command = "if [ -f '$WORK/$1.pid' ]; then kill \$(cat '$WORK/$1.pid') 2>/dev/null; rm -f '$WORK/$1.pid'; fi"
status_command = "[ -f '$WORK/$1.pid' ] && kill -0 \$(cat '$WORK/$1.pid') 2>/dev/null"

[peer]
agent_url = "http://127.0.0.1:$6"

[egress]
url = "http://127.0.0.1:$5/cdn-cgi/trace"
TOML
  "$AGENT" --config "$WORK/$1.toml" check-config >/dev/null
}

write_config primary primary "$P_AGENT" "$P_CONN" "$P_EDGE" "$S_AGENT"
write_config standby standby "$S_AGENT" "$S_CONN" "$S_EDGE" "$P_AGENT"
egress "$P_EDGE" P_EGRESS_PID
egress "$S_EDGE" S_EGRESS_PID
"$AGENT" --config "$WORK/primary.toml" run 2>"$WORK/primary.log" & PIDS+=($!)
"$AGENT" --config "$WORK/standby.toml" run 2>"$WORK/standby.log" & PIDS+=($!)

not_serving_standby() { ! running standby; }
stopped_primary() { ! running primary; }
primary_only() { serving "$P_CONN" && ! running standby; }
wait_for "the primary serves after start-up" primary_only
# Let the start-up fail-back age past the reversal window (10 fail-back
# intervals): a take-over right after a fail-back is damped on purpose, and
# the table should show the undamped clocks.
sleep 11

# Rows are printed as they happen: the whole run takes a minute or two.
echo "gate: two agents on loopback, poll_interval=1s takeover_after=3 failback_interval=1s failback_after=2"
printf '%-62s %11s\n' "step" "elapsed"
row() { printf '%-62s %8s ms\n' "$1" "$2"; }
count_row() { printf '%-62s %8s\n' "$1" "$2"; }

# One line per 50 ms: "<ms> <primary serving 0|1> <standby serving 0|1>".
sampler() {
  while :; do
    local p=0 s=0
    serving "$P_CONN" && p=1
    serving "$S_CONN" && s=1
    echo "$(now_ms) $p $s"
    sleep 0.05
  done
}
sampler > "$WORK/samples" & PIDS+=($!)
# window FROM TO: "<longest both-serving run> <total none-serving>" in ms.
window() {
  awk -v from="$1" -v to="$2" '
    $1 < from || $1 > to { next }
    prev != "" { dt = $1 - prev
                 if (pb && ps) { run += dt; if (run > both) both = run } else run = 0
                 if (!pb && !ps) none += dt }
    { prev = $1; pb = $2; ps = $3 }
    END { printf "%d %d\n", both, none }' "$WORK/samples"
}

# Scenario A: the primary loses egress (its connector loses the edge).
t0=$(now_ms); kill "$P_EGRESS_PID"; wait "$P_EGRESS_PID" 2>/dev/null || true
wait_for "standby serving after the primary lost egress" serving "$S_CONN"
row "A1 primary egress cut -> standby serving" $(( $(now_ms) - t0 ))
wait_for "primary connector stopped by the standby" stopped_primary
row "A2 primary egress cut -> primary connector stopped" $(( $(now_ms) - t0 ))
sleep "$HOLD_S"
running primary && { echo "GATE FAILED: the primary failed back without egress" >&2; exit 1; }
t1=$(now_ms); egress "$P_EDGE" P_EGRESS_PID
wait_for "primary serving again after egress returned" serving "$P_CONN"
row "A3 primary egress back -> primary serving" $(( $(now_ms) - t1 ))
wait_for "standby stood down" not_serving_standby
row "A4 primary egress back -> standby stood down" $(( $(now_ms) - t1 ))
sleep 0.3
read -r A_BOTH _ < <(window "$t1" "$(now_ms)")
row "A5 fail-back: both connectors serving at once (target <= 2000)" "$A_BOTH"

# Scenario B: the maintenance procedure on the primary.
t0=$(now_ms); "$AGENT" --config "$WORK/primary.toml" maintenance on >/dev/null
wait_for "primary connector drained" stopped_primary
t_loss=$(now_ms)
row "B1 flag set -> primary connector stopped" $(( t_loss - t0 ))
wait_for "standby serving during maintenance" serving "$S_CONN"
row "B2 primary connector stopped -> standby serving (0: before)" $(( $(now_ms) - t_loss ))
sleep "$HOLD_S"
running primary && { echo "GATE FAILED: the primary started under the maintenance flag" >&2; exit 1; }
t1=$(now_ms); "$AGENT" --config "$WORK/primary.toml" maintenance off >/dev/null
wait_for "primary serving after the flag was released" serving "$P_CONN"
row "B3 flag released -> primary serving again" $(( $(now_ms) - t1 ))
wait_for "standby stood down after maintenance" not_serving_standby
row "B4 flag released -> standby stood down" $(( $(now_ms) - t1 ))
sleep 0.3
read -r B_BOTH B_NONE < <(window "$t0" "$(now_ms)")
row "B5 maintenance on..off: no connector serving (target 0)" "$B_NONE"
row "B6 maintenance on..off: both serving at once, longest" "$B_BOTH"
# The sampler sees 50-100 ms steps; the agent's own log says the order.
MBB=$(grep -c "peer connector ready: stopping ours" "$WORK/primary.log" || true)
count_row "B7 primary stopped after the standby's /ready (log lines)" "$MBB"

# Counts: a run that ping-pongs reaches every step too. Exactly one take-over
# per scenario, and one fail-back per scenario plus the start-up one.
health() { curl -s --max-time 2 "http://127.0.0.1:$1/health" 2>/dev/null || true; }
counter() { health "$1" | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"; }
TAKEOVERS=$(counter "$S_AGENT" takeovers)
FAILBACKS=$(counter "$P_AGENT" failbacks)
count_row "standby take-overs (expected 1: A; B is a handover)" "${TAKEOVERS:-?}"
count_row "primary fail-backs (expected 3: start-up, A, B)" "${FAILBACKS:-?}"
fail() {
  echo "GATE FAILED: $1" >&2
  for node in primary standby; do echo "----- $node agent log -----" >&2; cat "$WORK/$node.log" >&2; done
  exit 1
}
if [ "${TAKEOVERS:-}" != 1 ] || [ "${FAILBACKS:-}" != 3 ]; then
  fail "take-overs=${TAKEOVERS:-?} fail-backs=${FAILBACKS:-?}; expected 1 and 3 (hand-over ping-pong?)"
fi
[ "$A_BOTH" -le 2000 ] || fail "both connectors served for $A_BOTH ms after the fail-back (target <= 2000)"
[ "$MBB" -ge 1 ] || fail "the primary did not wait for the standby's connector before stopping"
[ "$B_NONE" -eq 0 ] || fail "no connector served for $B_NONE ms during planned maintenance (target 0)"
echo "gate passed: every step happened within its bound"
