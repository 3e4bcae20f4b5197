#!/usr/bin/env bash
# vm-lab's libvirt half: lab VMs as libvirt domains behind emulated BMCs, so that rackboot, not
# a script, powers them on. Used by `vm-lab/run.sh --libvirt` and tests/it/e2e/vm/provision.rs.
#
#   libvirt.sh up STATE                  virtlogd + libvirtd, started here unless already running
#                                        (no systemd on the lab machines); STATE is a fresh dir
#   libvirt.sh vm STATE NAME MAC UEFI NS PORT SIZE...
#                                        defines domain NAME (powered off; qemu TCG, 512 MiB,
#                                        SeaBIOS or OVMF) with one raw disk per SIZE (vda, vdb...)
#                                        and its NIC behind interface PORT of namespace NS (left
#                                        down and unattached: the caller plugs it in); with
#                                        NIC2_MAC set, a second NIC with that MAC behind PORTb
#   libvirt.sh bmcs STATE NS ADDR        sushy-emulator (Redfish over HTTPS, libvirt driver) on
#                                        ADDR:8000 and vbmcd, inside NS; writes STATE/bmc.password
#                                        and prints the Redfish certificate's SHA-256
#   libvirt.sh ipmi STATE NAME ADDR PORT a VirtualBMC (IPMI lanplus) for NAME on ADDR:PORT
#   libvirt.sh uuid STATE NAME           the domain's UUID (its Redfish system id)
#   libvirt.sh down STATE                undoes all of it: domains, disks, emulators, links, and
#                                        the daemons if they were started here
#
# Domain NAMEs get the prefix in STATE/prefix (rblab- unless set before `up`). Disks live in
# /var/lib/libvirt/images/<domain>/ (libvirt's qemu user can reach them there) and the serial
# console in STATE/NAME.serial. A VM's NIC is a macvtap on one end of a veth pair whose other
# end is PORT inside NS: no bridge in the host's namespace, so the host's firewall and
# br_netfilter never see lab frames. trustGuestRxFilters: a guest that changes a NIC's MAC (a
# bond gives its members its own) has the macvtap follow, as a switch port would. The BMC emulators come from tools/setup.sh --libvirt
# (target/validators/sushy and .../vbmc).
#
# Boot order, as on a server set to "network, then disk": the NIC first, then the first disk, and
# qemu's `-boot strict=off`. libvirt always asks qemu for a strict boot order, and both emulators
# rewrite the order on a PXE override (VirtualBMC to the network alone; sushy to the network, then
# the disks that had an order). Strictly network-only, SeaBIOS maps no disk for iPXE's `sanboot`
# and OVMF never tries the disk after iPXE's `exit`, so an installed VM would never leave PXE.
# OVMF runs without IPv6 (fw_cfg opt/org.tianocore/IPv6Support=no): the lab has no DHCPv6, and an
# installed UEFI VM walked PXEv6 and HTTPv6 on each NIC, each to its timeout, before its disk.
set -euo pipefail
trap 'echo "libvirt.sh: line $LINENO: $BASH_COMMAND failed" >&2' ERR
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VALIDATORS=$ROOT/target/validators
URI=qemu:///system
virsh() { command virsh -q -c "$URI" "$@"; }
# vbmc talks to vbmcd on a loopback port: in vbmcd's namespace.
vbmc() { VIRTUALBMC_CONFIG=$STATE/vbmc.conf ip netns exec "$(cat "$STATE/bmc-ns")" "$VALIDATORS/vbmc/bin/vbmc" "$@"; }

cmd=${1:?usage: libvirt.sh up|vm|bmcs|ipmi|uuid|down STATE ...}
STATE=${2:?STATE directory}
mkdir -p "$STATE"
prefix=$(cat "$STATE/prefix" 2>/dev/null || echo rblab-)

# Starts `daemon -d` unless its socket answers; records its PID for `down`.
# A socket that answers, not one that exists: a daemon killed earlier leaves its file behind.
answers() { python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "$1" 2>/dev/null; }
daemon() { # binary socket pidfile
  answers "$2" && return 0
  "$1" -d
  for _ in $(seq 100); do answers "$2" && break; sleep 0.1; done
  answers "$2" || { echo "libvirt.sh: $1 did not come up" >&2; exit 1; }
  cat "$3" >> "$STATE/daemons"
}

# A veth end's name in the host namespace: short (15 bytes) and unique per domain.
hostif() { echo "rbv$(echo -n "$prefix$1" | sha256sum | cut -c1-10)"; }

