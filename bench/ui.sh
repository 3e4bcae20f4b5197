#!/usr/bin/env bash
# The web UI at 10,000 machines and its live stream under a boot storm (examples/ui_load.rs,
# in-process on loopback, release build): server time of the machine list, a deep sorted page,
# a search, the dashboard and a rack page; then 100 open rack pages while 1,000 machines DHCP at
# once and the rack's 42 machines boot among them, with the event delivery time (DISCOVER to the
# first live frame naming the machine) per page and machine. A benchmark: prints, never fails.
#
#   bench/ui.sh [MACHINES] [STREAMS] [BOOTS]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
ulimit -n 65536 2>/dev/null || true
cargo build --release --locked --example ui_load
target/release/examples/ui_load "${1:-10000}" "${2:-100}" "${3:-1000}" 2>&1 | grep -v '^rackboot: admin token'
