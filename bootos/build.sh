#!/usr/bin/env bash
# Builds BootOS, the discovery ramdisk, from Debian packages only (apt-get download + extract;
# nothing is installed on the build host):
#
#   OUT/vmlinuz      the kernel: linux-image-cloud-amd64 (virtio only, for VMs and the lab) or,
#                    with --kernel generic, linux-image-amd64 (real hardware); with --arch arm64
#                    the arm64 ones (linux-image-cloud-arm64, linux-image-arm64)
#   OUT/initrd.img   busybox, the static rackboot-agent, dmidecode, lspci, ethtool, ipmitool,
#                    mdadm, sfdisk, e2fsck, resize2fs and mke2fs, lvm and mkfs.xfs (disk layouts),
#                    hdparm (ATA secure erase)
#                    with their libraries, the kernel modules for the NICs and disks it can meet
#                    (and everything they depend on), an /init and a udhcpc script
#
# The /init loads drivers for the hardware present (by modalias), prints a line on the console,
# and runs the agent (restarting it if it ever exits). The agent brings the network up, enrolls
# with the appliance named by rackboot.url= on the kernel command line and waits for jobs.
# Downloads are cached in target/bootos-cache; a second run only rebuilds what changed.
#
# --arch arm64 builds BootOS for arm64 machines on this amd64 host: the arm64 packages (apt
# reads arm64 lists of its own, see bootos/debs.sh; nothing about the host's apt changes) and
# the agent cross-built (aarch64-linux-gnu-gcc and the aarch64-unknown-linux-gnu Rust target,
# which tools/setup.sh installs).
#
#   bootos/build.sh [--arch amd64|arm64] [--kernel cloud|generic] [--packages-only] OUT
#
# --packages-only stops after the downloads (vm-lab/run.sh fetches them while rackboot compiles).
set -euo pipefail
KERNEL=cloud PACKAGES_ONLY=0 ARCH=amd64
while [ $# -gt 1 ]; do
  case "$1" in
    --arch) ARCH=$2; shift 2 ;;
    --kernel) KERNEL=$2; shift 2 ;;
    --packages-only) PACKAGES_ONLY=1; shift ;;
    *) break ;;
  esac
done
OUT=${1:?usage: $0 [--arch amd64|arm64] [--kernel cloud|generic] [--packages-only] OUT}
case "$KERNEL" in
  cloud) META=linux-image-cloud-$ARCH ;;
  generic) META=linux-image-$ARCH ;;
  *) echo "--kernel must be cloud or generic" >&2; exit 2 ;;
esac
case "$ARCH" in
  amd64) RUST_TARGET=x86_64-unknown-linux-gnu ;;
  arm64) RUST_TARGET=aarch64-unknown-linux-gnu ;;
  *) echo "--arch must be amd64 or arm64" >&2; exit 2 ;;
esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
CACHE=${RACKBOOT_BOOTOS_CACHE:-$ROOT/target/bootos-cache}/$KERNEL
[ "$ARCH" = amd64 ] || CACHE=$CACHE-$ARCH
export DEBS_ARCH=$ARCH DEBS_APT_DIR=${RACKBOOT_BOOTOS_CACHE:-$ROOT/target/bootos-cache}/apt-$ARCH
mkdir -p "$OUT" "$CACHE"
# One build at a time per cache: tests build BootOS from parallel threads, and a second build
# must not wipe the downloads the first is making (it waits, then finds them cached).
exec 9>"$CACHE/.lock"
flock 9
OUT=$(cd "$OUT" && pwd)
TOOLS="busybox-static dmidecode ethtool ipmitool pciutils pci.ids mdadm fdisk e2fsprogs lvm2 xfsprogs hdparm"

# 1. Packages: the kernel, the tools, and every library they need (recursively), extracted.
say() { echo "bootos: $*"; }
# The cache holds what this list names: a changed list downloads again.
source "$ROOT/bootos/debs.sh"
if [ "$(cat "$CACHE/staging.done" 2>/dev/null)" = "$META $TOOLS" ]; then
  say "1/4 Debian packages: cached in $CACHE"
