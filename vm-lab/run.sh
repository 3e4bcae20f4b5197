#!/usr/bin/env bash
# The main job: rackboot provisioning a lab network of qemu VMs that PXE-boot from it.
#
#   vm-lab/run.sh [--bios N]   (as root) [--uefi N] [--secure-boot N] [--arm64 N] [--clients N]
#                 [--no-provision] [--baseline] [--keep] [--libvirt] [--release]
#
# rackboot is built in the dev profile unless --release is given (bench/ measures release builds),
# while BootOS's packages and the lab OS image are fetched in the background.
# Creates namespace "rblab" with bridge br0 (198.18.0.1/24, no route out), builds the boot
# directory from Debian packages (vm-lab/assets.sh), starts rackboot in full DHCP mode on the
# bridge (vm-lab/lab.toml). The VMs hang off a rack "switch", namespace "rblab-sw" (198.18.0.2 on
# br0, routing for 198.18.1.0/24): each VM is plugged into a port swpN (isolated ports of bridge
# rack0, 198.18.1.1), isc-dhcp-relay relays their DHCP to rackboot with option 82 (circuit id =
# the port), lldpd announces "leaf-r1" and the port name by LLDP, and radvd answers router
# solicitations as a dual-stack router does (iPXE waits for one). Rack r1 is created through
# the API before power-on (ports swp1-N -> U1-UN, hostnames r1-uNN, addresses 198.18.1.11 up),
# so each VM is placed, named and addressed by the port it is plugged into, and its BootOS
# agent's LLDP neighbour confirms the placement. N SeaBIOS and N OVMF (UEFI) VMs (qemu -accel
# tcg; KVM hangs on these machines; 512 MiB, a 2 GiB disk) with qemu's iPXE option ROM, and N
# OVMF VMs with Secure Boot enforcing (--secure-boot; Microsoft's keys enrolled, no option ROM)
# whose machines are set to the signed chain (shim, Debian's signed GRUB) before they boot, and N
# arm64 VMs (--arm64: qemu-system-aarch64, AAVMF with Secure Boot enforcing, 1 GiB) that boot
# BootOS for arm64 through Debian's signed arm64 shim and GRUB (docs/arm64.md); they enroll, are
# placed and run a job like the others, and are left out of provisioning (the lab image is
# amd64). Each VM goes
# DHCP -> iPXE script -> BootOS kernel + initrd (bootos/build.sh) -> the agent enrolls and sends
# its inventory; the run then has each agent run `uname -a` as a job and provisions every VM
# from the lab OS image (vm-lab/os-image.sh) with a task: image deploy, identity, reboot from disk, the installed agent checking in, a post-install
# script (the image served as zstd). It prints the seconds from power-on to each step, the deploy throughput, DNS answers
# for the new hostnames, a job's output from each installed system, each VM's timeline, the CMDB
# and the leases, and powers the VMs off with a power-off job. Serial consoles: vm-lab/run/<vm>.serial. --clients N also lets N
# namespaces take leases with dhclient/udhcpc/dhcpcd. --libvirt makes the VMs libvirt domains
# instead (vm-lab/libvirt.sh: libvirtd started here unless running), powered off, behind BMC
# emulators: VirtualBMC (IPMI) for the SeaBIOS VMs, sushy-emulator (Redfish, libvirt driver) for
# the OVMF ones. The BMCs are registered with rackboot and nothing else starts a VM: the
# provisioning task powers each on through its BMC (PXE once, then on), and the run prints
# power-on -> installed per VM and powers them off through the BMCs. --baseline first times the same image written in
# BootOS by `wget | dd` and `wget | tee | sha256sum` (bench/deploy.sh; about 5 minutes under TCG,
# so not in the main job). --keep leaves it all running until Ctrl-C. VM_CPUS (default 1) sets
# each VM's vCPUs.
# Everything is torn down on exit, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
BIOS=1 UEFI=1 SECURE=0 ARM64=0 CLIENTS=0 KEEP=0 PROVISION=1 BASELINE=0 LIBVIRT=0 PROFILE=debug
while [ $# -gt 0 ]; do
  case "$1" in
    --bios) BIOS=$2; shift 2 ;;
    --uefi) UEFI=$2; shift 2 ;;
    --secure-boot) SECURE=$2; shift 2 ;;
    --arm64) ARM64=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --no-provision) PROVISION=0; shift ;;
    --baseline) BASELINE=1; shift ;;
    --libvirt) LIBVIRT=1; shift ;;
    --release) PROFILE=release; shift ;;
    *) echo "usage: $0 [--bios N] [--uefi N] [--secure-boot N] [--arm64 N] [--clients N] [--no-provision] [--baseline] [--keep] [--libvirt] [--release]"; exit 2 ;;
  esac
