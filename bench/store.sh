#!/usr/bin/env bash
# The CMDB on PostgreSQL against the embedded store, side by side in one run. A benchmark: it
# prints figures and never fails on them.
#   1. DHCP: 4-way exchanges/s, drops and delays (perfdhcp, as bench/dhcp.sh) for rackboot on its
#      embedded store, rackboot on PostgreSQL, and Kea 2.2 with its PostgreSQL lease backend, all
#      against one throwaway PostgreSQL 15 cluster (fsync on) on a Unix socket; then rackboot on
#      both stores while one source floods boot scripts with made-up MACs (1b).
#   2. API list latency with MACHINES machines (examples/cmdb_scale.rs) on both stores, the
#      PostgreSQL one filled by `rackboot store migrate` from the embedded one (timed).
#   3. DHCP pair failover: how long the standby takes to answer after the primary stops
#      (tests/it/estate/dhcp_pair.rs, takeover_secs = 2), three runs; and after kill -9 of the primary
#      under relayed load with real clients (tests/it/e2e/pair.rs), three runs.
#
#   bench/store.sh [MACHINES] [RATES...]     default 100000, rates 1000 2000 5000   (as root)
#   ONLY=dhcp bench/store.sh 0 [RATES...]    part 1 alone
set -euo pipefail
cd "$(dirname "$0")/.."
MACHINES=${1:-100000}; shift || true
RATES=("${@:-1000 2000 5000}")
read -r -a RATES <<< "${RATES[*]}"
PERIOD=${PERIOD:-10}
SRV=rbstore-srv CLI=rbstore-cli PREFIX=15
source bench/pair.sh
PG="$WORK/pg"; mkdir -p "$PG"; chmod 755 "$WORK" "$PG"
trap 'tests/pg/cluster.sh stop "$PG"; bench_cleanup' EXIT
URL=$(tests/pg/cluster.sh start "$PG")
psql() { command psql "$URL" -qAtX "$@"; }
mkdir -p /run/kea

rb_config() {  # $1: extra [store] text
  rm -rf "$WORK/rb"; mkdir -p "$WORK/rb"
  cat > "$WORK/rb.toml" <<TOML
[server]
data_dir = "$WORK/rb"
interface = "eth0"
# Every perfdhcp client is a new MAC: no eviction of unclaimed machines during the run, so the
# figures are DHCP's and the store's, not the eviction's (each eviction is a delete cascade).
max_unclaimed_machines = 1000000
[http]
listen = "198.18.0.1:8080"
[dhcp]
mode = "full"
[[dhcp.subnets]]
cidr = "198.18.0.0/15"
pools = ["198.18.1.0-198.19.255.250"]
routers = ["198.18.0.1"]
lease_secs = 4000
$1
TOML
}

start_rackboot() {  # $1: "embedded" or "postgres"
  if [ "$1" = postgres ]; then
    psql -c "DROP SCHEMA IF EXISTS bench CASCADE; CREATE SCHEMA bench"
    rb_config "[store]
backend = \"postgres\"
url = \"$URL\"
schema = \"bench\""
  else
    rb_config ""
  fi
  taskset -c 0 ip netns exec $SRV "$BIN" serve --config "$WORK/rb.toml" > "$WORK/rb.log" 2>&1 &
  PID=$!
  for _ in $(seq 100); do ip netns exec $SRV curl -s -o /dev/null http://198.18.0.1:8080/healthz && return; sleep 0.1; done
  echo "rackboot did not start"; cat "$WORK/rb.log"; exit 1
}

start_kea_pg() {
  psql -c "DROP DATABASE IF EXISTS kea" -c "CREATE DATABASE kea"
  kea-admin db-init pgsql -h "$PG/sock" -u rackboot -p "" -n kea > "$WORK/kea-admin.log" 2>&1 \
    || { cat "$WORK/kea-admin.log"; exit 1; }
  cat > "$WORK/kea.json" <<JSON
{"Dhcp4": {"interfaces-config": {"interfaces": ["eth0"], "dhcp-socket-type": "udp"},
 "lease-database": {"type": "postgresql", "name": "kea", "host": "$PG/sock", "user": "rackboot"},
 "valid-lifetime": 4000,
 "subnet4": [{"id": 1, "subnet": "198.18.0.0/15", "pools": [{"pool": "198.18.1.0-198.19.255.250"}],
              "option-data": [{"name": "routers", "data": "198.18.0.1"}]}],
 "loggers": [{"name": "kea-dhcp4", "output_options": [{"output": "$WORK/kea.log"}], "severity": "WARN"}]}}
JSON
  taskset -c 0 ip netns exec $SRV kea-dhcp4 -c "$WORK/kea.json" > "$WORK/kea.out" 2>&1 &
  PID=$!
  sleep 2
}

