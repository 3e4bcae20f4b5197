#!/bin/sh
# rackboot identity step (rendered per machine). Two ways it runs:
# - in BootOS after an image was written: grows the root partition (the largest partition of
#   the disk) to the end of the disk and mounts it; after a disk layout, DISK is the root file
#   system itself (a logical volume or a RAID device), which it mounts;
# - as `sh identity.sh ROOT` from an installer's post-install step (served by /boot/installed):
#   ROOT is the installed system's root (/target in debian-installer and subiquity, / in a
#   kickstart %post).
# Either way it writes the machine's identity: hostname, a fresh machine-id, SSH keys, the
# network (the machine's spec, else DHCP on every port), cloud-init's seed, and the rackboot
# agent with its credential and service, so the installed system calls the appliance in.
# A regular file as the target (tests, image builds) gets the files under <file>.root/.
set -eu
DISK="{{ disk }}"
HOSTNAME="{{ hostname }}"
DOMAIN="{{ domain }}"
APPLIANCE="{{ appliance_url }}"
AGENT_API="{{ agent_url }}"
AGENT_SHA256="{{ agent_sha256 }}"
CLOUD_INIT_URL="{{ cloud_init_url }}"
# Each line carries the seconds since boot, as the layout step's do: where a slow step's time goes.
say() { echo "identity: [$(cut -d' ' -f1 /proc/uptime 2>/dev/null)] $*"; }

if [ "$DISK" = / ] && [ -z "${1:-}" ]; then
  say "usage: sh $0 ROOT (the installed system's root directory)"; exit 2
elif [ -n "${1:-}" ]; then
  ROOT=$1
  [ -d "$ROOT/etc" ] || { say "$ROOT is not an installed system's root"; exit 1; }
elif [ -b "$DISK" ] && [ -z "$(ls -d /sys/class/block/"$(basename "$(readlink -f "$DISK")")"/*/partition 2>/dev/null)" ] \
  && [ "$(od -An -tx1 -j1080 -N2 "$DISK" 2>/dev/null | tr -d ' \n')" = 53ef ]; then
  # A file system of its own (the root a disk layout made: a logical volume or a RAID device),
  # grown by the layout step already.
  PART=$DISK
  say "$DISK holds the root file system"
elif [ -b "$DISK" ]; then
  # The image brought its own partition table: make the kernel read it, and move GPT's backup
  # header to the end of this (larger) disk.
  blockdev --rereadpt "$DISK" 2>/dev/null || true
  command -v sfdisk >/dev/null && sfdisk --relocate gpt-bak-std "$DISK" >/dev/null 2>&1 || true
  blockdev --rereadpt "$DISK" 2>/dev/null || true
  sleep 1
  # The root file system is the largest partition on the disk (from sysfs: no lsblk needed).
  DEV=$(basename "$DISK")
  PART="" BEST=0 NUM=""
  for p in /sys/block/"$DEV"/"$DEV"*; do
    [ -e "$p/partition" ] || continue
    size=$(cat "$p/size")
    if [ "$size" -gt "$BEST" ]; then BEST=$size; PART=/dev/$(basename "$p"); NUM=$(cat "$p/partition"); fi
  done
  [ -n "$PART" ] || { say "no partition on $DISK"; exit 1; }
  if command -v sfdisk >/dev/null; then
    echo ", +" | sfdisk --no-reread --no-tell-kernel -N "$NUM" "$DISK" >/dev/null 2>&1 && say "grew $PART" || say "left $PART as it is"
    blockdev --rereadpt "$DISK" 2>/dev/null || true
  fi
  if command -v e2fsck >/dev/null && command -v resize2fs >/dev/null; then
    e2fsck -fy "$PART" >/dev/null 2>&1 || true
    resize2fs "$PART" >/dev/null 2>&1 && say "resized the file system on $PART" || true
  fi
fi
if [ -n "${ROOT:-}" ]; then
  :
elif [ -b "$DISK" ]; then
  ROOT=/mnt/target
  mkdir -p "$ROOT"
  mount "$PART" "$ROOT"
  trap 'sync; umount "$ROOT" 2>/dev/null || true; say "$ROOT synced and unmounted"' EXIT
  say "$PART mounted on $ROOT"
else
  ROOT="$DISK.root"
  mkdir -p "$ROOT"
fi

