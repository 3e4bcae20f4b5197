#!/usr/bin/env bash
# Builds the lab OS image: a small bootable Debian 12 disk (raw, 1 GiB, GPT with a BIOS boot
# partition, an EFI system partition and an ext4 root), from Debian packages (debootstrap
# minbase with the cloud kernel, systemd, and GRUB for both BIOS and UEFI, installed into the
# image's own boot records; UEFI boots through Debian's signed shim and GRUB, so the image boots
# with Secure Boot on). The network comes up by DHCP (systemd-networkd); the provisioning
# identity step adds the hostname, SSH keys, the machine's network spec, cloud-init's NoCloud
# seed (Debian's cloud-init is installed, idle until then) and the rackboot agent with its
# service; a declared layout (RAID 1, LVM, LUKS2 bound with Clevis) finds mdadm, lvm2,
# cryptsetup and clevis installed. Cached in
# target/vm-lab-cache; needs root (loop devices, mounts) and a Debian mirror.
#
#   vm-lab/os-image.sh OUT.img
set -euo pipefail
OUT=${1:?usage: $0 OUT.img}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${RACKBOOT_LAB_CACHE:-$ROOT/target/vm-lab-cache}
mkdir -p "$CACHE"
IMG=$CACHE/lab-os.img
if [ -f "$IMG" ] && [ "$IMG" -nt "$0" ]; then
  cp --sparse=always "$IMG" "$OUT"; exit 0
