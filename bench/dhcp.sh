#!/usr/bin/env bash
# DHCP throughput, side by side: rackboot against Kea 2.2 (memfile, leases persisted to its CSV
# file), same namespaces, same veth, same perfdhcp runs. Prints 4-way exchanges/s, drops, delays,
# RSS and the server's CPU milliseconds per 1,000 exchanges (the server pinned to CPU 0, perfdhcp
# to CPU 1, so the generator's own CPU is not counted and does not compete). A benchmark, not a
# test: it prints figures and never fails on them.
#
#   bench/dhcp.sh [RATES...]        default rates: 2000 5000 8000 10000 12000 15000   (as root)
#   bench/dhcp.sh -6 [RATES...]     DHCPv6 instead: rackboot's [dhcp6] against kea-dhcp6 (memfile),
#                                   perfdhcp -6 SOLICIT/ADVERTISE/REQUEST/REPLY on fd18::/64
#   PROFILE=DIR bench/dhcp.sh RATE  also records `perf record -g` of rackboot at each rate into
#                                   DIR/rackboot-RATE.perf (read it with `perf report -i`);
#                                   PERF_CALLGRAPH="--call-graph dwarf" for whole stacks (a
#                                   release build has no frame pointers: `-g` stops at the
#                                   first frame). Symbols need CARGO_PROFILE_RELEASE_STRIP=none.
#
# Needs root, perfdhcp (kea-admin), kea-dhcp4-server (kea-dhcp6-server for -6); builds rackboot
# in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."
V6=0
[ "${1:-}" = "-6" ] && { V6=1; shift; }
RATES=("${@:-2000 5000 8000 10000 12000 15000}")
read -r -a RATES <<< "${RATES[*]}"
PERIOD=${PERIOD:-10}
SRV=rbbench-srv CLI=rbbench-cli PREFIX=15
source bench/pair.sh
mkdir -p /run/kea
if [ $V6 = 1 ]; then
  for ns in $SRV $CLI; do ip netns exec $ns sysctl -qw net.ipv6.conf.eth0.accept_dad=0; done
  ip -n $SRV addr add fd18::1/64 dev eth0 nodad
  for ns in $SRV $CLI; do ip -n $ns link set eth0 down; ip -n $ns link set eth0 up; done
  sleep 1
fi

start_rackboot() {
  rm -rf "$WORK/rb"; mkdir -p "$WORK/rb"
  cat > "$WORK/rb.toml" <<TOML
[server]
data_dir = "$WORK/rb"
interface = "eth0"
[http]
listen = "198.18.0.1:8080"
TOML
  if [ $V6 = 1 ]; then
    cat >> "$WORK/rb.toml" <<TOML
[dhcp]
mode = "off"
[dhcp6]
enabled = true
[[dhcp6.subnets]]
prefix = "fd18::/64"
pools = ["fd18::1:0-fd18::ffff:ffff"]
preferred_secs = 3000
valid_secs = 4000
TOML
  else
    cat >> "$WORK/rb.toml" <<TOML
[dhcp]
mode = "full"
[[dhcp.subnets]]
cidr = "198.18.0.0/15"
pools = ["198.18.1.0-198.19.255.250"]
routers = ["198.18.0.1"]
lease_secs = 4000
TOML
  fi
  taskset -c 0 ip netns exec $SRV "$BIN" serve --config "$WORK/rb.toml" > "$WORK/rb.log" 2>&1 &
  PID=$!
  for _ in $(seq 50); do ip netns exec $SRV curl -s -o /dev/null http://198.18.0.1:8080/healthz && return; sleep 0.1; done
  echo "rackboot did not start"; cat "$WORK/rb.log"; exit 1
}

start_kea() {
  rm -f "$WORK/kea.leases"
  if [ $V6 = 1 ]; then
    cat > "$WORK/kea.json" <<JSON
{"Dhcp6": {"interfaces-config": {"interfaces": ["eth0"]},
 "lease-database": {"type": "memfile", "persist": true, "name": "$WORK/kea.leases", "lfc-interval": 0},
 "preferred-lifetime": 3000, "valid-lifetime": 4000,
 "server-id": {"type": "LL", "persist": false},
 "subnet6": [{"id": 1, "subnet": "fd18::/64", "interface": "eth0", "pools": [{"pool": "fd18::1:0-fd18::ffff:ffff"}]}],
 "loggers": [{"name": "kea-dhcp6", "output_options": [{"output": "$WORK/kea.log"}], "severity": "WARN"}]}}
JSON
    taskset -c 0 ip netns exec $SRV kea-dhcp6 -c "$WORK/kea.json" > "$WORK/kea.out" 2>&1 &
    PID=$!
    sleep 1.5
    return
  fi
  cat > "$WORK/kea.json" <<JSON
{"Dhcp4": {"interfaces-config": {"interfaces": ["eth0"], "dhcp-socket-type": "udp"},
 "lease-database": {"type": "memfile", "persist": true, "name": "$WORK/kea.leases", "lfc-interval": 0},
 "valid-lifetime": 4000,
 "subnet4": [{"id": 1, "subnet": "198.18.0.0/15", "pools": [{"pool": "198.18.1.0-198.19.255.250"}],
              "option-data": [{"name": "routers", "data": "198.18.0.1"}]}],
 "loggers": [{"name": "kea-dhcp4", "output_options": [{"output": "$WORK/kea.log"}], "severity": "WARN"}]}}
JSON
  taskset -c 0 ip netns exec $SRV kea-dhcp4 -c "$WORK/kea.json" > "$WORK/kea.out" 2>&1 &
  PID=$!
  sleep 1.5
}