mkdir -p "$ROOT/etc" "$ROOT/root/.ssh" "$ROOT/var/lib/rackboot-agent" "$ROOT/etc/default" "$ROOT/etc/rackboot-agent" \
  "$ROOT/usr/local/sbin" "$ROOT/etc/systemd/system/multi-user.target.wants"
echo "$HOSTNAME" > "$ROOT/etc/hostname"
# Every machine from the same image must not share one machine-id (DHCP client ids, journald):
# empty means systemd makes a new one on the first boot.
: > "$ROOT/etc/machine-id"
rm -f "$ROOT/var/lib/dbus/machine-id"
{% if network_files %}# Network: as the machine's spec in the CMDB says (bonds, VLANs, static addresses), in
# systemd-networkd's files; the catch-all DHCP file of an earlier install goes. Without
# systemd-networkd (RHEL), an installer's system keeps the network its answer file set up from
# the same spec (kickstart's lines, in NetworkManager); an image's cannot take the spec.
NETWORKD=""
for unit in lib/systemd/system/systemd-networkd.service usr/lib/systemd/system/systemd-networkd.service; do
  if [ -e "$ROOT/$unit" ]; then NETWORKD=/$unit; break; fi
done
if [ -z "$NETWORKD" ] && [ -n "${1:-}" ]; then
  say "no systemd-networkd here: the network stays as the installer set it up from the spec"
elif [ -z "$NETWORKD" ]; then
  say "the machine's network spec needs systemd-networkd, which this system does not have"; exit 1
