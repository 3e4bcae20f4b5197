#!/usr/bin/env bash
# A boot storm: MACHINES simulated machines power on together behind a relay (rackboot-storm,
# bench/storm) and network-boot a release rackboot over a veth pair: ROM DHCP, TFTP, iPXE DHCP,
# boot script, kernel, initrd, then the agent's enroll, inventory and first poll. Then the same
# storm through the initrd only, against rackboot and against dnsmasq (DHCP) + atftpd (TFTP) +
# nginx (HTTP) serving the same files, side by side. Per-stage p50/p99/max, failures, retries, CPU
# seconds and peak RSS of each server. A benchmark: prints, never fails.
#
#   bench/storm.sh [MACHINES] [SPREAD_SECS]   (as root)
#   UEFI_SNP=1: the UEFI machines get snponly.efi (174 KB, the firmware's network driver) rather
#   than ipxe.efi (850 KB), from both rackboot (boot.uefi_x64_snp) and dnsmasq
#
# The machines live in 198.19.0.0/16 behind the relay at 198.19.0.1 (the client namespace
# routes the whole /16 to itself, so each machine sends from the address it was leased).
set -euo pipefail
cd "$(dirname "$0")/.."
MACHINES=${1:-1000}
SPREAD=${2:-0}
UEFI_SNP=${UEFI_SNP:-0}
UEFI_FILE=ipxe.efi
[ "$UEFI_SNP" = 1 ] && UEFI_FILE=snponly.efi
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
# RACKBOOT_BIN names another rackboot binary (pair.sh); then only the simulator is built.
echo "== building rackboot and rackboot-storm (release)"
if [ -n "${RACKBOOT_BIN:-}" ]; then
  cargo build --release --quiet --locked -p rackboot-storm
else
  cargo build --release --quiet --locked -p rackboot -p rackboot-storm
fi
SRV=rbstorm-srv CLI=rbstorm-cli PREFIX=24
source bench/pair.sh
STORM=target/release/rackboot-storm
ip -n $CLI route add local 198.19.0.0/16 dev lo
ip -n $SRV route add 198.19.0.0/16 via 198.18.0.2
ulimit -n 200000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
chmod 755 "$WORK"
BOOT="$WORK/data/boot"
mkdir -p "$BOOT/bootos"
# The boot programs Debian ships (their real sizes), a kernel and a BootOS-sized initrd.
for f in undionly.kpxe ipxe.efi snponly.efi; do
  if [ -r "/usr/lib/ipxe/$f" ]; then cp -L "/usr/lib/ipxe/$f" "$BOOT/$f"; else head -c 800000 /dev/urandom > "$BOOT/$f"; fi
done
head -c 8000000 /dev/urandom > "$BOOT/bootos/vmlinuz"
head -c 13000000 /dev/urandom > "$BOOT/bootos/initrd.img"
chmod -R a+rX "$WORK/data"

cat > "$WORK/rb.toml" <<TOML
[server]
data_dir = "$WORK/data"
interface = "eth0"
address = "198.18.0.1"
max_unclaimed_machines = 100000
[http]
listen = "198.18.0.1:80"
[https]
listen = "198.18.0.1:8443"
[tftp]
root = "$BOOT"
[dhcp]
mode = "full"
[[dhcp.subnets]]
cidr = "198.19.0.0/16"
pools = ["198.19.1.1-198.19.254.254"]
routers = ["198.19.0.1"]
lease_secs = 3600
[dns]
enabled = false
[agent]
# A storm enrolls thousands a minute, some through one address.
enrollments_per_minute_per_source = 0
[boot]
uefi_x64_snp = $([ "$UEFI_SNP" = 1 ] && echo true || echo false)
TOML
echo "== UEFI machines fetch $UEFI_FILE ($(stat -c %s "$BOOT/$UEFI_FILE") bytes)"

