#!/usr/bin/env bash
# Power actions on many fake Redfish BMCs (HTTPS with a pinned certificate, sessions, a fixed
# latency per request: tests/bmc_fake) through the power service with its caps on: throughput
# and p50/p99 per action, and the most sessions the BMCs saw open at once. A benchmark: prints,
# never fails (unless a cap is broken).
#
#   bench/bmc.sh [BMCS] [CAP] [LATENCY_MS] [ROUNDS]
#
# sushy-emulator --fake is not used here: its fake driver applies each power change 1-11 s
# later at random (so it measures its own sleep), and 200 Python processes would need some
# 8 GB; tests/it/bmc/sushy.rs checks the protocol against it instead.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
export BMCS=${1:-200} CAP=${2:-16} LATENCY_MS=${3:-20} ROUNDS=${4:-3}  # the test alone: 20, 8, 20, 1
cargo test --release --quiet --locked --test it bmc::bench:: -- --nocapture 2>&1 | grep -E '^(bmc bench|  )'
