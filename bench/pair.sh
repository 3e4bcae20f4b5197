# Sourced by the benchmarks: two namespaces, $SRV (198.18.0.1) and $CLI (198.18.0.2), joined by a
# veth pair named eth0 on both sides with prefix $PREFIX, a work dir $WORK, and a release build
# at $BIN. Everything is removed on exit.
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
source tools/setup.sh --bench
[ "$(id -u)" = 0 ] || { echo "benchmarks run as root (network namespaces)"; exit 1; }
# The release build, brought up to date (a stale binary would measure old code; a fresh one
# costs cargo a second); RACKBOOT_BIN names another binary instead.
BIN=${RACKBOOT_BIN:-target/release/rackboot}
# The same packages as bench/all.sh and bench/agents.sh build: one feature set, no rebuild.
[ -n "${RACKBOOT_BIN:-}" ] || cargo build --release --locked --quiet -p rackboot -p rackboot-agent
WORK=$(mktemp -d)
bench_cleanup() {
  # SIGTERM first (rackboot stops within 2 s), SIGKILL only for what still runs 5 s later.
  for ns in $SRV $CLI; do ip netns pids $ns 2>/dev/null | xargs -r kill 2>/dev/null || true; done
  for _ in $(seq 50); do
    [ -z "$(ip netns pids $SRV 2>/dev/null)$(ip netns pids $CLI 2>/dev/null)" ] && break; sleep 0.1
  done
  for ns in $SRV $CLI; do
    ip netns pids $ns 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del $ns 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap bench_cleanup EXIT
for ns in $SRV $CLI; do ip netns del $ns 2>/dev/null || true; ip netns add $ns; ip -n $ns link set lo up; done
ip -n $SRV link add eth0 type veth peer name eth0 netns $CLI
ip -n $SRV addr add "198.18.0.1/$PREFIX" dev eth0 && ip -n $SRV link set eth0 up
ip -n $CLI addr add "198.18.0.2/$PREFIX" dev eth0 && ip -n $CLI link set eth0 up
