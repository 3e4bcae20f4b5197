#!/usr/bin/env bash
# DNS side by side: rackboot and dnsmasq serve the same 1,000-host zone (A and PTR) from one
# namespace; dnsperf in a second namespace sends A queries for every host (and, in a second run,
# a mix of A and PTR) with 8 clients for 10 s. Prints queries/s, average latency and lost
# queries, each server's CPU (cores, and microseconds per query answered: dnsperf shares the two
# cores, so queries/s is partly the client's limit, CPU per query the server's own), and
# rackboot's RSS. Then how long a new name takes to answer after the change
# that made it (bench/dnslat.py): for rackboot a machine created through the API, for dnsmasq
# a file moved into its --hostsdir (read on inotify), one change at a time after a pause
# ("quiet") and 100 changes a second ("churn"). A benchmark: prints, never fails.
#
#   bench/dns.sh [SECONDS]   (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
SRV=rbdns-srv CLI=rbdns-cli PREFIX=16
source bench/pair.sh
LEN=${1:-10}
chmod 755 "$WORK"
mkdir -p "$WORK/data"
cat > "$WORK/rb.toml" <<TOML
[server]
data_dir = "$WORK/data"
interface = "eth0"
address = "198.18.0.1"
[http]
listen = "198.18.0.1:8080"
[dhcp]
mode = "off"
[tftp]
enabled = false
[dns]
domain = "lab.rackboot.test"
reverse_zones = ["198.18.0.0/16"]
TOML

# The zone: h0001..h1000 at 198.18.1.1 upwards, as CMDB reservations for rackboot and as a hosts
# file for dnsmasq; the query files.
: > "$WORK/hosts"; : > "$WORK/q-a"; : > "$WORK/q-mix"; : > "$WORK/machines.json"
for i in $(seq 1 1000); do
  ip="198.18.$((1 + i / 250)).$((1 + i % 250))"
  name=$(printf "h%04d" "$i")
  echo "$ip $name.lab.rackboot.test $name" >> "$WORK/hosts"
  echo "$name.lab.rackboot.test A" >> "$WORK/q-a"
  echo "$name.lab.rackboot.test A" >> "$WORK/q-mix"
  IFS=. read -r a b c d <<< "$ip"; echo "$d.$c.$b.$a.in-addr.arpa PTR" >> "$WORK/q-mix"
  printf '{"macs":["52:54:00:77:%02x:%02x"],"hostname":"%s","reserved_ip":"%s"}\n' $((i / 256)) $((i % 256)) "$name" "$ip" >> "$WORK/machines.json"
done

PID=
stop() { if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi; PID=; sleep 0.3; }
start_rackboot() {
  ip netns exec $SRV "$BIN" serve --config "$WORK/rb.toml" > "$WORK/rb.log" 2>&1 & PID=$!
  for _ in $(seq 50); do ip netns exec $SRV curl -s -o /dev/null http://198.18.0.1:8080/healthz && break; sleep 0.1; done
  if [ ! -e "$WORK/loaded" ]; then
    local token; token=$(cat "$WORK/data/admin.token")
    while read -r m; do
      ip netns exec $SRV curl -sf -o /dev/null --cacert "$WORK/data/tls/ca.pem" -H "authorization: Bearer $token" \
        -H 'content-type: application/json' -d "$m" https://198.18.0.1/api/v1/machines
    done < "$WORK/machines.json"
    touch "$WORK/loaded"
  fi
  sleep 0.5
}
# start_dnsmasq [ARG...]: dnsmasq on the zone, with ARGs added.
start_dnsmasq() {
  ip netns exec $SRV dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
    --addn-hosts="$WORK/hosts" --local=/lab.rackboot.test/ --local=/18.198.in-addr.arpa/ \
    --listen-address=198.18.0.1 --bind-interfaces --cache-size=10000 --pid-file="$WORK/dnsmasq.pid" \
    "$@" > "$WORK/dnsmasq.log" 2>&1 & PID=$!; sleep 1
}
cpu_ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }

# Checks the server answers the zone, then runs dnsperf; prints "qps latency_ms lost%".
perf() {
  local first; first=$(ip netns exec $CLI dig +short @198.18.0.1 h0500.lab.rackboot.test)
  [ "$first" = "198.18.3.1" ] || { echo "wrong-answer:$first"; return; }
  ip netns exec $CLI dnsperf -s 198.18.0.1 -d "$1" -c 8 -l "$LEN" > "$WORK/perf.out" 2>&1 || true
  awk '/Queries per second/ {q=$4} /Average Latency/ {l=$4*1000} /Queries lost/ {gsub(/[()%]/,"",$4); lost=$4}
       END {printf "%.0f %.3f %s", q, l, lost}' "$WORK/perf.out"
}

echo "DNS, 1,000-host zone, dnsperf -c 8 for ${LEN} s from a second namespace"
printf "  %-16s %-10s %12s %14s %8s %8s %12s\n" queries server "queries/s" "avg latency ms" "lost %" cores "CPU us/query"
for q in q-a q-mix; do
  for srv in rackboot dnsmasq; do
    "start_$srv"
    t0=$(cpu_ticks "$PID")
    read -r qps lat lost <<< "$(perf "$WORK/$q")"
    t1=$(cpu_ticks "$PID")
    label=$([ $q = q-a ] && echo "A" || echo "A + PTR")
    cores=$(echo "$t0 $t1 $LEN" | awk '{print ($2-$1)/100/$3}')
    printf "  %-16s %-10s %12s %14s %8s %8.2f %12s" "$label" "$srv" "$qps" "$lat" "$lost" "$cores" \
      "$(echo "$cores $qps" | awk '$2 > 0 {printf "%.2f", $1 * 1e6 / $2; next} {print "-"}')"
    if [ $srv = rackboot ]; then
      printf "   (RSS %d MB)" $(($(awk '/VmRSS/ {print $2}' /proc/"$PID"/status) / 1024))
    fi
    echo
    stop
  done
done

# Change to answer, on the same 1,000-host zone. Each run adds names of its own (n0000 up).
echo
echo "Change to answer: a new name's first answer after its change (bench/dnslat.py; ms)"
printf "  %-8s %-10s %8s %8s %8s %8s %8s\n" mode server changes answered p50 p99 max
lat_rackboot() {
  ip netns exec $CLI python3 bench/dnslat.py rackboot "$1" "$2" "$3" 198.18.0.1 \
    https://198.18.0.1/api/v1 "$WORK/data/admin.token" "$WORK/data/tls/ca.pem"
}
lat_dnsmasq() { ip netns exec $CLI python3 bench/dnslat.py dnsmasq "$1" "$2" "$3" 198.18.0.1 "$WORK/hostsdir"; }
mkdir -p "$WORK/hostsdir"
start=0
for mode in quiet churn; do
  n=$([ $mode = quiet ] && echo 10 || echo 300)
  for srv in rackboot dnsmasq; do
    if [ $srv = rackboot ]; then start_rackboot; else start_dnsmasq --hostsdir="$WORK/hostsdir"; fi
    read -r _ count done p50 p99 max <<< "$("lat_$srv" $mode "$n" "$start" || echo "- $n failed - - -")"
    printf "  %-8s %-10s %8s %8s %8s %8s %8s\n" $mode $srv "$count" "$done" "$p50" "$p99" "$max"
    stop
    start=$((start + n))
  done
done
