#!/usr/bin/env bash
# Soak: one appliance under mixed DHCP, DNS, HTTP, TFTP and agent traffic for a long time, from a
# second namespace over a veth pair. Every WINDOW seconds it prints one row: DHCP 4-way
# exchanges/s, drops and delays (perfdhcp), DNS queries/s, latency and losses (dnsperf), HTTP and
# TFTP p99 fetch times of a 1 MB file (curl, atftp), and rackboot's CPU, RSS and CMDB file size.
# AGENTS agents long-poll all along (agent-load); at the end jobs go to them and the hand-over
# median and p99 are printed. The first and last rows are the start and the end: RSS and the file
# should level off at what the data kept needs (leases of DHCP_CLIENTS clients, capped events).
# A benchmark: prints, never fails.
#
#   bench/soak.sh [DURATION_SECS] [WINDOW_SECS]      default 3600 60   (as root)
#   env: DHCP_RATE (1000/s) DHCP_CLIENTS (20000) DNS_QPS (10000) AGENTS (200) JOBS (100)
#
# The defaults are well under the single-protocol peaks of BENCHMARKS.md (DHCP ~10,000/s, DNS
# ~115,000/s): on 2 cores the load generators share the CPU with rackboot, and the mix together
# should use about half of it.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-3600}
WINDOW=${2:-60}
DHCP_RATE=${DHCP_RATE:-1000} DHCP_CLIENTS=${DHCP_CLIENTS:-20000} DNS_QPS=${DNS_QPS:-10000}
AGENTS=${AGENTS:-200} JOBS=${JOBS:-100}
SRV=rbsoak-srv CLI=rbsoak-cli PREFIX=15
source bench/pair.sh
[ -x target/release/agent-load ] || cargo build --release --quiet --locked -p rackboot-agent
ulimit -n 65536 2>/dev/null || true
mkdir -p "$WORK/data" "$WORK/boot"
head -c 1000000 /dev/urandom > "$WORK/boot/file1m"
cat > "$WORK/rb.toml" <<TOML
[server]
data_dir = "$WORK/data"
interface = "eth0"
address = "198.18.0.1"
[http]
listen = "198.18.0.1:8080"
max_connections_per_client = 4096
[tftp]
root = "$WORK/boot"
[dhcp]
mode = "full"
[[dhcp.subnets]]
cidr = "198.18.0.0/15"
pools = ["198.18.16.0-198.19.255.250"]
routers = ["198.18.0.1"]
lease_secs = 600
[dns]
domain = "lab.rackboot.test"
[agent]
networks = ["198.18.0.0/15"]
# The simulated agents enroll from a few addresses.
enrollments_per_minute_per_source = 0
TOML
ip netns exec $SRV "$BIN" serve --config "$WORK/rb.toml" > "$WORK/rb.log" 2>&1 & PID=$!
for _ in $(seq 100); do ip netns exec $SRV curl -s -o /dev/null http://198.18.0.1:8080/healthz && break; sleep 0.1; done
TOKEN=$(cat "$WORK/data/admin.token")
# 200 named machines for DNS to answer (A queries, round robin).
: > "$WORK/q"
for i in $(seq 1 200); do
  name=$(printf "s%03d" "$i")
  echo "$name.lab.rackboot.test A" >> "$WORK/q"
  ip netns exec $SRV curl -sf -o /dev/null --cacert "$WORK/data/tls/ca.pem" -H "authorization: Bearer $TOKEN" \
    -H 'content-type: application/json' https://198.18.0.1/api/v1/machines \
    -d "{\"macs\":[\"52:54:00:5a:00:$(printf %02x "$i")\"],\"hostname\":\"$name\",\"reserved_ip\":\"198.18.1.$i\"}"
done

cli() { ip netns exec $CLI "$@"; }
# AGENTS long-polling agents for the whole run, then JOBS jobs handed over.
cli target/release/agent-load --url https://198.18.0.1 --ca "$WORK/data/tls/ca.pem" --token-file "$WORK/data/admin.token" \
  --agents "$AGENTS" --jobs "$JOBS" --idle-secs "$((DURATION > 60 ? DURATION - 30 : DURATION))" > "$WORK/agents.out" 2>&1 &
AGENT_LOAD=$!

