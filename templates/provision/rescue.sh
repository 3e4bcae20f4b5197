#!/bin/sh
set -u
# rackboot rescue step (rendered per machine; runs in BootOS). Lists what is on the machine's
# disks; with MOUNT=1 every file system found (on a partition, a RAID array or an LVM volume)
# is mounted read-only under /mnt/rescue/<device>. Nothing is written to the disks: RAID
# arrays are assembled read-only, LVM volumes are activated read-only, and journals are not
# replayed (ext4 noload, xfs norecovery). The machine then waits for the operator's jobs.
MOUNT="{{ mount }}"
say() { echo "rescue: $*"; }
say "disks:"
for d in /sys/block/*; do
  n=${d##*/}
  case "$n" in loop*|ram*|zram*|sr*|fd*|md*|dm-*|nbd*) continue ;; esac
  say "  /dev/$n $(( $(cat "$d/size") / 2048 )) MiB $(cat "$d/device/model" 2>/dev/null | tr -s ' ')"
done
if [ "$MOUNT" = 1 ]; then
  mdadm --assemble --scan --readonly >/dev/null 2>&1 || true
  vgs=$(lvm vgs --noheadings -o vg_name 2>/dev/null | tr -d ' ' | sed 's/.*/"&"/' | paste -sd, -)
  if [ -n "$vgs" ]; then
    lvm vgchange -ay --config "activation { read_only_volume_list = [ $vgs ] }" >/dev/null 2>&1 || true
  fi
fi
# Every block device (BootOS's busybox has no blkid): with MOUNT=1, each is tried as the file
# systems BootOS can mount, read-only; the listing names what mounted.
mounted() { grep -q " $1 " /proc/mounts; }
for n in $(awk 'NR > 2 {print $4}' /proc/partitions); do
  case "$n" in loop*|ram*|zram*|sr*|fd*|nbd*) continue ;; esac
  dev=/dev/$n
  [ "$MOUNT" = 1 ] || continue
  # An LVM volume by its name (rackboot-root), not its dm-N.
  name=$n
  [ -r "/sys/block/$n/dm/name" ] && name=$(cat "/sys/block/$n/dm/name")
  at=/mnt/rescue/$name
  mkdir -p "$at"
  mounted "$at" && continue
  for t in ext4 xfs vfat; do
    case "$t" in ext4) opts=ro,noload ;; xfs) opts=ro,norecovery ;; *) opts=ro ;; esac
    if mount -t "$t" -o "$opts" "$dev" "$at" 2>/dev/null; then
      say "  $dev: $t, mounted read-only at $at"
      break
    fi
  done
  mounted "$at" || rmdir "$at" 2>/dev/null
done
say "ready: run jobs on this machine; return it to its disk when done"