else
mkdir -p "$ROOT/etc/systemd/network"
rm -f "$ROOT/etc/systemd/network/80-rackboot.network" "$ROOT"/etc/systemd/network/10-rackboot-*
# netplan's files (an installer's or cloud-init's) would generate networkd files of their own
# that come first: they are set aside, so the spec is the one network.
for f in "$ROOT"/etc/netplan/*.yaml; do
  if [ -e "$f" ]; then mv "$f" "$f.rackboot-off"; say "set aside ${f#"$ROOT"}"; fi
done
# So would ifupdown's (debian-installer's), on the same ports: loopback only.
STANZA='^[[:space:]]*(auto|allow-[a-z]+|iface)[[:space:]]+'
if [ -f "$ROOT/etc/network/interfaces" ] \
  && grep -E "$STANZA" "$ROOT/etc/network/interfaces" | grep -qvE "${STANZA}lo([[:space:]]|\$)"; then
  mv "$ROOT/etc/network/interfaces" "$ROOT/etc/network/interfaces.rackboot-off"
  printf 'auto lo\niface lo inet loopback\n' > "$ROOT/etc/network/interfaces"
  say "set aside /etc/network/interfaces"
fi
{% for f in network_files %}cat > "$ROOT/etc/systemd/network/{{ f.name }}" <<'NETWORK'
{{ f.text }}NETWORK
{% endfor %}ln -sf "$NETWORKD" "$ROOT/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
fi
{% else %}# Network: DHCP on every Ethernet interface (rackboot hands out the reserved address and the
# name server), with systemd-networkd where the image has it, else ifupdown.
if [ -d "$ROOT/lib/systemd/network" ] || [ -d "$ROOT/etc/systemd/network" ]; then
  mkdir -p "$ROOT/etc/systemd/network"
{% if boot_mac %}  # The port it provisioned through is the one the network waits for: a port without a cable,
  # required for online, would hold systemd-networkd-wait-online (and network-online.target,
  # the agent and cloud-init after it) until its timeout, two minutes at every boot.
  printf '[Match]\nMACAddress={{ boot_mac }}\n\n[Network]\nDHCP=yes\n' > "$ROOT/etc/systemd/network/10-rackboot-boot.network"
  printf '[Match]\nName=e*\n\n[Link]\nRequiredForOnline=no\n\n[Network]\nDHCP=yes\n' > "$ROOT/etc/systemd/network/80-rackboot.network"
{% else %}  printf '[Match]\nName=e*\n\n[Network]\nDHCP=yes\n' > "$ROOT/etc/systemd/network/80-rackboot.network"
{% endif %}elif [ -d "$ROOT/etc/network" ]; then
  printf 'auto lo\niface lo inet loopback\n\nallow-hotplug eth0\niface eth0 inet dhcp\n' > "$ROOT/etc/network/interfaces"
fi
{% endif %}# cloud-init, where the system has it, takes its data (user-data, the instance id of this
# install) from the appliance's NoCloud seed for this machine; the network stays what this step
# wrote.
if [ -n "$CLOUD_INIT_URL" ] && [ -d "$ROOT/etc/cloud" ]; then
  mkdir -p "$ROOT/etc/cloud/cloud.cfg.d"
  cat > "$ROOT/etc/cloud/cloud.cfg.d/90-rackboot.cfg" <<CLOUD
datasource_list: [ NoCloud, None ]
datasource:
  NoCloud:
    seedfrom: $CLOUD_INIT_URL
    # The seed is the appliance's: no search for a "cidata" disk (five blkid scans of every
    # disk, partition, RAID member and volume, in each of cloud-init's two early stages).
    fs_label: null
network:
  config: disabled
# The SSH keys above stay root's own.
disable_root: false
CLOUD
fi
cat > "$ROOT/etc/hosts" <<HOSTS
127.0.0.1 localhost
127.0.1.1 $HOSTNAME.$DOMAIN $HOSTNAME
HOSTS
: > "$ROOT/root/.ssh/authorized_keys"
{% for key in ssh_keys %}echo "{{ key }}" >> "$ROOT/root/.ssh/authorized_keys"
{% endfor %}chmod 700 "$ROOT/root/.ssh"; chmod 600 "$ROOT/root/.ssh/authorized_keys"

say "hostname, network, cloud-init's seed and SSH keys written"

# The agent: its binary (BootOS's own, or downloaded from the appliance by an installer and
# checked against its SHA-256), its session (the machine's credential), the appliance's CA
# (the agent talks HTTPS and trusts only that CA) and the service.
echo "RACKBOOT_URL=$AGENT_API" > "$ROOT/etc/default/rackboot-agent"
cat > "$ROOT/etc/rackboot-agent/ca.pem" <<'CA'
{{ ca_pem }}CA
{% if session %}(umask 077; cat > "$ROOT/var/lib/rackboot-agent/session.json" <<'SESSION'
{{ session }}
SESSION
)
{% else %}if [ -r "${RACKBOOT_SESSION_FILE:-}" ]; then
  (umask 077; cat "$RACKBOOT_SESSION_FILE" > "$ROOT/var/lib/rackboot-agent/session.json")
fi
{% endif %}chmod 700 "$ROOT/var/lib/rackboot-agent"
if [ -n "${1:-}" ]; then
  # From the appliance (installers have curl or busybox wget).
  AGENT_URL="$APPLIANCE/boot/files/bootos/rackboot-agent"
  # Straight to the appliance, past any proxy the installer uses for its repository.
  export http_proxy= HTTP_PROXY=
  NEW="$ROOT/usr/local/sbin/rackboot-agent.new"
  [ -n "$AGENT_SHA256" ] || { say "the appliance has no agent binary to install"; exit 1; }
  for try in 1 2 3 4 5; do
    if command -v curl >/dev/null; then curl -fsS -o "$NEW" "$AGENT_URL" && break
    else wget -q -O "$NEW" "$AGENT_URL" && break; fi
    [ "$try" = 5 ] && { say "cannot download $AGENT_URL"; exit 1; }
    sleep 3
  done
  # Plain HTTP carries the binary: only the hash this script brought decides whether it runs.
  if [ "$(sha256sum "$NEW" | cut -d' ' -f1)" != "$AGENT_SHA256" ]; then
    rm -f "$NEW"; say "the downloaded agent does not match its SHA-256: not installed"; exit 1
  fi
  chmod 0755 "$NEW"
  mv "$NEW" "$ROOT/usr/local/sbin/rackboot-agent"
elif [ -x /bin/rackboot-agent ] && [ -b "$DISK" ]; then
  cp /bin/rackboot-agent "$ROOT/usr/local/sbin/rackboot-agent"
  say "the agent copied to $ROOT/usr/local/sbin"
fi
cat > "$ROOT/etc/systemd/system/rackboot-agent.service" <<'UNIT'
{{ unit }}UNIT
ln -sf /etc/systemd/system/rackboot-agent.service "$ROOT/etc/systemd/system/multi-user.target.wants/rackboot-agent.service"
# SELinux (a kickstart %post runs in the new system): files written here get their labels.
if [ "$ROOT" = / ] && command -v restorecon >/dev/null; then
  restorecon -R /root/.ssh /etc/hostname /etc/hosts /etc/systemd/system /usr/local/sbin /var/lib/rackboot-agent /etc/rackboot-agent || true
fi
say "$HOSTNAME written to $ROOT"
