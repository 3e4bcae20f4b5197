#!/usr/bin/env bash
# The agent controller under 1,000 long-polling agents (bootos/agent's agent-load tool), on
# loopback, over HTTPS and then over plain HTTP (a fresh appliance each, `http.loopback_api`):
# rackboot's CPU and RSS while the agents only idle-poll, and the time from a job's submission
# to its agent receiving it (median, p99). A benchmark: prints, never fails.
#
#   bench/agents.sh [AGENTS] [JOBS] [IDLE_SECS]   (RACKBOOT_BIN: another rackboot binary)
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTS=${1:-1000}
JOBS=${2:-300}
IDLE=${3:-60}
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --quiet --locked -p rackboot -p rackboot-agent
WORK=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
PORT=18080
TLS_PORT=18443

# run MODE: one appliance, AGENTS agents over MODE (https or http); agent-load's lines go to
# $WORK/MODE.out.
run() {
  local mode=$1 data="$WORK/$1"
  cat > "$WORK/$mode.toml" <<TOML
[server]
data_dir = "$data"
address = "127.0.0.1"
# Each agent's machine is new to the CMDB: none may be evicted to make room for the next.
max_unclaimed_machines = $((AGENTS * 2 + 100))
[http]
listen = "127.0.0.1:$PORT"
# Every agent from one address, on its own connection: the caps (8,192 connections, 256 per
# client by default) must let them all in, or the agents past them retry for ever.
max_connections = $((AGENTS + 1024))
max_connections_per_client = $((AGENTS + 512))
loopback_api = true
[https]
listen = "127.0.0.1:$TLS_PORT"
[dhcp]
mode = "off"
[tftp]
enabled = false
[dns]
enabled = false
[agent]
networks = ["127.0.0.0/8"]
# Every simulated agent enrolls from this one address.
enrollments_per_minute_per_source = 0
TOML
  "${RACKBOOT_BIN:-target/release/rackboot}" serve --config "$WORK/$mode.toml" > "$WORK/$mode.log" 2>&1 & PID=$!
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
  echo "== $mode: rackboot RSS before the agents: $(awk '/VmRSS/ {printf "%.1f MB", $2/1024}' /proc/$PID/status)"
  local url=(--url "http://127.0.0.1:$PORT")
  [ "$mode" = https ] && url=(--url "https://127.0.0.1:$TLS_PORT" --ca "$data/tls/ca.pem")
  target/release/agent-load "${url[@]}" --token-file "$data/admin.token" \
    --agents "$AGENTS" --jobs "$JOBS" --idle-secs "$IDLE" --server-pid "$PID" | tee "$WORK/$mode.out"
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
}
run https
run http

echo
echo "== side by side, $AGENTS agents"
for mode in https http; do
  printf '%-6s %s\n' "$mode" "$(grep -h 'enrolled in\|idle polling\|submission' "$WORK/$mode.out" | tr '\n' ' ')"
done
