#!/usr/bin/env bash
# The main job: rackboot serving a lab network, with real DHCP clients booting against it.
#
#   sudo vm-lab/run.sh [--clients N] [--keep]
#
# Creates a namespace "rblab" with bridge br0 (198.18.0.1/24, no route out), starts rackboot in
# full DHCP mode on it (vm-lab/lab.toml), plugs N client namespaces into the bridge, registers the
# first client with a hostname and reserved address through the CLI, lets each client take a
# lease with a real DHCP client (ISC dhclient, busybox udhcpc, dhcpcd in turn), and prints the
# CMDB and leases. --keep leaves the lab running until Ctrl-C. Everything is torn down on exit.
# (Issue 3 grows this into qemu VMs PXE-booting through rackboot.)
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=3 KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --clients) CLIENTS=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "usage: $0 [--clients N] [--keep]"; exit 2 ;;
  esac
done
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
source tools/setup.sh
[ "$(id -u)" = 0 ] || { echo "run.sh: run as root (network namespaces)"; exit 1; }
cargo build --release --quiet
BIN=$PWD/target/release/rackboot
RUN=$PWD/vm-lab/run
LAB=rblab

teardown() {
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^$LAB(-|$)" || true); do
    ip netns pids "$ns" | xargs -r kill 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
}
trap teardown EXIT
teardown
rm -rf "$RUN"; mkdir -p "$RUN"

ip netns add $LAB; ip -n $LAB link set lo up
ip -n $LAB link add br0 type bridge; ip -n $LAB link set br0 up
ip -n $LAB addr add 198.18.0.1/24 dev br0
sed "s|@DATA@|$RUN/data|" vm-lab/lab.toml > "$RUN/lab.toml"
ip netns exec $LAB "$BIN" serve --config "$RUN/lab.toml" > "$RUN/rackboot.log" 2>&1 &
for _ in $(seq 100); do ip netns exec $LAB curl -sf http://198.18.0.1:8080/healthz >/dev/null && break; sleep 0.1; done
echo "rackboot is up (log: $RUN/rackboot.log)"
rb() { ip netns exec $LAB "$BIN" "$@" --api http://198.18.0.1:8080 --token-file "$RUN/data/admin.token"; }

rb machines add 52:54:00:1a:b0:01 --hostname node01 --ip 198.18.0.50 --tag rack1
for i in $(seq 1 "$CLIENTS"); do
  ns=$LAB-c$i mac=$(printf '52:54:00:1a:b0:%02x' "$i")
  ip netns add "$ns"; ip -n "$ns" link set lo up
  ip -n $LAB link add "vc$i" type veth peer name eth0 netns "$ns"
  ip -n $LAB link set "vc$i" master br0 up
  ip -n "$ns" link set eth0 address "$mac"; ip -n "$ns" link set eth0 up
  case $(( (i - 1) % 3 )) in
    0) client="dhclient"; cmd="dhclient -4 -1 -sf /bin/true -lf $RUN/c$i.leases -pf $RUN/c$i.pid eth0" ;;
    1) client="udhcpc";   cmd="udhcpc -i eth0 -f -n -q -t 5 -s /bin/true" ;;
    2) client="dhcpcd";   cmd="dhcpcd -4 -1 -c /bin/true --noipv4ll -t 30 eth0" ;;
  esac
  if ip netns exec "$ns" timeout 60 sh -c "$cmd" >"$RUN/c$i.log" 2>&1; then
    echo "client $i ($client, $mac): got a lease"
  else
    echo "client $i ($client, $mac): NO LEASE, see $RUN/c$i.log"
  fi
done
echo; rb machines list; echo; rb leases
echo; echo "timeline of node01:"; rb machines events 52:54:00:1a:b0:01
if [ $KEEP = 1 ]; then
  echo; echo "lab running; API: ip netns exec $LAB curl -H \"authorization: Bearer \$(cat $RUN/data/admin.token)\" http://198.18.0.1:8080/api/v1/machines"
  echo "Ctrl-C to tear down"; sleep infinity
fi
