#!/usr/bin/env bash
# Boot files over plain HTTP, side by side: rackboot (sendfile path) against nginx (sendfile on,
# 2 workers) on the same files, over a veth pair between two namespaces. Each figure is the
# median of ROUNDS runs, the servers taking turns. Prints MB/s for one stream of a 200 MB image,
# the aggregate MB/s of 50 parallel streams of it, wrk's rate for 200 clients fetching a 1 MB
# file, and each server's CPU seconds and peak RSS over all of it. A benchmark: prints, never fails.
#
#   bench/http.sh [ROUNDS]   default 3   (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SRV=rbhttp-srv CLI=rbhttp-cli PREFIX=24
source bench/pair.sh
chmod 755 "$WORK"  # nginx workers drop root and must read the files
mkdir -p "$WORK/boot" "$WORK/data"
head -c 200000000 /dev/urandom > "$WORK/boot/image200m"
head -c 1000000 /dev/urandom > "$WORK/boot/file1m"
cat > "$WORK/rb.toml" <<TOML
[server]
data_dir = "$WORK/data"
interface = "eth0"
[http]
listen = "198.18.0.1:8080"
max_connections_per_client = 1024
[dhcp]
mode = "off"
[tftp]
root = "$WORK/boot"
TOML
cat > "$WORK/nginx.conf" <<NGX
worker_processes 2;
pid $WORK/nginx.pid;
error_log $WORK/nginx.err;
events { worker_connections 4096; }
http { sendfile on; tcp_nopush on; access_log off; keepalive_requests 100000;
  server { listen 198.18.0.1:8081; location /boot/files/ { alias $WORK/boot/; } } }
NGX
ip netns exec $SRV "$BIN" serve --config "$WORK/rb.toml" > "$WORK/rb.log" 2>&1 & RB=$!
ip netns exec $SRV nginx -c "$WORK/nginx.conf" -g 'daemon off;' & NG=$!
sleep 1.5
cat "$WORK/boot/image200m" "$WORK/boot/file1m" > /dev/null  # both read from the page cache
URL_rackboot=http://198.18.0.1:8080/boot/files
URL_nginx=http://198.18.0.1:8081/boot/files

# CPU seconds of a process and its children so far (nginx: master and workers).
cpu() {
  local total=0 p
  for p in "$1" $(pgrep -P "$1" || true); do
    total=$((total + $(awk '{print $14+$15}' /proc/"$p"/stat)))
  done
  echo "$total"
}
rss() {
  local total=0 p
  for p in "$1" $(pgrep -P "$1" || true); do
    total=$((total + $(awk '/VmHWM/ {print $2}' /proc/"$p"/status)))
  done
  echo $((total / 1024))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
single() { ip netns exec $CLI curl -sf -o /dev/null -w '%{speed_download}\n' "$1/image200m" | awk '{printf "%.0f\n", $1/1e6}'; }
parallel50() {
  local t0 t1
  t0=$(date +%s.%N)
  seq 50 | ip netns exec $CLI xargs -P 50 -I{} curl -sf -o /dev/null "$1/image200m"
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{printf "%.0f\n", 50*200/($2-$1)}'
}
wrk200() { ip netns exec $CLI wrk -t2 -c200 -d10s "$1/file1m" 2>/dev/null | awk '/Requests\/sec/ {printf "%.0f\n", $2}'; }

declare -A S P W
for srv in rackboot nginx; do S[$srv]=; P[$srv]=; W[$srv]=; done
cpu0_rb=$(cpu $RB) cpu0_ng=$(cpu $NG)
for _ in $(seq "$ROUNDS"); do
  for srv in rackboot nginx; do
    url="URL_$srv"
    S[$srv]+="$(single "${!url}") "
    P[$srv]+="$(parallel50 "${!url}") "
    W[$srv]+="$(wrk200 "${!url}") "
  done
done
cpu_rb=$(( $(cpu $RB) - cpu0_rb )) cpu_ng=$(( $(cpu $NG) - cpu0_ng ))

echo "HTTP boot files, rackboot (sendfile path) vs nginx (sendfile), median of $ROUNDS rounds"
printf "  %-34s %10s %10s %8s\n" "" rackboot nginx ratio
row() {
  local rb ng
  rb=$(echo "$2" | tr ' ' '\n' | grep . | median); ng=$(echo "$3" | tr ' ' '\n' | grep . | median)
  printf "  %-34s %10s %10s %8s\n" "$1" "$rb" "$ng" "$(awk -v a="$rb" -v b="$ng" 'BEGIN {printf "%.2fx", a/b}')"
}
row "1 stream, 200 MB (MB/s)" "${S[rackboot]}" "${S[nginx]}"
row "50 streams, 200 MB each (MB/s)" "${P[rackboot]}" "${P[nginx]}"
row "200 clients x 1 MB, wrk (req/s)" "${W[rackboot]}" "${W[nginx]}"
printf "  %-34s %10s %10s\n" "CPU seconds, all rounds" "$(awk -v t=$cpu_rb 'BEGIN {printf "%.1f", t/100}')" "$(awk -v t=$cpu_ng 'BEGIN {printf "%.1f", t/100}')"
printf "  %-34s %10s %10s\n" "peak RSS (MB)" "$(rss $RB)" "$(rss $NG)"
echo "  runs (rackboot | nginx): single ${S[rackboot]}| ${S[nginx]}; 50 ${P[rackboot]}| ${P[nginx]}; wrk ${W[rackboot]}| ${W[nginx]}"
