#!/usr/bin/env bash
# The CMDB at scale (examples/cmdb_scale.rs, release build): fills a data dir with MACHINES
# machines of EVENTS timeline events each, then starts the appliance on it in a fresh process and
# prints the start-up time, RSS, file size and the hot paths (a boot script, one machine, filtered
# list pages, a search, a timeline), for 1,000 machines and for MACHINES, one after the other, so
# what grows with the machine count shows beside what does not. A benchmark: prints, never fails.
#
#   bench/cmdb.sh [MACHINES] [EVENTS]      default 100000 10
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked --example cmdb_scale
BIN=target/release/examples/cmdb_scale
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
for n in 1000 "${1:-100000}"; do
  echo "== $n machines, ${2:-10} events each"
  mkdir -p "$WORK/$n"
  "$BIN" fill "$WORK/$n" "$n" "${2:-10}"
  "$BIN" measure "$WORK/$n" 2>&1 | grep -v '^rackboot: admin token'
done