# p99 (and count) of the seconds in file $1, in ms.
p99() { sort -n "$1" | awk '{v[NR]=$1} END {if (!NR) {print "- 0"; exit} i=int(NR*0.99); if (i<1) i=1; printf "%.1f %d", v[i]*1000, NR}'; }
fetch_loop() { # kind until_epoch out
  while [ "$(date +%s)" -lt "$2" ]; do
    if [ "$1" = http ]; then
      cli curl -s -o /dev/null -w '%{time_total}\n' http://198.18.0.1:8080/boot/files/file1m >> "$3" || true
    else
      s=$(date +%s.%N); cli atftp --option "blksize 1428" -g -r file1m -l /dev/null 198.18.0.1 >/dev/null 2>&1 \
        && echo "$(date +%s.%N) - $s" | bc >> "$3"
    fi
    sleep 0.5
  done
}
cpu_ticks() { awk '{print $14+$15}' /proc/"$PID"/stat; }

printf "%6s | %8s %6s %7s %7s | %8s %7s %6s | %8s %8s | %5s %7s %8s\n" "min" "dhcp/s" "drop%" "avg ms" "max ms" \
  "dns q/s" "avg ms" "lost%" "http p99" "tftp p99" "cores" "RSS MB" "cmdb MB"
start=$(date +%s); t0=$(cpu_ticks); elapsed=0
while [ "$elapsed" -lt "$DURATION" ]; do
  end=$(( $(date +%s) + WINDOW ))
  : > "$WORK/http.t"; : > "$WORK/tftp.t"
  fetch_loop http "$end" "$WORK/http.t" & H=$!
  fetch_loop tftp "$end" "$WORK/tftp.t" & T=$!
  cli perfdhcp -4 -r "$DHCP_RATE" -R "$DHCP_CLIENTS" -p "$WINDOW" 198.18.0.1 > "$WORK/dhcp.out" 2>&1 & D=$!
  cli dnsperf -s 198.18.0.1 -d "$WORK/q" -c 4 -l "$WINDOW" -Q "$DNS_QPS" > "$WORK/dns.out" 2>&1 || true
  wait $D $H $T 2>/dev/null || true
  read -r drate ddrop davg dmax <<< "$(awk '/^Rate:/ {rate=$2} /^sent packets/ {s+=$3} /^received packets/ {r+=$3}
    /^avg delay/ {if ($3+0>a) a=$3+0} /^max delay/ {if ($3+0>m) m=$3+0}
    END {printf "%.0f %.2f %.2f %.2f", rate, s ? 100*(s-r)/s : 100, a, m}' "$WORK/dhcp.out")"
  read -r qps qlat qlost <<< "$(awk '/Queries per second/ {q=$4} /Average Latency/ {l=$4*1000} /Queries lost/ {gsub(/[()%]/,"",$4); x=$4}
    END {printf "%.0f %.3f %s", q, l, x}' "$WORK/dns.out")"
  read -r hp99 _ <<< "$(p99 "$WORK/http.t")"; read -r tp99 _ <<< "$(p99 "$WORK/tftp.t")"
  t1=$(cpu_ticks); now=$(date +%s)
  cores=$(echo "$t0 $t1 $WINDOW" | awk '{printf "%.2f", ($2-$1)/100/$3}'); t0=$t1
  rss=$(awk '/VmRSS/ {printf "%.1f", $2/1024}' /proc/"$PID"/status)
  db=$(du -m "$WORK/data/rackboot.redb" | cut -f1)
  elapsed=$((now - start))
  printf "%6.1f | %8s %6s %7s %7s | %8s %7s %6s | %8s %8s | %5s %7s %8s\n" "$(echo "$elapsed / 60" | bc -l)" \
    "$drate" "$ddrop" "$davg" "$dmax" "$qps" "$qlat" "$qlost" "$hp99" "$tp99" "$cores" "$rss" "$db"
done
wait $AGENT_LOAD 2>/dev/null || true
echo; echo "agents ($AGENTS long-polling for the whole run, then $JOBS jobs):"
grep -h 'enrolled in\|submission' "$WORK/agents.out" | sed 's/^/  /'
echo "healthz at the end: $(ip netns exec $SRV curl -s http://198.18.0.1:8080/healthz)"