fi
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH" DEBIAN_FRONTEND=noninteractive
need=()
for p in debootstrap dosfstools mtools fdisk e2fsprogs; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
[ ${#need[@]} -eq 0 ] || { apt-get update -q >/dev/null; apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null; }
MIRROR=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
MIRROR=${MIRROR:-http://deb.debian.org/debian}

# The mount point carries this PID: tools/cleanup.sh unmounts what a killed build left.
TMP=$CACHE/lab-os.img.tmp MNT=$(mktemp -d /tmp/rackboot-mnt.$$.XXXXXX) LOOP=
cleanup() {
  for m in dev/pts dev proc sys boot/efi ""; do umount "$MNT/$m" 2>/dev/null || true; done
  if [ -n "$LOOP" ]; then
    partx -d "$LOOP" 2>/dev/null || true
    rm -f "${LOOP}"p[0-9]*
    losetup -d "$LOOP" 2>/dev/null || true
  fi
  rmdir "$MNT" 2>/dev/null || true
}
trap cleanup EXIT
rm -f "$TMP"; truncate -s 1G "$TMP"
sfdisk -q "$TMP" <<PARTS
label: gpt
size=1MiB, type=21686148-6449-6E6F-744E-656564454649, name=bios
size=63MiB, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name=esp
type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, name=root
PARTS
LOOP=$(losetup -f --show "$TMP")
# Partition nodes: the kernel learns the partitions from partx; where nothing (udev) makes
# their device nodes, make them from /proc/partitions.
partx -a "$LOOP" 2>/dev/null || partx -u "$LOOP"
while read -r major minor _ name; do
  case "$name" in "$(basename "$LOOP")"p*) [ -b "/dev/$name" ] || mknod "/dev/$name" b "$major" "$minor" ;; esac
done < /proc/partitions
mkfs.vfat -F 32 -n ESP "${LOOP}p2" >/dev/null
mkfs.ext4 -q -m 1 -L root "${LOOP}p3"
mount "${LOOP}p3" "$MNT"
mkdir -p "$MNT/boot/efi"  # the ESP is filled with mtools below: the build host may lack vfat
echo "os-image: debootstrap from $MIRROR (a minute or two)"
# Bounded: debootstrap's wget waits on a stalled mirror as long as the connection holds.
timeout 20m debootstrap --variant=minbase \
  --include=systemd-sysv,udev,kmod,linux-image-cloud-amd64,grub2-common,grub-pc-bin,grub-efi-amd64-bin,e2fsprogs,iproute2 \
  bookworm "$MNT" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
  { tail -20 "$CACHE/debootstrap.log"; echo "os-image: debootstrap from $MIRROR failed or took over 20 minutes"; exit 1; }

cat > "$MNT/etc/fstab" <<FSTAB
UUID=$(blkid -s UUID -o value "${LOOP}p3") / ext4 errors=remount-ro 0 1
UUID=$(blkid -s UUID -o value "${LOOP}p2") /boot/efi vfat umask=0077,nofail 0 2
FSTAB
echo lab > "$MNT/etc/hostname"
mkdir -p "$MNT/etc/systemd/network" "$MNT/etc/systemd/system/multi-user.target.wants"
printf '[Match]\nName=e*\n\n[Network]\nDHCP=yes\n' > "$MNT/etc/systemd/network/80-dhcp.network"
ln -sf /lib/systemd/system/systemd-networkd.service "$MNT/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
# norandmaps: the lab's VMs are emulated (TCG, QEMU 7.2), whose translations of guest code are
# keyed by the code's virtual address, so with address-space randomization every new process
# translates its libraries afresh (the 1 GiB translation cache filled and was flushed every
# 35-60 s during an install). Without it, the same image booted with a NoCloud seed in 63 s
# against 86 s (userspace 34 s against 51 s). A lab image only: keep randomization on real
# machines' images.
cat > "$MNT/etc/default/grub" <<GRUB
GRUB_DEFAULT=0
GRUB_TIMEOUT=1
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT=""
GRUB_CMDLINE_LINUX="console=tty0 console=ttyS0,115200 norandmaps"
GRUB_TERMINAL="console serial"
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
GRUB_DISABLE_OS_PROBER=true
GRUB
for m in dev dev/pts proc sys; do mount --bind "/$m" "$MNT/$m"; done
# cloud-init, ping (for the lab's VLAN checks) and the tools a declared disk layout boots
# through (mdadm and lvm2 in the initramfs, xfsprogs for extra file systems, cryptsetup and
# Clevis for encrypted ones, unlocked against the appliance's Tang server) through apt in the
# new system (debootstrap's own resolver cannot configure cloud-init's Python dependencies in
# order); no service starts here.
cp /etc/resolv.conf "$MNT/etc/resolv.conf" 2>/dev/null || true
printf '#!/bin/sh\nexit 101\n' > "$MNT/usr/sbin/policy-rc.d"; chmod 0755 "$MNT/usr/sbin/policy-rc.d"
# The new system's apt bounds its downloads as the host's does (tools/apt.conf); the host's
# APT_CONFIG names a file the chroot does not have (left out of its environment below).
cp "$ROOT/tools/apt.conf" "$MNT/etc/apt/apt.conf.d/99rackboot-downloads"
# (debootstrap's own packages are dropped first: at its peak the install needs the room.)
chroot "$MNT" env -u APT_CONFIG apt-get clean
chroot "$MNT" env -u APT_CONFIG apt-get update -q >"$CACHE/apt.log" 2>&1 && chroot "$MNT" env -u APT_CONFIG DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends cloud-init iputils-ping mdadm lvm2 xfsprogs \
    cryptsetup-bin clevis clevis-luks clevis-systemd openssh-client >>"$CACHE/apt.log" 2>&1 \
  || { tail -20 "$CACHE/apt.log"; echo "os-image: apt-get install in the image failed (above)"; exit 1; }
rm -f "$MNT/usr/sbin/policy-rc.d" "$MNT/etc/apt/apt.conf.d/99rackboot-downloads"
# The image is minimal: no locale but C.UTF-8 to generate, and one SSH host key (ed25519, made
# in a blink under emulation), not three (RSA takes seconds). cloud-init's schema wants a key
# type listed (an empty list was "Invalid cloud-config provided" on every new instance), and
# ssh-keygen (openssh-client) to make it.
printf 'locale: C.UTF-8\nssh_genkeytypes: [ed25519]\n' > "$MNT/etc/cloud/cloud.cfg.d/05-lab.cfg"
# cloud-init runs four Python processes at every boot; under TCG each costs 10-20 s, mostly
# imports, so the module lists drop what has no use in the lab: cloud vendors' and
# configuration managers' agents, the console's key print-out, grub-dpkg, the locale (C.UTF-8
# only, above). User-data's common keys (files, users, passwords, SSH, apt, packages, runcmd,
# scripts, phone-home, power state) still work. Measured on this image under TCG (a NoCloud
# seed, an idle host), with e2scrub off as below: userspace 77 s -> 61 s, graphical.target
# reached 66 s -> 41 s after it.
cat > "$MNT/etc/cloud/cloud.cfg.d/06-lab-modules.cfg" <<'MODULES'
cloud_config_modules: [ssh-import-id, set-passwords, apt-configure, ntp, timezone, runcmd]
cloud_final_modules: [package-update-upgrade-install, write-files-deferred, scripts-vendor, scripts-per-once,
  scripts-per-boot, scripts-per-instance, scripts-user, ssh-authkey-fingerprints, install-hotplug,
  phone-home, final-message, power-state-change]
MODULES
# e2scrub checks ext4 on LVM snapshots: 19 s of the one emulated CPU at every boot, for nothing here.
chroot "$MNT" systemctl disable -q e2scrub_reap.service e2scrub_all.timer
chroot "$MNT" grub-install --target=i386-pc "$LOOP" 2>&1 | tail -1
# grub-mkconfig writes root=UUID=... only when /dev/disk/by-uuid has the link udev would make.
uuid=$(blkid -s UUID -o value "${LOOP}p3")
mkdir -p /dev/disk/by-uuid && ln -sf "${LOOP}p3" "/dev/disk/by-uuid/$uuid"
chroot "$MNT" update-grub 2>&1 | tail -1
rm -f "/dev/disk/by-uuid/$uuid"
grep -q "root=UUID=$uuid" "$MNT/boot/grub/grub.cfg" || { echo "os-image: grub.cfg does not name the root by UUID" >&2; exit 1; }
# UEFI, Secure Boot or not: Debian's signed chain at the removable-media path, as on a
# Debian installed with Secure Boot: shim (Microsoft-signed) as BOOTX64.EFI, the signed GRUB
# beside it (shim loads grubx64.efi from its own directory; without fbx64.efi there it does so
# at once), and at the signed GRUB's prefix (/EFI/debian) a config that finds the root file
# system by UUID and reads the same grub.cfg. The kernel is Debian-signed.
signed=$("$(dirname "$0")/signed.sh")
printf 'search --no-floppy --fs-uuid --set=root %s\nset prefix=($root)/boot/grub\nconfigfile $prefix/grub.cfg\n' "$uuid" > "$MNT/tmp/esp-grub.cfg"
export MTOOLS_SKIP_CHECK=1
mmd -i "${LOOP}p2" ::/EFI ::/EFI/BOOT ::/EFI/debian 2>/dev/null
mcopy -i "${LOOP}p2" "$signed/usr/lib/shim/shimx64.efi.signed" ::/EFI/BOOT/BOOTX64.EFI 2>/dev/null
mcopy -i "${LOOP}p2" "$signed/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed" ::/EFI/BOOT/grubx64.efi 2>/dev/null
mcopy -i "${LOOP}p2" "$MNT/tmp/esp-grub.cfg" ::/EFI/debian/grub.cfg 2>/dev/null
for f in BOOT/BOOTX64.EFI BOOT/grubx64.efi debian/grub.cfg; do
  mdir -i "${LOOP}p2" "::/EFI/$f" >/dev/null 2>&1 || { echo "os-image: the ESP has no EFI/$f" >&2; exit 1; }
done
rm -f "$MNT/tmp/esp-grub.cfg"
chroot "$MNT" env -u APT_CONFIG apt-get clean
rm -rf "$MNT"/var/lib/apt/lists/*
# The file systems' free space back to zeros (the loop device punches holes for discards): the
# packages apt downloaded and deleted left it full of their bytes, which a zstd image carried
# and the deploy wrote; zeros compress to nothing and are zeroed on the disk, not written.
fstrim "$MNT" || echo "os-image: fstrim failed: the free space keeps its old bytes" >&2
cleanup; trap - EXIT
mv "$TMP" "$IMG"
cp --sparse=always "$IMG" "$OUT"
echo "os-image: $OUT ($(du -h --apparent-size "$IMG" | cut -f1) raw, $(du -h "$IMG" | cut -f1) used)"
