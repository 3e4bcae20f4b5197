#!/usr/bin/env bash
# The agent controller under 1,000 long-polling agents (bootos/agent's agent-load tool), on
# loopback: rackboot's CPU and RSS while the agents only idle-poll, and the time from a job's
# submission to its agent receiving it (median, p99). A benchmark: prints, never fails.
#
#   bench/agents.sh [AGENTS] [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTS=${1:-1000}
JOBS=${2:-300}
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --quiet --locked -p rackboot -p rackboot-agent
WORK=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
PORT=18080
TLS_PORT=18443
cat > "$WORK/rb.toml" <<TOML
[server]
data_dir = "$WORK/data"
address = "127.0.0.1"
[http]
listen = "127.0.0.1:$PORT"
# 1,000 agents from one address: the per-client cap must let them all in.
max_connections_per_client = 4096
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
TOML
target/release/rackboot serve --config "$WORK/rb.toml" > "$WORK/rb.log" 2>&1 & PID=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
echo "rackboot RSS before the agents: $(awk '/VmRSS/ {printf "%.1f MB", $2/1024}' /proc/$PID/status)"
target/release/agent-load --url "https://127.0.0.1:$TLS_PORT" --ca "$WORK/data/tls/ca.pem" --token-file "$WORK/data/admin.token" \
  --agents "$AGENTS" --jobs "$JOBS" --idle-secs 60 --server-pid "$PID"
