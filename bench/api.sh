#!/usr/bin/env bash
# The REST API with 10,000 machines: list and filter times per query (p50, p90, max, from the
# request to the response's last byte on loopback; the body is not parsed). A benchmark: prints,
# never fails. The appliance runs in-process in the example (examples/api_list.rs).
#
#   bench/api.sh [MACHINES] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
echo "== building (release)"
cargo build --release --locked --example api_list
echo "== running"
target/release/examples/api_list "${1:-10000}" "${2:-20}"
