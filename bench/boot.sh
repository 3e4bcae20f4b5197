#!/usr/bin/env bash
# TFTP boot serving, side by side: rackboot against dnsmasq's TFTP and atftpd on the same files,
# over a veth pair between two namespaces. Prints MB/s and parallel transfer failures and times.
# A benchmark: prints, never fails. HTTP is bench/http.sh.
#
#   bench/boot.sh   (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
SRV=rbboot-srv CLI=rbboot-cli PREFIX=24
source bench/pair.sh
chmod 755 "$WORK"  # dnsmasq, atftpd and nginx workers drop root and must read the files
mkdir -p "$WORK/boot" "$WORK/data"
# Two sizes: 20 MB, where each transfer's start (the client's, and the server's per-request
# work: atftpd starts a thread, rackboot a task and a socket) is a good part of the time, and
# 80 MB, where the steady rate shows (at windowsize 16 it takes a third of a second or more).
# 80 MB at blksize 1428 stays under 65,536 blocks: no block-number rollover, which servers
# handle differently.
head -c 20000000 /dev/urandom > "$WORK/boot/file20m"
head -c 80000000 /dev/urandom > "$WORK/boot/file80m"
head -c 1000000 /dev/urandom > "$WORK/boot/file1m"
cat > "$WORK/rb.toml" <<TOML
[server]
data_dir = "$WORK/data"
interface = "eth0"
[http]
listen = "198.18.0.1:8080"
[dhcp]
mode = "off"
[tftp]
root = "$WORK/boot"
# The one client namespace stands for 200 machines: lift the per-client cap (8 by default, which
# a real machine never needs more than) so the parallel run measures the server, not the cap.
max_transfers_per_client = 256
TOML

PID=
stop() { if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi; PID=; sleep 0.3; }
start_rackboot() { ip netns exec $SRV "$BIN" serve --config "$WORK/rb.toml" > "$WORK/rb.log" 2>&1 & PID=$!; sleep 1; }
start_dnsmasq() {
  ip netns exec $SRV dnsmasq --keep-in-foreground --port=0 --conf-file=/dev/null --enable-tftp --tftp-root="$WORK/boot" \
    --interface=eth0 --bind-interfaces --pid-file="$WORK/dnsmasq.pid" > "$WORK/dnsmasq.log" 2>&1 & PID=$!; sleep 1
}
start_atftpd() { ip netns exec $SRV atftpd --daemon --no-fork --port 69 --bind-address 198.18.0.1 --logfile /dev/null "$WORK/boot" & PID=$!; sleep 1; }
cpu_ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }

# MB/s fetching the $2 MB file at windowsize $1 (1: lockstep, no windowsize option sent): the
# median of three fetches ("fail" if any failed).
tftp_get() {
  local t0 t1 i rates=() opts=(--option "blksize 1428")
  [ "$1" -gt 1 ] && opts+=(--option "windowsize $1")
  for i in 1 2 3; do
    t0=$(date +%s.%N)
    ip netns exec $CLI atftp -g -r "file$2m" -l /dev/null "${opts[@]}" 198.18.0.1 >/dev/null 2>&1 || { echo fail; return; }
    t1=$(date +%s.%N)
    rates+=("$(echo "$t0 $t1 $2" | awk '{printf "%.1f", $3/($2-$1)}')")
  done
  printf '%s\n' "${rates[@]}" | sort -n | sed -n 2p
}

for mb in 20 80; do
  echo "TFTP, $mb MB file, atftp client, blksize 1428 (MB/s, the median of three fetches)"
  printf "  %-12s %10s %10s %10s\n" windowsize rackboot dnsmasq atftpd
  for w in 1 8 16 64; do
    row=()
    for srv in rackboot dnsmasq atftpd; do
      "start_$srv"; row+=("$(tftp_get "$w" "$mb")"); stop
    done
    printf "  %-12s %10s %10s %10s\n" "$w" "${row[@]}"
  done
  echo
done

echo "TFTP, 200 parallel transfers of a 1 MB file (blksize 1428, windowsize 16 where supported)"
printf "  %-10s %9s %9s\n" server failures seconds
for srv in rackboot dnsmasq atftpd; do
  "start_$srv"
  t0=$(date +%s.%N)
  fails=$(seq 200 | ip netns exec $CLI xargs -P 200 -I{} sh -c \
    "atftp -g -r file1m -l /dev/null --option 'blksize 1428' --option 'windowsize 16' 198.18.0.1 >/dev/null 2>&1 || echo x" | wc -l)
  t1=$(date +%s.%N)
  printf "  %-10s %9s %9s\n" "$srv" "$fails" "$(echo "$t0 $t1" | awk '{printf "%.2f", $2-$1}')"
  stop
done

echo
echo "HTTP: see bench/http.sh (rackboot's sendfile path against nginx)"