stop() { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }

measure() {
  { taskset -c 1 ip netns exec $CLI perfdhcp -4 "$@" 198.18.0.1 2>&1 || true; } | awk '
    /^Rate:/ {rate=$2}
    /^sent packets/ {sent+=$3} /^received packets/ {recv+=$3}
    /^avg delay/ {if ($3+0>avg) avg=$3+0}
    /^max delay/ {if ($3+0>max) max=$3+0}
    END {d = sent ? 100*(sent-recv)/sent : 100; printf "%8.0f %7.2f %8.2f %8.2f\n", rate, d, avg, max}'
}

echo "== 1. DHCP: rackboot embedded | rackboot on PostgreSQL | Kea 2.2 on PostgreSQL (perfdhcp ${PERIOD} s per run)"
printf "%-9s | %-35s | %-35s | %-35s\n" "offered/s" "rackboot, embedded store" "rackboot, PostgreSQL" "Kea, PostgreSQL lease backend"
printf "%-9s |%s |%s |%s\n" "" " 4-way/s  drops%   avg ms   max ms" " 4-way/s  drops%   avg ms   max ms" " 4-way/s  drops%   avg ms   max ms"
for r in "${RATES[@]}"; do
  start_rackboot embedded; a=$(measure -r "$r" -R 1000000 -p "$PERIOD"); stop
  start_rackboot postgres; b=$(measure -r "$r" -R 1000000 -p "$PERIOD"); stop
  start_kea_pg;            c=$(measure -r "$r" -R 1000000 -p "$PERIOD"); stop
  printf "%-9s |%s |%s |%s\n" "$r" "$a" "$b" "$c"
done
rows=$(psql -c "SELECT count(*) FROM bench.leases"); echo "(leases in the PostgreSQL store after the last rackboot run: $rows)"

echo
FLOOD_RATE=${FLOOD_RATE:-1000}
echo "== 1b. DHCP at $FLOOD_RATE/s offered while one source floods /boot/ipxe with made-up MACs (wrk, 4 connections, bench/flood.lua)"
printf "%-22s |%s | %s\n" "" " 4-way/s  drops%   avg ms   max ms" "the flood"
for store in embedded postgres; do
  start_rackboot $store
  taskset -c 1 ip netns exec $CLI wrk -t 1 -c 4 -d $((PERIOD + 2))s -s bench/flood.lua http://198.18.0.1:8080 > "$WORK/flood.out" 2>&1 &
  FLOOD=$!
  sleep 1
  row=$(measure -r "$FLOOD_RATE" -R 1000000 -p "$PERIOD")
  wait $FLOOD || true
  stop
  printf "%-22s |%s | %s boot scripts/s\n" "rackboot, $store" "$row" "$(awk '/^Requests\/sec/ {printf "%.0f", $2}' "$WORK/flood.out")"
done
[ "${ONLY:-}" = dhcp ] && exit 0

echo
echo "== 2. API with $MACHINES machines, 10 events each: embedded store, then PostgreSQL"
cargo build --release --locked --example cmdb_scale --quiet
SCALE=target/release/examples/cmdb_scale
mkdir -p "$WORK/scale"
"$SCALE" fill "$WORK/scale" "$MACHINES" 10
"$SCALE" measure "$WORK/scale" 2>&1 | grep -v '^rackboot: admin token'
printf '[server]\ndata_dir = "%s"\n' "$WORK/scale" > "$WORK/scale.toml"
psql -c "DROP SCHEMA IF EXISTS scale CASCADE; CREATE SCHEMA scale"
t0=$(date +%s.%N)
"$BIN" store migrate --config "$WORK/scale.toml" --to "$URL" --schema scale | tail -1
echo "store migrate took $(echo "$(date +%s.%N) - $t0" | bc) s"
mv "$WORK/scale/rackboot.redb" "$WORK/scale/rackboot.redb.moved"
STORE_URL="$URL" STORE_SCHEMA=scale "$SCALE" measure "$WORK/scale" 2>&1 | grep -v '^rackboot: admin token'

echo
echo "== 3. DHCP pair failover (takeover_secs = 2; the primary's last beat is up to 1 s before it stops)"
for i in 1 2 3; do
  cargo test --release --locked --quiet --test it estate::dhcp_pair:: -- --nocapture 2>&1 | grep "standby answered" || echo "run $i: failed"
done
echo "   kill -9 of the primary under relayed load (tests/it/e2e/pair.rs: dhcrelay, 6 dhclients, perfdhcp at 40/s):"
for i in 1 2 3; do
  cargo test --release --locked --quiet --test it e2e::pair:: -- --include-ignored --nocapture 2>&1 \
    | grep -E "first ACK from the standby|clients ACKed" | tr '\n' ' ' || echo "run $i: failed"
  echo
done