domain_xml() { # domain mac uefi disk...   (disk serials RBLAB-VDA, RBLAB-VDB, ...: root-device hints)
  local dom=$1 mac=$2 uefi=$3 disks="" fw="" machine=pc smbios="" letter
  shift 3
  local i=0
  for d in "$@"; do
    letter=$(printf "\\x$(printf %x $((97 + i)))")
    disks+="<disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='$d'/><target dev='vd$letter' bus='virtio'/><serial>RBLAB-VD${letter^^}</serial>$([ $i = 0 ] && echo "<boot order='2'/>" || true)</disk>"
    i=$((i + 1))
  done
  if [ "$uefi" = 1 ]; then
    machine=q35
    fw="<loader readonly='yes' secure='no' type='pflash'>/usr/share/OVMF/OVMF_CODE_4M.fd</loader><nvram template='/usr/share/OVMF/OVMF_VARS_4M.fd'/>"
  else
    # The lab vendor's plugin fits the SeaBIOS VMs only (as with vm-lab/run.sh's qemu VMs).
    smbios="<sysinfo type='smbios'><system><entry name='manufacturer'>rackboot-lab</entry><entry name='product'>lab-vm</entry></system></sysinfo>"
  fi
  cat <<XML
<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>$dom</name>
  <memory unit='MiB'>512</memory>
  <vcpu>${VM_CPUS:-1}</vcpu>
  $smbios
  <os><type arch='x86_64' machine='$machine'>hvm</type>$fw$([ -n "$smbios" ] && echo "<smbios mode='sysinfo'/>" || true)</os>
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff><on_reboot>restart</on_reboot><on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <interface type='direct' trustGuestRxFilters='yes'><source dev='$(hostif "${dom#"$prefix"}")' mode='bridge'/><mac address='$mac'/><model type='virtio'/><boot order='1'/></interface>
    $([ -n "${NIC2_MAC:-}" ] && echo "<interface type='direct' trustGuestRxFilters='yes'><source dev='$(hostif "${dom#"$prefix"}-2")' mode='bridge'/><mac address='$NIC2_MAC'/><model type='virtio'/></interface>" || true)
    $disks
    <serial type='file'><source path='/var/lib/libvirt/images/$dom/serial.log'/></serial>
    <rng model='virtio'><backend model='random'>/dev/urandom</backend></rng>
  </devices>
  <qemu:commandline><qemu:arg value='-boot'/><qemu:arg value='strict=off'/>$([ "$uefi" = 1 ] && echo "<qemu:arg value='-fw_cfg'/><qemu:arg value='name=opt/org.tianocore/IPv6Support,string=no'/>" || true)</qemu:commandline>
</domain>
XML
}

case "$cmd" in
up)
  # libvirt checks /dev/kvm as its qemu user: a root-only node (no udev on the lab machines) makes
  # it re-probe qemu on every call, each probe waiting for PID 1 to reap qemu. Debian's udev rule
  # gives the node to group kvm; the domains are TCG (type qemu) either way.
  if [ -c /dev/kvm ] && [ "$(stat -c %G /dev/kvm)" != kvm ] && getent group kvm >/dev/null; then
    chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
  fi
  daemon /usr/sbin/virtlogd /run/libvirt/virtlogd-sock /run/virtlogd.pid
  daemon /usr/sbin/libvirtd /run/libvirt/libvirt-sock /run/libvirtd.pid
  virsh version >/dev/null
  # sushy-emulator's virtual media uploads the image it fetched into the storage pool
  # `default`, then attaches it as the domain's CD.
  if ! virsh pool-info default >/dev/null 2>&1; then
    mkdir -p /var/lib/libvirt/images/pool-default
    virsh pool-define-as default dir --target /var/lib/libvirt/images/pool-default >/dev/null
  fi
  state=$(virsh pool-info default | awk '$1 == "State:" {print $2}')
  [ "$state" = running ] || virsh pool-start default >/dev/null
  ;;
vm)
  name=$3 mac=$4 uefi=$5 ns=$6 port=$7
  shift 7
  dom=$prefix$name img=/var/lib/libvirt/images/$prefix$name
  mkdir -p "$img"
  # qemu runs as libvirt's qemu user (Debian: libvirt-qemu) and creates the console log here.
  chown "$(id -u libvirt-qemu 2>/dev/null || echo 0)" "$img"
  ln -sf "$img/serial.log" "$STATE/$name.serial"
  disks=()
  for size in "$@"; do
    f=$img/vd$(printf "\\x$(printf %x $((97 + ${#disks[@]})))").img
    truncate -s "$size" "$f"
    disks+=("$f")
  done
  ip link add "$(hostif "$name")" type veth peer name "$port" netns "$ns"
  ip link set "$(hostif "$name")" up
  if [ -n "${NIC2_MAC:-}" ]; then
    ip link add "$(hostif "$name-2")" type veth peer name "${port}b" netns "$ns"
    ip link set "$(hostif "$name-2")" up
  fi
  echo "$name" >> "$STATE/vms"
  domain_xml "$dom" "$mac" "$uefi" "${disks[@]}" > "$STATE/$name.xml"
  virsh define "$STATE/$name.xml" >/dev/null
  ;;
