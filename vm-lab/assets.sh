#!/usr/bin/env bash
# Builds the lab's boot directory from Debian packages only (cached; run again for nothing):
#   OUT/undionly.kpxe, ipxe.efi, snponly.efi     from the ipxe package
#   OUT/bootos/vmlinuz                            from linux-image-cloud-amd64 (extracted, not installed)
#   OUT/bootos/initrd.img                         busybox-static + an /init that prints a marker
# The marker stands in for BootOS until the real image builder (bootos/) exists.
#
#   vm-lab/assets.sh OUT
set -euo pipefail
OUT=${1:?usage: $0 OUT}
CACHE=${RACKBOOT_LAB_CACHE:-$(dirname "$0")/../target/vm-lab-cache}
mkdir -p "$OUT/bootos" "$CACHE"
CACHE=$(cd "$CACHE" && pwd)

if [ ! -f "$CACHE/vmlinuz" ] || [ ! -f "$CACHE/busybox" ]; then
  work=$(mktemp -d); chmod 777 "$work"; trap 'rm -rf "$work"' EXIT
  kpkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
  if [ -z "$kpkg" ]; then
    apt-get update -q >/dev/null
    kpkg=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
  fi
  (cd "$work" && apt-get download -q "$kpkg" busybox-static >/dev/null)
  for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
  cp "$(ls "$work"/root/boot/vmlinuz-* | head -1)" "$CACHE/vmlinuz"
  cp "$work/root/bin/busybox" "$CACHE/busybox"
fi

if [ ! -f "$CACHE/initrd.img" ] || [ "$0" -nt "$CACHE/initrd.img" ]; then
  tree=$(mktemp -d)
  mkdir -p "$tree"/{bin,proc,sys,dev}
  cp "$CACHE/busybox" "$tree/bin/busybox"
  cat > "$tree/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
/bin/busybox mount -t devtmpfs dev /dev
mac=$(/bin/busybox sed -n 's/.*rackboot.mac=\([^ ]*\).*/\1/p' /proc/cmdline)
for tty in /dev/ttyS0 /dev/console; do
  echo "RACKBOOT-LAB-MARKER booted mac=$mac" > $tty 2>/dev/null
done
/bin/busybox sleep 1
/bin/busybox poweroff -f
INIT
  chmod +x "$tree/init"
  (cd "$tree" && find . | cpio -o -H newc --quiet | gzip -1) > "$CACHE/initrd.img"
  rm -rf "$tree"
fi

cp "$CACHE/vmlinuz" "$CACHE/initrd.img" "$OUT/bootos/"
for f in undionly.kpxe ipxe.efi snponly.efi; do
  [ -f "/usr/lib/ipxe/$f" ] && cp "/usr/lib/ipxe/$f" "$OUT/"
done
ls -l "$OUT" "$OUT/bootos" | awk 'NR>1 && $5 {print "  " $NF ": " $5 " bytes"}'