else
  say "1/4 Debian packages: $META, $TOOLS and their libraries (apt-get download, once; cached in $CACHE)"
  debs_apt_init
  kpkg=$(apt-cache "${DEBS_APT[@]}" depends "$META" 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}' || true)
  if [ -z "$kpkg" ]; then
    apt-get "${DEBS_APT[@]}" update -q >/dev/null
    kpkg=$(apt-cache "${DEBS_APT[@]}" depends "$META" | awk '/Depends: linux-image-/ {print $2; exit}')
  fi
  debs_stage "$CACHE" "$META $TOOLS" "$kpkg" $TOOLS
  echo "$kpkg" > "$CACHE/kernel-package"
fi
[ $PACKAGES_ONLY = 1 ] && exit 0
S=$CACHE/staging
BB=$S/bin/busybox
# What runs here (depmod) is the host's own busybox: for another architecture, the host
# architecture's busybox-static, unpacked beside the staging tree.
HOSTBB=$BB
if [ "$ARCH" != amd64 ]; then
  HOSTBB=$CACHE/host/bin/busybox
  if [ ! -x "$HOSTBB" ]; then
    rm -rf "$CACHE/host" "$CACHE/host-deb"; mkdir -p "$CACHE/host-deb"; chmod 777 "$CACHE/host-deb"
    (cd "$CACHE/host-deb" && apt-get download -q busybox-static >/dev/null) && dpkg-deb -x "$CACHE"/host-deb/*.deb "$CACHE/host"
  fi
fi
KVER=$(ls "$S/lib/modules" | head -1)

# 2. The agent, static (no toolchain beyond the host's: glibc's static libs; see LAB-NOTES).
say "2/4 rackboot-agent, static release build (cargo shows its progress; a first build takes minutes)"
# Run from a test, this script inherits the variables cargo sets for the test's crate; ring's
# build script watches CARGO_MANIFEST_DIR, so they would rebuild the agent's TLS stack on every
# switch between a test and a shell. Unset them: every caller shares one build.
for v in $(compgen -e | grep -E '^CARGO_(PKG_|MANIFEST_|BIN_EXE_|CRATE_NAME|PRIMARY_PACKAGE|TARGET_TMPDIR)'); do unset "$v"; done
if [ "$ARCH" = arm64 ]; then
  # The C parts (ring, liblzma, zstd) and the link: Debian's cross gcc and its static glibc.
  command -v aarch64-linux-gnu-gcc >/dev/null ||
    { echo "build.sh: aarch64-linux-gnu-gcc is missing (tools/setup.sh installs gcc-aarch64-linux-gnu)" >&2; exit 1; }
  rustup target list --installed 2>/dev/null | grep -qx "$RUST_TARGET" || rustup target add "$RUST_TARGET"
  export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
  export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
fi
(cd "$ROOT" && RUSTFLAGS='-C target-feature=+crt-static' CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=symbols cargo build --release --locked \
  -p rackboot-agent --bin rackboot-agent --target "$RUST_TARGET")
AGENT=${CARGO_TARGET_DIR:-$ROOT/target}/$RUST_TARGET/release/rackboot-agent

# 3. The tree.
say "3/4 initramfs tree: tools, libraries, kernel modules, /init"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,run,tmp,lib/modules,usr/share/misc,var/lib}
cp "$BB" "$T/bin/busybox"
cp "$AGENT" "$T/bin/rackboot-agent"
cp "$S/usr/share/misc/pci.ids" "$T/usr/share/misc/" 2>/dev/null || true

# Tools and their shared libraries, resolved inside the staging tree (never the host's).
for tool in dmidecode ethtool ipmitool lspci mdadm sfdisk resize2fs e2fsck mke2fs lvm mkfs.xfs hdparm; do
  found=
  for dir in /usr/sbin /usr/bin /sbin /bin; do
    if [ -f "$S$dir/$tool" ]; then found=$dir/$tool; break; fi
  done
  [ -n "$found" ] || { echo "build.sh: $tool not found in the extracted packages" >&2; exit 1; }
  debs_copy "$S" "$T" "$found"
done
# mke2fs -t ext4 takes the file system types from its configuration.
cp "$S/etc/mke2fs.conf" "$T/etc/"
# LVM without udev: lvm makes its own /dev nodes and scans /dev itself.
mkdir -p "$T/etc/lvm"
cat > "$T/etc/lvm/lvm.conf" <<'LVM'
devices { obtain_device_list_from_udev = 0 }
activation { udev_sync = 0 udev_rules = 0 monitoring = 0 }
LVM
if [ "$ARCH" = arm64 ]; then
  cp -L "$S/lib/ld-linux-aarch64.so.1" "$T/lib/" 2>/dev/null || cp -L "$S/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1" "$T/lib/"
else
  mkdir -p "$T/lib64"
  cp -L "$S/lib64/ld-linux-x86-64.so.2" "$T/lib64/" 2>/dev/null || cp -L "$S/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$T/lib64/"
fi

# Kernel modules: the drivers wanted, plus everything they depend on (busybox depmod computes
# the dependencies on the full module tree, then again on the subset that goes in).
"$HOSTBB" depmod -b "$S" "$KVER"
M=lib/modules/$KVER
# An encrypted file system of a disk layout is made in BootOS: dm-crypt (in drivers/md) with
# AES-XTS, and the kernel crypto API cryptsetup reaches its key slots through.
CRYPTO="kernel/crypto/xts.ko kernel/crypto/ecb.ko kernel/crypto/af_alg.ko kernel/crypto/algif_skcipher.ko"
# Hardware random number generators (virtio-rng in VMs): the kernel's random pool is ready as
# soon as one is loaded, where a CPU without RDRAND left the agent's first TLS handshake waiting
# for it (about a second under TCG).
RNG=kernel/drivers/char/hw_random
# The ACPI power button and the input events it sends (busybox acpid reads them): a BMC's
# graceful shutdown powers BootOS off at once instead of waiting out its soft-off timeout.
BUTTON="kernel/drivers/acpi/button.ko kernel/drivers/input/evdev.ko"
want() {
  case "$KERNEL" in
    cloud) (cd "$S/$M" && find kernel/drivers/virtio kernel/drivers/net/virtio_net.ko kernel/drivers/block/virtio_blk.ko \
      kernel/drivers/scsi/virtio_scsi.ko kernel/drivers/scsi/sd_mod.ko kernel/drivers/md kernel/drivers/nvme \
      kernel/drivers/char/ipmi $RNG $BUTTON kernel/fs/efivarfs kernel/fs/xfs $CRYPTO -name '*.ko' 2>/dev/null || true) ;;
    generic) (cd "$S/$M" && find kernel/drivers/virtio kernel/drivers/net/ethernet kernel/drivers/net/virtio_net.ko \
      kernel/drivers/block kernel/drivers/scsi kernel/drivers/ata kernel/drivers/nvme kernel/drivers/md \
      kernel/drivers/char/ipmi kernel/drivers/usb/storage $BUTTON kernel/fs/efivarfs kernel/fs/xfs $CRYPTO -name '*.ko' 2>/dev/null || true) ;;
  esac
}
want | while read -r m; do
  echo "$m"
  awk -v m="$m:" '$1 == m { for (i = 2; i <= NF; i++) print $i }' "$S/$M/modules.dep"
done | sort -u | while read -r m; do
  mkdir -p "$T/$M/$(dirname "$m")"
  cp "$S/$M/$m" "$T/$M/$m"
done
cp "$S/$M"/modules.builtin* "$S/$M/modules.order" "$T/$M/" 2>/dev/null || true
"$HOSTBB" depmod -b "$T" "$KVER"

cat > "$T/etc/udhcpc.script" <<'SCRIPT'
#!/bin/sh
# busybox udhcpc hook: configure the interface, default route, resolver and hostname.
case "$1" in
  deconfig) ip addr flush dev "$interface"; ip link set "$interface" up ;;
  bound|renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    if [ -n "$router" ]; then
      ip route del default 2>/dev/null
      for r in $router; do ip route add default via "$r" dev "$interface" && break; done
    fi
    : > /etc/resolv.conf
    [ -n "$domain" ] && echo "search $domain" >> /etc/resolv.conf
    for d in $dns; do echo "nameserver $d" >> /etc/resolv.conf; done
    [ -n "$hostname" ] && hostname "$hostname"
    ;;
esac
exit 0
SCRIPT
chmod +x "$T/etc/udhcpc.script"

# busybox acpid runs /etc/acpi/PWRF/00000080 when the power button is pressed (a BMC's graceful
# shutdown): what is in flight goes to the disks, then the machine powers off. (No init to signal:
# /init is a shell loop.)
mkdir -p "$T/etc/acpi/PWRF"
cat > "$T/etc/acpi/PWRF/00000080" <<'POWER'
#!/bin/sh
echo "rackboot-bootos: the power button: powering off" > /dev/console
sync
poweroff -f
POWER
chmod +x "$T/etc/acpi/PWRF/00000080"

cat > "$T/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs run /run
mount -t tmpfs tmp /tmp
# UEFI variables (the agent reports Secure Boot from them).
if [ -d /sys/firmware/efi/efivars ]; then
  modprobe efivarfs 2>/dev/null
  mount -t efivarfs -o ro efivarfs /sys/firmware/efi/efivars 2>/dev/null
fi
# busybox's applets live in /bin: point the kernel's module autoloader (RAID personalities,
# file systems, ...) at its modprobe.
echo /bin/modprobe > /proc/sys/kernel/modprobe
say() { echo "rackboot-bootos: $*" > /dev/console; }
# Drivers for the hardware present, by modalias; a few passes, because loading a bus driver
# (virtio_pci) makes the devices on that bus (virtio_net, virtio_blk) appear.
for pass in 1 2 3; do
  modprobe -q -a $(cat /sys/bus/*/devices/*/modalias 2>/dev/null | sort -u) 2>/dev/null
done
# The IPMI driver only where the firmware announces a BMC (SMBIOS type 38).
[ -e /sys/firmware/dmi/entries/38-0 ] && modprobe -q -a ipmi_si ipmi_devintf
# The power button (its driver came with the modaliases where the firmware has one).
modprobe -q evdev 2>/dev/null
acpid -c /etc/acpi -l /run/acpid.log
mac=$(sed -n 's/.*rackboot.mac=\([^ ]*\).*/\1/p' /proc/cmdline)
hostname bootos
say "up mac=$mac kernel=$(uname -r) nics=$(ls /sys/class/net | tr '\n' ' ')"
while true; do
  /bin/rackboot-agent 2>/dev/console
  say "agent exited ($?); restarting"
  sleep 2
