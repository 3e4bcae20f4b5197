#!/usr/bin/env bash
# A real Debian 12 install through Debian's netboot installer and the preseed rackboot renders,
# its packages fetched through the appliance's package proxy (squid, [proxy]), twice: the first
# install fills the proxy's cache from deb.debian.org, the second (the same VM, installed again)
# is served from it. Prints, per install: PXE -> installer -> installed system calling in through
# its agent, in seconds per step; the requests and bytes the proxy served and how many were cache
# hits; the bytes that came in from outside.
#
# The lab: namespace rbinst with bridge br0 (198.18.0.1/24), rackboot in full DHCP mode, one
# SeaBIOS VM (qemu TCG, iPXE ROM, 1 GiB, an 8 GiB disk). Its only way out is a veth to this host
# (198.19.255.0/30, masqueraded here), and inside the namespace only squid's user may use it
# (iptables owner match): the VM, rackboot and everything else of the lab stay inside.
# About 30-60 minutes under TCG; minutes per install are the point, not a test.
#
#   bench/installer.sh   (as root; needs a route to deb.debian.org from this host)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
[ "$(id -u)" = 0 ] || { echo "installer.sh: run as root (namespaces, tap, iptables)"; exit 1; }
source tools/setup.sh --lab
for p in squid debian-installer-12-netboot-amd64 iptables; do
  dpkg -s "$p" >/dev/null 2>&1 || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$p" >/dev/null; rm -f /usr/sbin/policy-rc.d; }
done
RUN=$PWD/target/bench/installer LAB=rbinst MAC=52:54:00:1e:00:01
DI=/usr/lib/debian-installer/images/12/amd64/text/debian-installer/amd64
echo "== building rackboot and the boot directory (vm-lab/assets.sh: BootOS, iPXE)"
cargo build --locked -q
BIN=${CARGO_TARGET_DIR:-$PWD/target}/debug/rackboot
vm-lab/assets.sh target/lab-assets/boot >/dev/null

FWD_BEFORE=$(cat /proc/sys/net/ipv4/ip_forward)
teardown() {
  for ns in $LAB; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
    sleep 2; ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del rbinst-out 2>/dev/null || true
  iptables -t nat -D POSTROUTING -s 198.19.255.2/32 -j MASQUERADE 2>/dev/null || true
  iptables -D FORWARD -i rbinst-out -j ACCEPT 2>/dev/null || true
  iptables -D FORWARD -o rbinst-out -j ACCEPT 2>/dev/null || true
  echo "$FWD_BEFORE" > /proc/sys/net/ipv4/ip_forward
}
trap teardown EXIT
teardown
rm -rf "$RUN"; mkdir -p "$RUN/data/boot/d-i"
cp -a target/lab-assets/boot/. "$RUN/data/boot/"
cp "$DI/linux" "$DI/initrd.gz" "$RUN/data/boot/d-i/"
# squid drops to its own user, which must reach its cache under the data directory.
d=$RUN/data; while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done

ip netns add $LAB; ip -n $LAB link set lo up
ip netns exec $LAB sysctl -qw net.ipv4.ip_forward=0
ip -n $LAB link add br0 type bridge; ip -n $LAB link set br0 up; ip -n $LAB addr add 198.18.0.1/24 dev br0
# The way out, for squid only.
ip link add rbinst-out type veth peer name out0 netns $LAB
ip addr add 198.19.255.1/30 dev rbinst-out; ip link set rbinst-out up
ip -n $LAB addr add 198.19.255.2/30 dev out0; ip -n $LAB link set out0 up
ip -n $LAB route add default via 198.19.255.1
echo 1 > /proc/sys/net/ipv4/ip_forward
iptables -t nat -A POSTROUTING -s 198.19.255.2/32 -j MASQUERADE
iptables -I FORWARD -i rbinst-out -j ACCEPT; iptables -I FORWARD -o rbinst-out -j ACCEPT
ip netns exec $LAB iptables -A OUTPUT -o out0 -m owner --uid-owner proxy -j ACCEPT
ip netns exec $LAB iptables -A OUTPUT -o out0 -j REJECT

