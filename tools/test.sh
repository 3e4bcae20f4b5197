#!/usr/bin/env bash
# The test command: installs what the tests need, then runs formatting and lint checks and every
# test, end-to-end ones included (they need root: network namespaces and real DHCP clients).
# One debug build serves every stage.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
source tools/setup.sh
[ "$(id -u)" = 0 ] || { echo "test.sh: run as root (the end-to-end tests create network namespaces)"; exit 1; }
echo "== cargo fmt --check"; cargo fmt --all -- --check
echo "== cargo clippy"; cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test (unit, integration, end-to-end)"
cargo test --workspace --locked -- --include-ignored