done
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
[ "$(id -u)" = 0 ] || { echo "run.sh: run as root (network namespaces, tap devices)"; exit 1; }
[ $LIBVIRT = 1 ] && [ "$SECURE" != 0 ] && { echo "run.sh: --secure-boot VMs are plain qemu: drop --libvirt"; exit 2; }
[ $LIBVIRT = 1 ] && [ "$ARM64" != 0 ] && { echo "run.sh: --arm64 VMs are plain qemu: drop --libvirt"; exit 2; }
[ $LIBVIRT = 1 ] && [ $PROVISION = 0 ] && { echo "run.sh: --libvirt powers the VMs on through a task: drop --no-provision"; exit 2; }
echo "== setup (tools/setup.sh --lab: the lab's Debian packages; skipped when present)"
SETUP=(--lab); [ $LIBVIRT = 1 ] && SETUP+=(--libvirt); [ "$ARM64" != 0 ] && SETUP+=(--arm64)
source tools/setup.sh "${SETUP[@]}"
RUN=$PWD/vm-lab/run
# BootOS's packages and the lab OS image (debootstrap) are fetched in the background while
# rackboot compiles: they wait on the network, the build on the CPU (the agent's build comes after
# rackboot's: two compiles at once on 2 cores took longer than one after the other). Their output
# is kept in a log each and shown when they are waited for.
PREP=$PWD/target/vm-lab-prep
rm -rf "$PREP"; mkdir -p "$PREP"
bootos/build.sh --kernel cloud --packages-only "$PREP/bootos" > "$PREP/bootos-packages.log" 2>&1 & ASSETS_PID=$!
IMAGE_PID=
if [ $PROVISION = 1 ]; then vm-lab/os-image.sh "$PREP/lab.img" > "$PREP/os-image.log" 2>&1 & IMAGE_PID=$!; fi
# Stops what is still running in the background when the run ends early.
stop_background() {
  for pid in $ASSETS_PID $IMAGE_PID; do pkill -P "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; done
}
trap stop_background EXIT
echo "== BootOS packages and the lab OS image are being fetched in the background (logs: $PREP/*.log)"
# Waits for a background step, shows its log, and stops the run if it failed.
await() {
  local pid=$1 log=$2
  if wait "$pid"; then sed 's/^/    /' "$log"; else sed 's/^/    /' "$log"; echo "run.sh: $(basename "$log" .log) failed"; exit 1; fi
}
# The dev profile: it compiles in a third of a release build's time, the password hash and the
# agent (BootOS builds it in release) are optimized anyway, and under TCG the VMs, not the
# appliance, set the pace. bench/ measures release builds; --release builds one here too.
echo "== building rackboot ($PROFILE profile; a first build takes a few minutes on 2 cores, cargo shows its progress)"
if [ "$PROFILE" = release ]; then cargo build --release --locked; else cargo build --locked; fi
BIN=${CARGO_TARGET_DIR:-$PWD/target}/$PROFILE/rackboot
LAB=rblab