stop() { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }

rss_mb() { awk '/VmHWM/ {printf "%.0f", $2/1024}' /proc/"$PID"/status 2>/dev/null || echo "-"; }

cpu_ticks() { awk '{print $14+$15}' /proc/"$PID"/stat 2>/dev/null || echo 0; }

# perfdhcp output -> "rate drops% avg_ms max_ms cpu_ms_per_1000" (drops and delays: the worse of
# the two phases; CPU: the server's user+system time over the run per 1,000 4-way exchanges)
measure() {
  local t0 t1 out
  t0=$(cpu_ticks)
  local gen=(perfdhcp -4 "$@" 198.18.0.1)
  [ $V6 = 1 ] && gen=(perfdhcp -6 -l eth0 "$@" all)
  out=$({ taskset -c 1 ip netns exec $CLI "${gen[@]}" 2>&1 || true; } | awk '
    /^Rate:/ {rate=$2}
    /^sent packets/ {sent+=$3} /^received packets/ {recv+=$3}
    /^avg delay/ {if ($3+0>avg) avg=$3+0}
    /^max delay/ {if ($3+0>max) max=$3+0}
    END {d = sent ? 100*(sent-recv)/sent : 100; printf "%.0f %.2f %.2f %.2f\n", rate, d, avg, max}')
  t1=$(cpu_ticks)
  echo "$out" | awk -v ticks=$((t1 - t0)) -v period="$PERIOD" '{ex = $1 * period; printf "%s %.0f\n", $0, ex ? ticks * 10 * 1000 / ex : 0}'
}

KEA="Kea 2.2 memfile"; [ $V6 = 1 ] && KEA="Kea 2.2 DHCPv6 memfile"
printf "%-9s | %-53s | %-53s | %s\n" "" "rackboot" "$KEA" "CPU"
printf "%-9s | %8s %7s %8s %8s %7s %8s | %8s %7s %8s %8s %7s %8s | %s\n" "offered/s" "4-way/s" "drops%" "avg ms" "max ms" "RSS MB" "CPU ms/k" "4-way/s" "drops%" "avg ms" "max ms" "RSS MB" "CPU ms/k" "rb/Kea"
for r in "${RATES[@]}"; do
  start_rackboot
  if [ -n "${PROFILE:-}" ]; then
    mkdir -p "$PROFILE"
    (sleep 1; perf record -q ${PERF_CALLGRAPH:--g} -p "$PID" -o "$PROFILE/rackboot-$r.perf" -- sleep $((PERIOD - 2)) > /dev/null 2>&1) &
  fi
  a=$(measure -r "$r" -R 1000000 -p "$PERIOD"); ra=$(rss_mb); stop
  start_kea;      b=$(measure -r "$r" -R 1000000 -p "$PERIOD"); rb=$(rss_mb); stop
  read -r a1 a2 a3 a4 a5 <<< "$a"; read -r b1 b2 b3 b4 b5 <<< "$b"
  ratio=$(awk -v x="$a5" -v y="$b5" 'BEGIN {printf (y > 0 ? "%.2f" : "-"), (y > 0 ? x / y : 0)}')
  printf "%-9s | %8s %7s %8s %8s %7s %8s | %8s %7s %8s %8s %7s %8s | %s\n" "$r" "$a1" "$a2" "$a3" "$a4" "$ra" "$a5" "$b1" "$b2" "$b3" "$b4" "$rb" "$b5" "$ratio"
done
echo
echo "burst: 1,000 new clients at once (perfdhcp -R 1000 -n 1000 -r 20000 -W 3000000)"
start_rackboot; a=$(measure -R 1000 -n 1000 -r 20000 -W 3000000); stop
start_kea;      b=$(measure -R 1000 -n 1000 -r 20000 -W 3000000); stop
echo "  rackboot: drops ${a#* }" | awk '{print $1, $2, $3"%", "avg", $4, "ms max", $5, "ms"}'
echo "  kea:      drops ${b#* }" | awk '{print $1, $2, $3"%", "avg", $4, "ms max", $5, "ms"}'
