#!/bin/sh
set -u
# rackboot commissioning (rendered per machine; runs in BootOS). Fetches the tools overlay
# (stress-ng, memtester, fio, smartctl, iperf3: `bootos/tools.sh OUT`) by its SHA-256, unpacks it
# into BootOS's root, runs the test profile's tests and prints one line per test, which the
# appliance judges against the profile's floors:
#   rackboot-test: NAME FIGURE UNIT STATUS [message]     (STATUS: ok, error or skipped)
# The disk write test overwrites every disk.
TOOLS_URL="{{ tools_url }}"
TOOLS_SHA256="{{ tools_sha256 }}"
CPU_SECS="{{ cpu_secs }}"
MEMORY_MIB="{{ memory_mib }}"
DISK_SECS="{{ disk_secs }}"
SMART="{{ smart }}"
DISKS="{{ disks }}"
NETWORK_SECS="{{ network_secs }}"
IPERF3_SERVER="{{ iperf3_server }}"
IPERF3_PORT="{{ iperf3_port }}"
result() { echo "rackboot-test: $*"; }
say() { echo "commission: [$(cut -d' ' -f1 /proc/uptime)] $*"; }
fail() { echo "commission: $*" >&2; exit 1; }
status() { [ "$1" = 0 ] && echo ok || echo error; }
# BootOS has no os-release: anywhere else (an installed system, a test's host) the disk write
# test would overwrite disks that are in use.
[ -e /etc/os-release ] && fail "this is not BootOS ($(. /etc/os-release; echo "$PRETTY_NAME")): nothing was tested"

if [ "$(cat /var/lib/rackboot-tools.sha256 2>/dev/null)" != "$TOOLS_SHA256" ]; then
  say "fetching the tools ($TOOLS_URL)"
  wget -q -O /tmp/tools.tar.gz "$TOOLS_URL" || fail "fetching $TOOLS_URL failed"
  echo "$TOOLS_SHA256  /tmp/tools.tar.gz" | sha256sum -c -s - || fail "the tools overlay is not the one whose SHA-256 is $TOOLS_SHA256"
  tar -xzf /tmp/tools.tar.gz -C / || fail "unpacking the tools failed"
  rm -f /tmp/tools.tar.gz
  mkdir -p /var/lib && echo "$TOOLS_SHA256" > /var/lib/rackboot-tools.sha256
fi

if [ -n "$CPU_SECS" ]; then
  say "cpu: stress-ng on every CPU for $CPU_SECS s"
  out=$(stress-ng --cpu 0 --timeout "${CPU_SECS}s" --metrics-brief 2>&1); rc=$?
  echo "$out" | tail -3
  ops=$(echo "$out" | awk '/\] cpu / {v = $(NF-1)} END {print v + 0}')
  result cpu "$ops" bogo-ops/s "$(status $rc)" "stress-ng exit $rc"
fi

if [ -n "$MEMORY_MIB" ]; then
  say "memory: memtester over $MEMORY_MIB MiB, one pass"
  out=$(memtester "${MEMORY_MIB}M" 1 2>&1); rc=$?
  echo "$out" | grep -i -e fail -e done | tail -3
  result memory "$MEMORY_MIB" MiB "$(status $rc)" "memtester exit $rc"
fi

# fio's terse output (version 3): field 7 is the read bandwidth in KiB/s, 8 the read IOPS,
# 48 the write bandwidth.
fio_run() { # disk rw bs field [--readonly]: the field, and fio's own exit status
  fio --name=t --filename="/dev/$1" --rw="$2" --bs="$3" --direct=1 --ioengine=psync --runtime="$DISK_SECS" \
    --time_based --output-format=terse ${5:-} >/tmp/fio.out 2>/tmp/fio.err || return 1
  awk -F';' -v f="$4" '{print $f}' /tmp/fio.out
}
for d in $DISKS; do
  if [ -n "$DISK_SECS" ]; then
    say "disk $d: fio, $DISK_SECS s per pattern"
    v=$(fio_run "$d" read 1M 7 --readonly); rc=$?
    result "disk-read:$d" "$(awk -v k="${v:-0}" 'BEGIN {printf "%.1f", k * 1024 / 1e6}')" MB/s "$(status $rc)" "$(head -c 100 /tmp/fio.err)"
    v=$(fio_run "$d" write 1M 48); rc=$?
    result "disk-write:$d" "$(awk -v k="${v:-0}" 'BEGIN {printf "%.1f", k * 1024 / 1e6}')" MB/s "$(status $rc)" "$(head -c 100 /tmp/fio.err)"
    v=$(fio_run "$d" randread 4k 8 --readonly); rc=$?
    result "disk-iops:$d" "${v:-0}" IOPS "$(status $rc)" "$(head -c 100 /tmp/fio.err)"
  fi
  if [ "$SMART" = 1 ]; then
    out=$(smartctl -H "/dev/$d" 2>&1); rc=$?
    if [ $((rc & 3)) -ne 0 ]; then
      result "smart:$d" - - skipped "no SMART ($(echo "$out" | tail -1 | head -c 80))"
    elif echo "$out" | grep -q -e "result: PASSED" -e "Health Status: OK"; then
      result "smart:$d" - - ok
    else
      result "smart:$d" - - error "$(echo "$out" | grep -i -e result -e status | head -1)"
    fi
  fi
done
# iperf3 to the appliance, each way. Its server runs one test at a time: a machine that finds
# it busy waits its turn (up to 15 minutes, a random 5-14 s between tries).
iperf() { # tx|rx
  flag=; [ "$1" = rx ] && flag=-R
  tries=0
  while :; do
    out=$(iperf3 -c "$IPERF3_SERVER" -p "$IPERF3_PORT" -t "$NETWORK_SECS" -f m $flag 2>&1); rc=$?
    echo "$out" | grep -q "server is busy" || break
    tries=$((tries + 1)); [ $tries -ge 90 ] && break
    sleep $((5 + $(od -An -N1 -tu1 /dev/urandom) % 10))
  done
  echo "$out" | tail -4
  mbps=$(echo "$out" | awk '/receiver$/ {v = $(NF-2)} END {print v + 0}')
  result "network-$1" "$mbps" Mbit/s "$(status $rc)" "$(echo "$out" | grep -i error | head -1 | head -c 100)"
}
if [ -n "$NETWORK_SECS" ]; then
  say "network: iperf3 to $IPERF3_SERVER for $NETWORK_SECS s each way"
  iperf tx
  iperf rx
fi
say "done"