teardown() {
  [ $LIBVIRT = 1 ] && vm-lab/libvirt.sh down "$RUN/libvirt"
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^$LAB(-|$)" || true); do
    # SIGTERM first (rackboot stops within 2 s, the CMDB flushed), SIGKILL only for what is
    # still running 5 s later.
    ip netns pids "$ns" | xargs -r kill 2>/dev/null || true
    for _ in $(seq 50); do [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break; sleep 0.1; done
    ip netns pids "$ns" | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
}
trap 'stop_background; teardown' EXIT
teardown
rm -rf "$RUN"; mkdir -p "$RUN/data"

echo "== boot directory (vm-lab/assets.sh)"
await $ASSETS_PID "$PREP/bootos-packages.log"
if [ "$ARM64" != 0 ]; then vm-lab/assets.sh --arm64 "$RUN/data/boot"; else vm-lab/assets.sh "$RUN/data/boot"; fi
if [ $PROVISION = 1 ]; then
  echo "== lab OS image (vm-lab/os-image.sh)"
  await $IMAGE_PID "$PREP/os-image.log"
  mkdir -p "$RUN/data/boot/images" "$RUN/data/postinstall"
  mv "$PREP/lab.img" "$RUN/data/boot/images/lab.img"
  # Served as zstd (276 MB: 1 GiB raw, 616 MB of it used): under TCG the agent
  # hashes what is served, so the raw image's SHA-256 alone took most of its deploy. The raw
  # file stays for --baseline's wget | dd.
  zstd -q -3 -T0 "$RUN/data/boot/images/lab.img" -o "$RUN/data/boot/images/lab.img.zst"
  cp postinstall/*.sh "$RUN/data/postinstall/"
fi

ip netns add $LAB; ip -n $LAB link set lo up
ip -n $LAB link add br0 type bridge; ip -n $LAB link set br0 up
ip -n $LAB addr add 198.18.0.1/24 dev br0
sed "s|@DATA@|$RUN/data|" vm-lab/lab.toml > "$RUN/lab.toml"
ip netns exec $LAB "$BIN" serve --config "$RUN/lab.toml" > "$RUN/rackboot.log" 2>&1 &
RB_PID=$!
# Any answer means it is up; /healthz is 503 (naming the files) while a boot asset is missing.
for _ in $(seq 100); do ip netns exec $LAB curl -s -o /dev/null http://198.18.0.1:8080/healthz && break; sleep 0.1; done
echo "== rackboot is up (log: $RUN/rackboot.log); /healthz: $(ip netns exec $LAB curl -s http://198.18.0.1:8080/healthz)"
echo "== appliance CA: $(ip netns exec $LAB "$BIN" ca show --config "$RUN/lab.toml" | sed -n 's/^sha256 fingerprint: //p')"
# The API is HTTPS only, trusting the appliance's CA.
rb() { ip netns exec $LAB "$BIN" "$1" --api https://198.18.0.1 --ca "$RUN/data/tls/ca.pem" --token-file "$RUN/data/admin.token" "${@:2}"; }

if [ $PROVISION = 1 ]; then
  echo "== vendor plugins: plugins/build.sh bundles and signs them (a lab key made here), then trust + import"
  plugins/build.sh "$RUN/plugins" | sed 's/^/    /'
  rb plugins trust add --vendor rackboot-lab "$RUN/plugins/lab-key/lab.pub" | sed 's/^/    /'
  rb plugins import "$RUN/plugins/pack" | sed 's/^/    /'
fi

# The boot as it happens: every timeline event of every machine, printed live (rackboot watch).
rb watch --all 2>>"$RUN/watch.err" | sed -u 's/^/  watch | /' &
declare -a VMS=() PIDS=() PORTS=()
SW=$LAB-sw
echo "== the rack's switch: namespace $SW, dhcrelay (option 82), lldpd (LLDP as leaf-r1) and radvd on its ports"
ip netns add $SW; ip -n $SW link set lo up
ip -n $LAB link add sw-uplink type veth peer name uplink netns $SW
ip -n $LAB link set sw-uplink master br0 up
ip -n $SW addr add 198.18.0.2/24 dev uplink; ip -n $SW link set uplink up
ip -n $LAB route add 198.18.1.0/24 via 198.18.0.2
ip netns exec $SW sysctl -qw net.ipv4.ip_forward=1
ip -n $SW link add rack0 type bridge; ip -n $SW addr add 198.18.1.1/24 dev rack0; ip -n $SW link set rack0 up
# A port: a tap on the rack bridge, isolated from the other ports (a broadcast from one VM is not
# seen on another's port, so dhcrelay relays it once, naming the right port), with the gateway
# address dhcrelay needs as giaddr.
add_port() { # port (a tap, unless it is there: a libvirt VM's veth)
  ip -n $SW link show "$1" >/dev/null 2>&1 || ip -n $SW tuntap add "$1" mode tap
  ip -n $SW link set "$1" master rack0 up
  ip netns exec $SW bridge link set dev "$1" isolated on
  ip -n $SW addr add 198.18.1.1/32 dev "$1"
  PORTS+=("$1")
}
start_vm() { # name mac uefi port (uefi: 0 SeaBIOS, 1 OVMF, 2 OVMF with Secure Boot enforcing, 3 arm64)
  local name=$1 mac=$2 uefi=$3 port=$4 fw=() rom=""
  if [ "$uefi" = 3 ]; then
    # The virt board, a Cortex-A57 under TCG, AAVMF with Secure Boot enforcing (Microsoft's keys);
    # no option ROM (qemu's iPXE ROM is x86): the firmware's own PXE loads the arm64 shim. A boot
    # menu with no wait: AAVMF's boot manager otherwise waits about 4 s before PXE (OVMF's, 0 s).
    cp /usr/share/AAVMF/AAVMF_VARS.ms.fd "$RUN/$name.vars.fd"
    truncate -s 2G "$RUN/$name.disk"
    ip netns exec $SW qemu-system-aarch64 -machine virt -cpu cortex-a57 -accel tcg -smp "${VM_CPUS:-1}" -m 1024 \
      -display none -boot order=n,menu=on,splash-time=0 -drive "if=pflash,format=raw,readonly=on,file=/usr/share/AAVMF/AAVMF_CODE.ms.fd" \
      -drive "if=pflash,format=raw,file=$RUN/$name.vars.fd" -serial "file:$RUN/$name.serial" \
      -netdev "tap,id=n0,ifname=$port,script=no,downscript=no" -device "virtio-net-pci,netdev=n0,mac=$mac,romfile=" -device virtio-rng-pci \
      -drive "file=$RUN/$name.disk,if=virtio,format=raw" > "$RUN/$name.qemu.log" 2>&1 &
    VMS+=("$name $mac"); PIDS+=($!)
    return
  fi
  if [ "$uefi" = 1 ]; then
    cp /usr/share/OVMF/OVMF_VARS_4M.fd "$RUN/$name.vars.fd"
    # No IPv6 in the firmware (the lab has no DHCPv6): once installed, the VM would walk PXEv6
    # and HTTPv6 to their timeouts before its disk.
    fw=(-machine q35 -drive "if=pflash,format=raw,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd"
        -drive "if=pflash,format=raw,file=$RUN/$name.vars.fd" -fw_cfg name=opt/org.tianocore/IPv6Support,string=no)
  elif [ "$uefi" = 2 ]; then
    # SMM and the secure-boot build, Microsoft's keys enrolled; no option ROM (qemu's iPXE ROM
    # is unsigned and would take PXE over): the firmware's own PXE loads shim.
    cp /usr/share/OVMF/OVMF_VARS_4M.ms.fd "$RUN/$name.vars.fd"
    fw=(-machine q35,smm=on -global driver=cfi.pflash01,property=secure,value=on
        -drive "if=pflash,format=raw,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.secboot.fd"
        -drive "if=pflash,format=raw,file=$RUN/$name.vars.fd")
    rom=",romfile="
  fi
  truncate -s 2G "$RUN/$name.disk"
  # Spare disks for the plugins: vdb and vdc (RAID1 members), vdd (the lab vendor's setting).
  truncate -s 256M "$RUN/$name.b.disk" "$RUN/$name.c.disk"; truncate -s 16M "$RUN/$name.d.disk"
  local spare=() smbios=()
  for d in b c d; do spare+=(-drive "file=$RUN/$name.$d.disk,if=virtio,format=raw"); done
  # The SeaBIOS VMs say they are made by "rackboot-lab": the lab-vendor plugin fits them only.
  [ "$uefi" = 0 ] && smbios=(-smbios "type=1,manufacturer=rackboot-lab,product=lab-vm")
  ip netns exec $SW qemu-system-x86_64 -accel tcg -smp "${VM_CPUS:-1}" -m 512 -display none -boot n "${fw[@]}" "${smbios[@]}" \
    -serial "file:$RUN/$name.serial" -netdev "tap,id=n0,ifname=$port,script=no,downscript=no" \
    -device "virtio-net-pci,netdev=n0,mac=$mac$rom" -device virtio-rng-pci -drive "file=$RUN/$name.disk,if=virtio,format=raw" \
    "${spare[@]}" > "$RUN/$name.qemu.log" 2>&1 &
  VMS+=("$name $mac"); PIDS+=($!)
}
declare -a PLAN=()
n=0
for i in $(seq 1 "$BIOS"); do n=$((n+1)); PLAN+=("bios$i $(printf '52:54:00:1a:c0:%02x' $n) 0 swp$n"); done
for i in $(seq 1 "$UEFI"); do n=$((n+1)); PLAN+=("uefi$i $(printf '52:54:00:1a:c0:%02x' $n) 1 swp$n"); done
for i in $(seq 1 "$SECURE"); do n=$((n+1)); PLAN+=("sb$i $(printf '52:54:00:1a:c0:%02x' $n) 2 swp$n"); done
for i in $(seq 1 "$ARM64"); do n=$((n+1)); PLAN+=("arm$i $(printf '52:54:00:1a:c0:%02x' $n) 3 swp$n"); done
if [ $LIBVIRT = 1 ]; then
  echo "== libvirt: the VMs as domains, powered off (vm-lab/libvirt.sh; disks in /var/lib/libvirt/images)"
  echo rblab- > "$RUN/libvirt.prefix"; mkdir -p "$RUN/libvirt"; mv "$RUN/libvirt.prefix" "$RUN/libvirt/prefix"
  vm-lab/libvirt.sh up "$RUN/libvirt"
  for p in "${PLAN[@]}"; do
    read -r name mac uefi port <<< "$p"
    vm-lab/libvirt.sh vm "$RUN/libvirt" "$name" "$mac" "$uefi" $SW "$port" 2G 256M 256M 16M
    ln -sf "libvirt/$name.serial" "$RUN/$name.serial"
  done
fi
for p in "${PLAN[@]}"; do read -r _ _ _ port <<< "$p"; add_port "$port"; done
relay_ports=(); for p in "${PORTS[@]}"; do relay_ports+=(-id "$p"); done
if [ ${#PORTS[@]} -gt 0 ]; then
  ip netns exec $SW dhcrelay -4 -d -a "${relay_ports[@]}" -iu uplink 198.18.0.1 > "$RUN/dhcrelay.log" 2>&1 &
  printf 'configure system hostname leaf-r1\nconfigure lldp portidsubtype ifname\nconfigure lldp tx-interval 5\n' > "$RUN/lldpd.conf"
  mkdir -p "$RUN/lldpd"
  ip netns exec $SW lldpd -d -u "$RUN/lldpd/lldpd.sock" -O "$RUN/lldpd.conf" -I 'swp*' > "$RUN/lldpd.log" 2>&1 &
  # The rack's router answers router solicitations, as a dual-stack top-of-rack router does, with
  # an advertisement that configures nothing (router lifetime 0, no prefix). Without it every
  # iPXE boot here waited 13 s for its IPv6 configuration to give up (docs/vlan.md).
  printf 'interface rack0 {\n  AdvSendAdvert on;\n  AdvDefaultLifetime 0;\n  MinRtrAdvInterval 30;\n  MaxRtrAdvInterval 100;\n};\n' > "$RUN/radvd.conf"
  ip netns exec $SW radvd -n -m stderr -C "$RUN/radvd.conf" -p "$RUN/radvd.pid" > "$RUN/radvd.log" 2>&1 &
  # Rack r1: its ports, the names and addresses its slots get. Created before anything boots.
  rack=$(jq -n --arg ports "swp1-${#PORTS[@]} -> U1-U${#PORTS[@]}" --arg plan "198.18.1.11-198.18.1.$((10 + ${#PORTS[@]}))" \
    '{name: "r1", location: "vm-lab", switch: {lldp_chassis_name: "leaf-r1"}, ports: [$ports],
      hostname_pattern: "{rack}-u{slot:02}", address_plan: $plan, silent_after_minutes: 10}')
  ip netns exec $LAB curl -sf --cacert "$RUN/data/tls/ca.pem" -H "authorization: Bearer $(cat "$RUN/data/admin.token")" \
    -H 'content-type: application/json' -d "$rack" https://198.18.0.1/api/v1/racks >/dev/null
  echo "== rack r1: ports swp1-${#PORTS[@]} -> U1-U${#PORTS[@]}, hostnames r1-uNN, addresses from 198.18.1.11"
fi
if [ $LIBVIRT = 1 ]; then
  echo "== BMC emulators in $LAB: sushy-emulator (Redfish) on 198.18.0.1:8000, VirtualBMC (IPMI) from port 6231"
  fp=$(vm-lab/libvirt.sh bmcs "$RUN/libvirt" $LAB 198.18.0.1)
  k=0
  for p in "${PLAN[@]}"; do
    read -r name mac uefi port <<< "$p"
    k=$((k + 1))
    rb machines add "$mac" >/dev/null
    if [ "$uefi" = 1 ]; then
      rb bmc set "$mac" --address 198.18.0.1:8000 --protocol redfish --username admin \
        --password-file "$RUN/libvirt/bmc.password" --fingerprint "$fp" \
        --system-id "$(vm-lab/libvirt.sh uuid "$RUN/libvirt" "$name")" --boot-mode uefi >/dev/null
    else
      vm-lab/libvirt.sh ipmi "$RUN/libvirt" "$name" 198.18.0.1 $((6230 + k))
      rb bmc set "$mac" --address 198.18.0.1:$((6230 + k)) --protocol ipmi --username admin \
        --password-file "$RUN/libvirt/bmc.password" --boot-mode legacy >/dev/null
    fi
    echo "    $name ($mac): $(rb bmc show "$mac" | sed -n 's/^address *//p'), $(rb power status "$mac" 2>&1 | tail -n 1)"
    VMS+=("$name $mac")
  done
else
  for p in "${PLAN[@]}"; do
    read -r name mac uefi port <<< "$p"
    if [ "$uefi" = 2 ]; then # the signed chain for this machine, before it first boots
      rb machines add "$mac" >/dev/null
      ip netns exec $LAB curl -sf -X PATCH --cacert "$RUN/data/tls/ca.pem" -H "authorization: Bearer $(cat "$RUN/data/admin.token")" \
        -H 'content-type: application/json' -d '{"uefi_loader": "shim"}' "https://198.18.0.1/api/v1/machines/$mac" >/dev/null
    fi
    start_vm $p
  done
  echo "== powered on ${#VMS[@]} VM(s); waiting for BootOS and its agent (TCG: about 7-10 s each)"
fi
start=$(date +%s%3N)
api() { ip netns exec $LAB curl -sf --cacert "$RUN/data/tls/ca.pem" -H "authorization: Bearer $(cat "$RUN/data/admin.token")" "https://198.18.0.1/api/v1$1"; }
# ms from power-on to the first event of a kind on the machine's timeline
at() { api "/machines/$1/events?limit=1000" | jq -r --arg k "$2" --argjson s "$start" \
  '[.events[] | select(.kind == $k)][0].at_ms // empty | . - $s'; }
for k in "${!PIDS[@]}"; do
  read -r name mac <<< "${VMS[$k]}"
  ok=0
  for _ in $(seq 600); do
    if [ "$(api "/machines/$mac" | jq -r '.inventory != null' 2>/dev/null)" = true ]; then ok=1; break; fi
    kill -0 "${PIDS[$k]}" 2>/dev/null || break
    sleep 1
  done
  if [ $ok = 1 ]; then
    printf "%s (%s): DHCP at %.1f s, agent enrolled at %.1f s, inventory at %.1f s after power-on\n" "$name" "$mac" \
      "$(echo "$(at "$mac" dhcp.ack) / 1000" | bc -l)" "$(echo "$(at "$mac" agent.enrolled) / 1000" | bc -l)" \
      "$(echo "$(at "$mac" agent.inventory) / 1000" | bc -l)"
    api "/machines/$mac" | jq -r '.inventory | "    \(.dmi.vendor) \(.dmi.model), \(.cpu.threads) CPU(s) \(.cpu.model), \(.memory_bytes / 1048576) MiB, disks: \([.disks[] | "\(.name) \(.size_bytes / 1073741824) GiB"] | join(", ")), NICs: \([.nics[] | "\(.name) \(.mac) \(.driver)"] | join(", "))"'
    api "/machines/$mac" | jq -r '"    firmware: \(if .inventory.firmware.uefi then "UEFI" else "BIOS" end) on \(.inventory.arch // "?"), Secure Boot \(.inventory.firmware.secure_boot | if . == true then "on" elif . == false then "off" else "unknown" end), booted through \(.uefi_loader // "the default loader")"'
    # Where it is plugged in: placed by option 82, confirmed by its agent's LLDP neighbour.
    for _ in $(seq 30); do
      [ "$(api "/machines/$mac/events?limit=1000" | jq '[.events[] | select(.kind == "rack.confirmed")] | length')" -gt 0 ] && break
      sleep 1
    done
    api "/machines/$mac" | jq -r '"    placed: rack \(.rack) U\(.slot) by \(.placement.by // "?"), named \(.hostname), address \(.reserved_ip)"'
    api "/machines/$mac" | jq -r '.inventory.lldp[]? | "    LLDP: \(.interface) <- \(.system_name) port \(.port_id)"'
    api "/machines/$mac/events?limit=1000" | jq -r '.events[] | select(.kind | startswith("rack.")) | "    \(.kind): \(.detail | tostring)"'
    echo "    job: uname -a ->"
    rb jobs run --machine "$mac" -- uname -a 2>&1 | sed 's/^/      /' || true
  else
    echo "$name ($mac): NO AGENT; see $RUN/$name.serial and $RUN/rackboot.log"
  fi
  rb machines events "$mac" | sed 's/^/    /'
done
if [ $PROVISION = 1 ] && [ $BASELINE = 1 ] && [ ${#PIDS[@]} -gt 0 ]; then
  read -r name mac <<< "${VMS[0]}"
  img=http://198.18.0.1:8080/boot/files/images/lab.img
  size=$(stat -c %s "$RUN/data/boot/images/lab.img")
  echo; echo "== baseline on $name, in BootOS: the same image with wget | dd, and with wget | tee disk | sha256sum"
  for cmd in "wget -q -O - $img | dd of=/dev/vda bs=4M 2>/dev/null" "wget -q -O - $img | tee /dev/vda | sha256sum"; do
    ms=$(rb jobs run --machine "$mac" --timeout 600 -- "$cmd" 2>&1 >/dev/null | sed -n 's/.*, \([0-9]*\) ms)$/\1/p')
    printf "    %-60s %6.1f s  %5.1f MB/s\n" "$cmd" "$(echo "$ms / 1000" | bc -l)" "$(echo "$size / $ms / 1000" | bc -l)"
  done
fi
# The arm64 VMs are left out: the lab image is amd64.
INSTALL=(); for v in "${VMS[@]}"; do case "$v" in arm*) ;; *) INSTALL+=("$v") ;; esac; done
if [ $PROVISION = 1 ] && [ ${#INSTALL[@]} -gt 0 ]; then
  echo; echo "== provisioning every amd64 VM from lab.img.zst"
  macs=(); for v in "${INSTALL[@]}"; do read -r _ m <<< "$v"; macs+=(--mac "$m"); done
  # No hostname pattern or address pool: the rack named and addressed them by their ports.
  rb tasks create "${macs[@]}" --image lab.img.zst --hardware-profile lab --post-install motd.sh | sed 's/^/    /'
  for _ in $(seq 900); do
    [ "$(api /tasks/1 | jq '[.runs[] | select(.state == "active")] | length')" = 0 ] && break
    sleep 2
  done
  rb tasks show 1 | sed 's/^/    /'
  for v in "${INSTALL[@]}"; do
    read -r name mac <<< "$v"
    printf "    %s: " "$name"
    # Under --libvirt, from the power-on through the BMC (the task's power action).
    t0=$(api "/machines/$mac/events?limit=1000" | jq --argjson s "$start" \
      '[.events[] | select(.kind == "power.action" and .detail.action == "cycle")][0].at_ms // $s')
    [ "$t0" = "$start" ] || printf "power-on through %s, " "$(rb bmc show "$mac" | sed -n 's/^address .*(\(.*\))$/\1/p')"
    api "/machines/$mac/events?limit=1000" | jq -r --argjson s "$t0" '[.events[]
      | select((.kind == "provision.step" and .detail.job != null) or .kind == "provision.installed" or .kind == "agent.enrolled")
      | "\(if .kind == "agent.enrolled" then "enrolled(" + .detail.mode + ")" elif .kind == "provision.installed" then "INSTALLED" else .detail.step end) \((.at_ms - $s) / 1000 | floor)s"] | join(", ")'
    job=$(api "/jobs?machine=$mac&limit=1000" | jq -r '[.jobs[] | select(.action.kind == "deploy_image")][0].id // empty')
    [ -n "$job" ] && api "/jobs/$job/output" | jq -r '.text' | grep "100%" | sed 's/^/      /'
    host=$(api "/machines/$mac" | jq -r .hostname)
    echo "      dig $host.lab.rackboot.test -> $(ip netns exec $LAB dig +short @198.18.0.1 "$host.lab.rackboot.test")"
    api "/machines/$mac/events?limit=1000" | jq -r '.events[] | select(.kind | startswith("plugin.")) | "      \(.kind): \(.detail.plugin) \(.detail.version // "") \(.detail.result // "") \(.detail.signer // "")"'
    echo "      job on the installed system:"
    rb jobs run --machine "$mac" -- 'hostname; cat /etc/motd.rackboot; . /etc/os-release; echo "$PRETTY_NAME"
      echo "RAID members: $(blkid -o value -s TYPE /dev/vdb) $(blkid -o value -s TYPE /dev/vdc)"
      s=$(cat /sys/class/block/vdd/size); echo "vdd last sector: $(dd if=/dev/vdd bs=512 skip=$((s - 1)) count=1 2>/dev/null | tr -d "\000" | head -n 1)"' \
      2>&1 | sed 's/^/        /' || true
  done
fi

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
echo; echo "== rack r1"; rb racks show r1 2>&1 | sed 's/^/    /' || true
echo; echo "== CMDB"; rb machines list; echo; echo "== leases"; rb leases
if [ $KEEP = 0 ] && [ $LIBVIRT = 1 ]; then
  echo; echo "== powering the VMs off through their BMCs (graceful, forced after bmc.soft_off_timeout_secs)"
  macs=(); for v in "${VMS[@]}"; do read -r _ m <<< "$v"; macs+=("$m"); done
  rb power off "${macs[@]}" 2>&1 | sed 's/^/    /' || true
  virsh -c qemu:///system list --all | sed 's/^/    /'
fi
if [ $KEEP = 0 ] && [ ${#PIDS[@]} -gt 0 ]; then
  echo; echo "== powering the VMs off (a power_off job each)"
  for k in "${!PIDS[@]}"; do
    read -r name mac <<< "${VMS[$k]}"
    rb jobs action --machine "$mac" power-off >/dev/null 2>&1 || true
  done
  for k in "${!PIDS[@]}"; do timeout 60 tail --pid="${PIDS[$k]}" -f /dev/null || true; done
fi
if [ $KEEP = 1 ]; then
  echo "lab running; API: ip netns exec $LAB curl --cacert $RUN/data/tls/ca.pem -H \"authorization: Bearer \$(cat $RUN/data/admin.token)\" https://198.18.0.1/api/v1/machines"
  echo "Ctrl-C to tear down"; sleep infinity
fi
# The appliance stops on SIGTERM (as systemd stops it): services first, then the CMDB flushed.
t0=$(date +%s%N)
kill -TERM $RB_PID && wait $RB_PID && rc=0 || rc=$?
echo "== rackboot stopped on SIGTERM in $(( ($(date +%s%N) - t0) / 1000000 )) ms (exit status $rc)"