bmcs)
  ns=$3 addr=$4
  # One password for the lab's BMCs, made here, in a file only root reads (16 characters:
  # IPMI allows 20).
  (umask 077; head -c 12 /dev/urandom | base64 | tr '+/' 'xy' > "$STATE/bmc.password")
  pw=$(cat "$STATE/bmc.password")
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$addr" \
    -addext "subjectAltName=IP:$addr" -keyout "$STATE/sushy.key" -out "$STATE/sushy.pem" 2>/dev/null
  # sushy accepts bcrypt digests only; the venv's bcrypt makes one (the password on stdin).
  "$VALIDATORS/sushy/bin/python3" -c 'import sys, bcrypt; print("admin:" + bcrypt.hashpw(sys.stdin.read().strip().encode(), bcrypt.gensalt()).decode())' \
    < "$STATE/bmc.password" > "$STATE/htpasswd"
  cat > "$STATE/sushy.conf" <<CONF
SUSHY_EMULATOR_LISTEN_IP = '$addr'
SUSHY_EMULATOR_LISTEN_PORT = 8000
SUSHY_EMULATOR_SSL_CERT = '$STATE/sushy.pem'
SUSHY_EMULATOR_SSL_KEY = '$STATE/sushy.key'
SUSHY_EMULATOR_AUTH_FILE = '$STATE/htpasswd'
SUSHY_EMULATOR_LIBVIRT_URI = '$URI'
SUSHY_EMULATOR_ALLOWED_INSTANCES = [$(for n in $(cat "$STATE/vms"); do printf "'%s', " "$(virsh domuuid "$prefix$n")"; done)]
# A UEFI override keeps the lab's firmware (sushy's defaults name other files).
SUSHY_EMULATOR_BOOT_LOADER_MAP = {'UEFI': {'x86_64': '/usr/share/OVMF/OVMF_CODE_4M.fd'}, 'Legacy': {'x86_64': None}}
SUSHY_EMULATOR_SECURE_BOOT_DISABLED_NVRAM = '/usr/share/OVMF/OVMF_VARS_4M.fd'
CONF
  echo "$ns" > "$STATE/bmc-ns"
  ip netns exec "$ns" "$VALIDATORS/sushy/bin/sushy-emulator" --config "$STATE/sushy.conf" > "$STATE/sushy.log" 2>&1 &
  echo $! >> "$STATE/emulators"
  mkdir -p "$STATE/vbmc"
  printf '[default]\nserver_port = 50891\nconfig_dir = %s/vbmc\npid_file = %s/vbmcd.pid\n' "$STATE" "$STATE" > "$STATE/vbmc.conf"
  VIRTUALBMC_CONFIG=$STATE/vbmc.conf ip netns exec "$ns" "$VALIDATORS/vbmc/bin/vbmcd" --foreground > "$STATE/vbmcd.log" 2>&1 &
  echo $! >> "$STATE/emulators"
  for _ in $(seq 100); do
    ip netns exec "$ns" curl -sk -o /dev/null "https://$addr:8000/redfish/v1/" && break
    sleep 0.2
  done
  openssl x509 -in "$STATE/sushy.pem" -outform der | sha256sum | cut -d' ' -f1
  ;;
ipmi)
  name=$3 addr=$4 port=$5
  for _ in $(seq 50); do vbmc list >/dev/null 2>&1 && break; sleep 0.2; done
  # vbmc takes the password as an argument only; it is the lab's throw-away one.
  vbmc add "$prefix$name" --address "$addr" --port "$port" --username admin \
    --password "$(cat "$STATE/bmc.password")" --libvirt-uri "$URI" >/dev/null
  vbmc start "$prefix$name" >/dev/null
  echo "$name" >> "$STATE/vbmcs"
  ;;
uuid)
  virsh domuuid "$prefix$3"
  ;;
down)
  for n in $(cat "$STATE/vbmcs" 2>/dev/null); do vbmc delete "$prefix$n" >/dev/null 2>&1 || true; done
  for p in $(cat "$STATE/emulators" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  for n in $(cat "$STATE/vms" 2>/dev/null); do
    # What sushy-emulator uploaded for its virtual media is named after the domain's UUID.
    uuid=$(virsh domuuid "$prefix$n" 2>/dev/null || true)
    [ -n "$uuid" ] && rm -f /var/lib/libvirt/images/pool-default/*-"$uuid".img
    virsh destroy "$prefix$n" >/dev/null 2>&1 || true
    virsh undefine --nvram "$prefix$n" >/dev/null 2>&1 || true
    rm -rf "/var/lib/libvirt/images/$prefix$n"
    ip link del "$(hostif "$n")" 2>/dev/null || true
    ip link del "$(hostif "$n-2")" 2>/dev/null || true
  done
  for p in $(cat "$STATE/daemons" 2>/dev/null); do
    kill "$p" 2>/dev/null || continue
    for _ in $(seq 100); do [ -d "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat")" != Z ] || break; sleep 0.1; done
  done
  virsh pool-refresh default >/dev/null 2>&1 || true
  rm -f "$STATE/vms" "$STATE/vbmcs" "$STATE/emulators" "$STATE/daemons"
  ;;
*)
  echo "usage: libvirt.sh up|vm|bmcs|ipmi|uuid|down STATE ..." >&2; exit 2 ;;
esac
