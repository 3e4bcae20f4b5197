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
# Every block device with a file system (busybox blkid prints TYPE="...").
blkid 2>/dev/null | while IFS= read -r line; do
  dev=${line%%:*}
  type=$(echo "$line" | sed -n 's/.* TYPE="\([^"]*\)".*/\1/p')
  case "$type" in ""|swap|linux_raid_member|LVM2_member) say "  $dev ${type:-unknown}"; continue ;; esac
  if [ "$MOUNT" != 1 ]; then
    say "  $dev $type"
    continue
  fi
  name=$(echo "${dev#/dev/}" | tr / _)
  # An LVM volume by its name (rackboot-root), not its dm-N.
  [ -r "/sys/block/$name/dm/name" ] && name=$(cat "/sys/block/$name/dm/name")
  at=/mnt/rescue/$name
  opts=ro
  case "$type" in ext3|ext4) opts=ro,noload ;; xfs) opts=ro,norecovery ;; esac
  mkdir -p "$at"
  if mountpoint -q "$at" || mount -t "$type" -o "$opts" "$dev" "$at" 2>/dev/null; then
    say "  $dev $type mounted read-only at $at"
  else
    rmdir "$at" 2>/dev/null
    say "  $dev $type (not mounted: this BootOS cannot mount $type)"
  fi
done
say "ready: run jobs on this machine; return it to its disk when done"