cat > "$RUN/rackboot.toml" <<EOF
[server]
data_dir = "$RUN/data"
interface = "br0"
[http]
listen = "198.18.0.1:8080"
[https]
listen = "198.18.0.1:443"
[dhcp]
mode = "full"
[[dhcp.subnets]]
cidr = "198.18.0.0/24"
pools = ["198.18.0.100-198.18.0.199"]
routers = ["198.18.0.1"]
lease_secs = 3600
[dns]
domain = "lab.rackboot.test"
[proxy]
enable = true
upstream_hosts = ["deb.debian.org", "security.debian.org"]
[provision]
preseed_mirror = "http://deb.debian.org/debian"
[boot]
[[boot.profiles]]
name = "debian12"
kernel = "d-i/linux"
initrd = "d-i/initrd.gz"
answer = "preseed"
cmdline = "auto=true priority=critical url={{ answer_url }} console=ttyS0,115200n8"
EOF
ip netns exec $LAB "$BIN" serve --config "$RUN/rackboot.toml" > "$RUN/rackboot.log" 2>&1 &
for _ in $(seq 100); do ip netns exec $LAB curl -s -o /dev/null http://198.18.0.1:8080/healthz && break; sleep 0.2; done
rb() { ip netns exec $LAB "$BIN" "$1" --api https://198.18.0.1 --ca "$RUN/data/tls/ca.pem" --token-file "$RUN/data/admin.token" "${@:2}"; }
api() { ip netns exec $LAB curl -sf --cacert "$RUN/data/tls/ca.pem" -H "authorization: Bearer $(cat "$RUN/data/admin.token")" \
  -H 'content-type: application/json' "https://198.18.0.1/api/v1$1" "${@:2}"; }
for _ in $(seq 50); do ip netns exec $LAB ss -ltn | grep -q 198.18.0.1:3128 && break; sleep 0.2; done
echo "== rackboot and its proxy are up (log: $RUN/rackboot.log); the way out works for squid only:"
echo "    squid -> deb.debian.org: $(ip netns exec $LAB curl -s -o /dev/null -w '%{http_code}' -x http://198.18.0.1:3128 http://deb.debian.org/debian/dists/bookworm/Release)"
echo "    rackboot's namespace, direct: $(ip netns exec $LAB curl -s -m 5 -o /dev/null -w '%{http_code}' http://deb.debian.org/ || true) (000: refused)"
: > "$RUN/data/proxy/access.log"

ip -n $LAB tuntap add tap0 mode tap; ip -n $LAB link set tap0 master br0 up
truncate -s 8G "$RUN/vm.disk"
ip netns exec $LAB qemu-system-x86_64 -accel tcg -smp 2 -m 1024 -display none -boot n \
  -serial "file:$RUN/vm.serial" -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
  -device "virtio-net-pci,netdev=n0,mac=$MAC" -drive "file=$RUN/vm.disk,if=virtio,format=raw" > "$RUN/qemu.log" 2>&1 &
QEMU=$!
echo "== VM powered on (serial: $RUN/vm.serial); waiting for BootOS's agent"
for _ in $(seq 600); do [ "$(api "/machines/$MAC" 2>/dev/null | jq -r '.inventory != null')" = true ] && break; sleep 1; done

# Bytes in from outside: what the way out received.
rx() { cat /sys/class/net/rbinst-out/statistics/tx_bytes; }
install() { # N
  local n=$1 t0 rx0 task state
  : > "$RUN/data/proxy/access.log"
  rx0=$(rx); t0=$(date +%s)
  task=$(api /tasks -X POST -d "{\"select\": {\"macs\": [\"$MAC\"]}, \"installer\": \"debian12\", \"disk\": \"/dev/vda\", \"hostname_pattern\": \"inst-{n}\"}" | jq -r .task.id)
  echo "== install $n: task $task"
  for _ in $(seq 1800); do
    state=$(api "/tasks/$task" | jq -r '.runs[0].state')
    [ "$state" = active ] || break
    # A package the mirror does not have stops the installer at a prompt: say which, and stop.
    if grep -qE ' TCP_[A-Z_]*/404 .*\.u?deb ' "$RUN/data/proxy/access.log"; then state="stopped: the mirror lacks packages"; break; fi
    sleep 2
  done
  local secs=$(( $(date +%s) - t0 ))
  echo "    run: $state after ${secs} s"
  grep -E ' TCP_[A-Z_]*/404 ' "$RUN/data/proxy/access.log" | awk '{print "    404 from the mirror: " $7}' | head -10
  api "/machines/$MAC/events?limit=1000" | jq -r --argjson s "$((t0 * 1000))" '[.events[] | select(.at_ms >= $s)
    | select(.kind == "provision.step" or .kind == "provision.installed" or .kind == "agent.enrolled")
    | "\(if .kind == "agent.enrolled" then "enrolled(" + .detail.mode + ")" elif .kind == "provision.installed" then "INSTALLED" else .detail.step end) \((.at_ms - $s) / 1000 | floor)s"] | join(", ") | "    " + .'
  awk '{n++; b += $5; if ($4 ~ /HIT/) {h++; hb += $5}} END {printf "    proxy: %d requests, %.1f MB served, %d cache hits (%.1f MB)\n", n, b/1e6, h, hb/1e6}' "$RUN/data/proxy/access.log"
  awk '{print $4}' "$RUN/data/proxy/access.log" | sort | uniq -c | sort -rn | head -5 | sed 's/^/      /'
  echo "    in from outside: $(( ($(rx) - rx0) / 1000000 )) MB"
  [ "$state" = installed ] || return 0
  printf "    job on the installed system: "; rb jobs run --machine "$MAC" -- 'hostname; . /etc/os-release; echo "$PRETTY_NAME"; grep -h -r Proxy /etc/apt/apt.conf /etc/apt/apt.conf.d 2>/dev/null' 2>&1 | tr '\n' ' '; echo
}
install 1
if grep -qE ' TCP_[A-Z_]*/404 .*\.u?deb ' "$RUN/data/proxy/access.log"; then
  tail -c 600 "$RUN/vm.serial" | tr -cd '[:print:]\n' | sed 's/\[[0-9;]*[a-zA-Z]//g' | tr -s ' ' | tail -c 300; echo
  echo "== the installer asked the proxy for packages its mirror does not serve; no second install"
  exit 1
fi
install 2
rb machines show "$MAC" | head -20 | sed 's/^/    /'
kill $QEMU 2>/dev/null || true