PIDS=()
stop() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=(); sleep 0.5
}
start_rackboot() {
  rm -rf "$WORK/data/rackboot.redb" "$WORK/data/tls"
  ip netns exec $SRV "$BIN" serve --config "$WORK/rb.toml" > "$WORK/rb.log" 2>&1 &
  PIDS=($!)
  for _ in $(seq 100); do ip netns exec $CLI curl -sf -o /dev/null http://198.18.0.1/healthz && return; sleep 0.1; done
  echo "rackboot did not start:"; tail -20 "$WORK/rb.log"; exit 1
}
start_reference() {
  cat > "$WORK/nginx.conf" <<NGINX
user root;
worker_processes auto;
pid $WORK/nginx.pid;
error_log $WORK/nginx.err;
daemon off;
events { worker_connections 16384; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 10000;
  server {
    listen 198.18.0.1:80;
    location /boot/files/ { alias $BOOT/; }
    location = /boot/ipxe {
      default_type text/plain;
      return 200 "#!ipxe\nkernel http://198.18.0.1/boot/files/bootos/vmlinuz console=ttyS0\ninitrd http://198.18.0.1/boot/files/bootos/initrd.img\nboot\n";
    }
  }
}
NGINX
  ip netns exec $SRV nginx -c "$WORK/nginx.conf" &
  PIDS=($!)
  ip netns exec $SRV dnsmasq --keep-in-foreground --user=root --port=0 --conf-file=/dev/null --interface=eth0 \
    --bind-interfaces --dhcp-range=198.19.1.1,198.19.254.254,255.255.0.0,1h --dhcp-leasefile="$WORK/dnsmasq.leases" \
    --dhcp-lease-max=100000 --no-ping --dhcp-userclass=set:ipxe,iPXE --dhcp-match=set:efi,option:client-arch,7 \
    --dhcp-boot=tag:ipxe,http://198.18.0.1/boot/ipxe --dhcp-boot=tag:!ipxe,tag:efi,$UEFI_FILE,,198.18.0.1 \
    --dhcp-boot=tag:!ipxe,tag:!efi,undionly.kpxe,,198.18.0.1 --dhcp-option=3,198.19.0.1 \
    > "$WORK/dnsmasq.log" 2>&1 &
  PIDS+=($!)
  # dnsmasq's TFTP refuses clients that are not on one of its own subnets ("unsupported
  # request"), which relayed machines never are: atftpd serves TFTP instead.
  ip netns exec $SRV atftpd --daemon --no-fork --port 69 --bind-address 198.18.0.1 --maxthread 5000 \
    --logfile /dev/null "$BOOT" &
  PIDS+=($!)
  sleep 1
}
# storm UNTIL PIDS...: the storm from the client namespace, reading those servers' CPU and RSS.
storm() {
  local until=$1; shift
  local pidargs=()
  for p in "$@"; do pidargs+=(--server-pid "$p"); done
  ip netns exec $CLI "$STORM" --dhcp 198.18.0.1:67 --relay 198.19.0.1:67 --machines "$MACHINES" \
    --spread-secs "$SPREAD" --until "$until" "${pidargs[@]}" | sed 's/^/  /' || true
}

echo
echo "== rackboot: $MACHINES machines, power-on to the agent's first poll (mixed BIOS/UEFI, spread ${SPREAD}s)"
start_rackboot; storm enrolled "${PIDS[0]}"; stop
echo
echo "== rackboot: $MACHINES machines, power-on to initrd (what dnsmasq + nginx can serve)"
start_rackboot; storm initrd "${PIDS[0]}"; stop
echo
echo "== dnsmasq (DHCP) + atftpd (TFTP) + nginx (HTTP): $MACHINES machines, power-on to initrd"
start_reference
workers=$(pgrep -P "${PIDS[0]}" | tr '\n' ' ')
# shellcheck disable=SC2086
storm initrd "${PIDS[1]}" "${PIDS[2]}" $workers
stop