done
INIT
chmod +x "$T/init"

say "4/4 compressing the initrd (zstd -15)"
(cd "$T" && find . | cpio -o -H newc --quiet | zstd -q -15 -T0) > "$OUT/initrd.img.tmp"
mv "$OUT/initrd.img.tmp" "$OUT/initrd.img"
cp "$(ls "$S"/boot/vmlinuz-* | head -1)" "$OUT/vmlinuz"
# The agent and its unit also go out on their own: installer answer files fetch them from
# /boot/files/bootos/ for the systems they install.
cp "$AGENT" "$OUT/rackboot-agent"
cp "$ROOT/bootos/rackboot-agent.service" "$OUT/rackboot-agent.service"
size() { du -k "$1" | awk '{printf "%6.1f MB", $1/1024}'; }
echo "BootOS ($ARCH, $KERNEL kernel $KVER):"
echo "  vmlinuz            $(size "$OUT/vmlinuz")"
echo "  initrd.img         $(size "$OUT/initrd.img")  (zstd; unpacked $(du -sk "$T" | awk '{printf "%.1f MB", $1/1024}'))"
echo "    rackboot-agent   $(size "$T/bin/rackboot-agent")"
echo "    kernel modules   $(du -sk "$T/lib/modules" | awk '{printf "%6.1f MB", $1/1024}') ($(find "$T/lib/modules" -name '*.ko' | wc -l) modules)"
echo "    tools + libs     $(du -sck "$T/usr" "$T/sbin" "$T/lib/$DEBS_TRIPLET" "$T/lib64" "$T/lib/ld-linux"* 2>/dev/null | tail -1 | awk '{printf "%6.1f MB", $1/1024}')"
