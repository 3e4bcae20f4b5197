#!/bin/sh
set -u
# rackboot layout step (rendered per machine; runs in BootOS before the identity step, once the
# install step wrote the image to DISK). The image's root file system is copied, block for
# block, into the task's declared layout, and then grown to it:
# - mirrored: MIRROR gets the image's partition table (BIOS boot partition and ESP as they
#   are) and a copy of the root in the root's place, DISK's root partition becomes a Linux RAID
#   member, a RAID 1 (mdadm, metadata 1.2) starts degraded on it, the root goes in from
#   MIRROR's copy, and then MIRROR's root partition becomes a RAID member too and joins. So the
#   disk the machine boots from holds the whole mirror while the other half syncs: GRUB reads
#   a RAID 1 from its first member it can see and knows nothing of a half still recovering, and
#   a UEFI firmware may show it the boot disk alone;
# - on LVM: volume group rackboot (on the mirror, or on a new partition after the image's,
#   which the image's old root partition then joins), logical volume root, and one logical
#   volume per extra file system, each made fresh and mounted by UUID through /etc/fstab.
# The root keeps its UUID, so the image's fstab and GRUB's search for it still hold; GRUB is
# installed on each disk for BIOS on a machine that booted BootOS by BIOS (the ESP's signed shim
# and GRUB read LVM and RAID for UEFI).
# An encrypted file system is LUKS2 on its volume, bound with Clevis to the appliance's Tang
# server (from the advertisement below: no trust question, no network needed to bind) and to
# nothing else: the random key it was made with lives in BootOS's memory and is dropped, so it
# unlocks (at boot, by clevis-luks-askpass) only while the appliance answers.
# The image must have mdadm (mirrored) and lvm2 (LVM) installed, so its initramfs finds the
# root; cryptsetup and clevis (clevis-luks, clevis-systemd) for an encrypted file system.
# A retry resumes: once the root partitions are RAID members (both disks) or LVM volumes the
# copy is done, and every later part checks what is there first; a retry after DISK became the
# mirror's first half and before the copy into it was done copies again from MIRROR's copy.
layout() {
  DISK="{{ disk }}"
  MIRROR="{{ mirror }}"
  LVM="{{ lvm }}"
  # mount point, file system, MiB, logical volume, "1" when encrypted; one per line
  FILESYSTEMS="{% for fs in filesystems %}{{ fs.mount }} {{ fs.fstype }} {{ fs.size_mib }} {{ fs.volume }}{% if fs.encrypted %} 1{% endif %}
{% endfor %}"
  TANG_URL="{{ tang_url }}"
  TANG_ADV='{{ tang_adv }}'
  VG="{{ volume_group }}" MD="{{ mirror_device }}" R=/mnt/layout
  RAID_TYPE=A19D880F-05FC-4D3B-A006-743F0F84911E LVM_TYPE=E6D6D379-F507-44C2-A23C-238F2A3DF928
  say() { echo "layout: [$(cut -d' ' -f1 /proc/uptime)] $*"; }
  fail() { echo "layout: $*" >&2; exit 1; }
  part() { case "$1" in *[0-9]) echo "${1}p$2" ;; *) echo "$1$2" ;; esac; }
  sectors() { cat "/sys/class/block/$(basename "$1")/size"; }
  ptype() { sfdisk --part-type "$1" "$2" 2>/dev/null | tr a-z A-Z; }
  # An ext4 or XFS file system's UUID, from its superblock (BootOS has no blkid); empty: none.
  uuid() {
    if [ "$(od -An -tx1 -j1080 -N2 "$1" 2>/dev/null | tr -d ' \n')" = 53ef ]; then off=1128
    elif [ "$(od -An -c -N4 "$1" 2>/dev/null | tr -d ' \n')" = XFSB ]; then off=32
    else return 0; fi
    od -An -tx1 -j$off -N16 "$1" | tr -d ' \n' | sed 's/\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)/\1-\2-\3-\4-/'
  }
  # (partx, where there is one, adds what a re-read left out: loop devices in a container)
  reread() { blockdev --rereadpt "$1" 2>/dev/null || true; partx -a "$1" 2>/dev/null || true; sleep 1; }
  zap() { dd if=/dev/zero of="$1" bs=1M count=4 conv=fsync 2>/dev/null || true; }

  for d in "$DISK" $MIRROR; do [ -b "$d" ] || fail "$d is not a block device"; done
  reread "$DISK"
  [ "$(sfdisk --dump "$DISK" 2>/dev/null | sed -n 's/^label: //p')" = gpt ] \
    || fail "the image on $DISK has no GPT partition table: a layout needs one"
  # The image's partitions, from sysfs; its root is the largest. Once the copy is done, the
  # root's place is a RAID member on both disks (mirrored) or the first of two LVM volumes (a
  # new partition of an earlier try that did not get that far is dropped). A RAID member on
  # DISK beside a plain partition in MIRROR's root place: the copy into the mirror was cut
  # short, and MIRROR's partition holds the image's root (staged there before DISK changed).
  DEV=$(basename "$DISK") PARTS="" BEST=0 BIGN="" RAIDN="" LVMS=""
  for p in /sys/block/"$DEV"/"$DEV"*; do
    [ -e "$p/partition" ] || continue
    n=$(cat "$p/partition")
    case "$(ptype "$DISK" "$n")" in
      "$RAID_TYPE") RAIDN=$n ;;
      "$LVM_TYPE") LVMS="$LVMS $n" ;;
      *) PARTS="$PARTS $n"; if [ "$(cat "$p/size")" -gt "$BEST" ]; then BEST=$(cat "$p/size"); BIGN=$n; fi ;;
    esac
  done
  set -- $LVMS
  DONE="" STAGED="" ROOTN=$BIGN
  if [ -n "$MIRROR" ] && [ -n "$RAIDN" ]; then
    ROOTN=$RAIDN
    case "$(ptype "$MIRROR" "$RAIDN")" in
      "$RAID_TYPE") DONE=1 ;;
      "") fail "$(part "$DISK" "$RAIDN") is a RAID member but $MIRROR has no copy of the root: write the image again" ;;
      *) STAGED=1 ;;
    esac
  fi
  if [ -z "$MIRROR" ] && [ $# -ge 2 ]; then DONE=1 ROOTN=$1; fi
  [ -n "$ROOTN" ] || fail "no partition on $DISK"
  SRC=$(part "$DISK" "$ROOTN")
  # The mirror's halves: the first on DISK (the whole root), the second on MIRROR (it joins).
  HALF=$SRC JOIN=""
  [ -n "$MIRROR" ] && JOIN=$(part "$MIRROR" "$ROOTN")
  vgchange() { lvm vgchange -q "$@" "$VG" >/dev/null 2>&1 || true; }

  if [ -n "$DONE" ]; then
    say "resuming: $SRC holds the layout already"
    if [ -n "$MIRROR" ]; then
      mdadm --detail "$MD" >/dev/null 2>&1 || mdadm --assemble --run "$MD" "$HALF" "$JOIN" 2>/dev/null \
        || mdadm --assemble --run "$MD" "$HALF" || fail "cannot assemble the mirror"
    fi
    [ "$LVM" = 1 ] && { lvm vgscan --mknodes >/dev/null 2>&1; vgchange -ay; }
  else
    # A fresh start (or a retry before the copy was done): nothing of an earlier try is kept.
    vgchange -an
    mdadm --stop "$MD" >/dev/null 2>&1 || true
    for n in $PARTS; do [ "$n" -gt "$ROOTN" ] && fail "$SRC is not the image's last partition"; done
    start=$(cat "/sys/block/$DEV/$(basename "$SRC")/start")
    # (A retry whose copy was cut short finds the root staged on MIRROR, and DISK's half made.)
    if [ -n "$STAGED" ]; then
      SRC=$JOIN RAIDSIZE=$(sectors "$HALF")
      say "retrying the copy from the root staged on $SRC"
    fi
    e2fsck -fy "$SRC" >/dev/null 2>&1 || [ $? -le 1 ] || fail "the image's root file system on $SRC does not check clean"
    src_bytes=$(( $(sectors "$SRC") * 512 ))
    # The image's own partitions before the root, as they are.
    table() {
      echo "label: gpt"
      for n in $PARTS; do
        [ "$n" = "$ROOTN" ] && continue
        p=/sys/block/$DEV/$(basename "$(part "$DISK" "$n")")
        echo "$(part "$1" "$n") : start=$(cat "$p/start"), size=$(cat "$p/size"), type=$(ptype "$DISK" "$n")"
      done
    }
    if [ -n "$MIRROR" ] && [ -z "$STAGED" ]; then
      # The mirror's half on each disk: the same size on both (the smaller disk's), GPT's backup
      # header and a little slack left at the end.
      end=$(sectors "$DISK"); [ "$(sectors "$MIRROR")" -lt "$end" ] && end=$(sectors "$MIRROR")
      RAIDSIZE=$(( (end - start - 4096) / 2048 * 2048 ))
      [ "$RAIDSIZE" -ge $((src_bytes / 512)) ] || fail "$MIRROR is too small for the root ($((src_bytes >> 20)) MiB)"
      # MIRROR: the image's other partitions as they are, and the root staged in its place (a
      # plain partition of the root's size and type: the mark of a copy not yet in the mirror).
      mdadm --zero-superblock "$JOIN" >/dev/null 2>&1 || true
      { table "$MIRROR"; echo "$JOIN : start=$start, size=$((src_bytes / 512)), type=$(ptype "$DISK" "$ROOTN")"; } \
        | sfdisk -q --wipe always --wipe-partitions never --no-reread "$MIRROR" >/dev/null || fail "cannot partition $MIRROR"
      reread "$MIRROR"
      for n in $PARTS; do
        [ "$n" = "$ROOTN" ] || dd if="$(part "$DISK" "$n")" of="$(part "$MIRROR" "$n")" bs=1M conv=fsync 2>/dev/null
      done
      say "staging the root file system $SRC ($((src_bytes >> 20)) MiB) on $JOIN"
      dd if="$SRC" of="$JOIN" bs=4M conv=fsync 2>/dev/null || fail "copying $SRC to $JOIN"
      # The image's root is whole on MIRROR: DISK's root partition becomes the first half.
      { table "$DISK"; echo "$HALF : start=$start, size=$RAIDSIZE, type=$RAID_TYPE"; } \
        | sfdisk -q --wipe always --wipe-partitions never --no-reread "$DISK" >/dev/null || fail "cannot partition $DISK"
      reread "$DISK"
      SRC=$JOIN
    fi
    if [ -n "$MIRROR" ]; then
      zap "$HALF"
      # Named by its number for any host: the installed system's initramfs, which has no
      # configuration of it, assembles it as the same device.
      mdadm --create "$MD" --run --level=1 --metadata=1.2 --raid-devices=2 --homehost=any --name="${MD#/dev/md}" \
        "$HALF" missing >/dev/null 2>&1 || fail "mdadm cannot create the mirror on $DISK"
      TARGET=$MD
      say "RAID 1 $MD started on $HALF ($((RAIDSIZE / 2048)) MiB); $JOIN joins it after the copy"
    else
      # A new partition after the image's takes the volume group first.
      next=$(( (start + src_bytes / 512 + 2047) / 2048 * 2048 ))
      NEWN=$((ROOTN + 1))
      { table "$DISK"; echo "$SRC : start=$start, size=$((src_bytes / 512)), type=$(ptype "$DISK" "$ROOTN")"; echo "$(part "$DISK" "$NEWN") : start=$next, type=$LVM_TYPE"; } \
        | sfdisk -q --wipe-partitions never --no-reread "$DISK" >/dev/null || fail "cannot add a partition to $DISK"
      reread "$DISK"
      TARGET=$(part "$DISK" "$NEWN")
      zap "$TARGET"
    fi
    if [ "$LVM" = 1 ]; then
      lvm pvcreate -q -ff -y "$TARGET" >/dev/null && lvm vgcreate -q "$VG" "$TARGET" >/dev/null \
        || fail "cannot make volume group $VG on $TARGET"
      lvm lvcreate -q -y -Wy -Zy -n root -L "${src_bytes}b" "$VG" >/dev/null || fail "no room for the root ($((src_bytes >> 20)) MiB) on $TARGET"
      ROOTDEV=/dev/$VG/root
    else
      ROOTDEV=$TARGET
    fi
    say "copying the root file system $SRC ($((src_bytes >> 20)) MiB) to $ROOTDEV"
    dd if="$SRC" of="$ROOTDEV" bs=4M conv=fsync 2>/dev/null || fail "copying $SRC to $ROOTDEV"
    # The copy is whole: from here on the root partitions (MIRROR's a RAID member too, at its
    # half's size) mark the layout as done.
    if [ -n "$MIRROR" ]; then
      { table "$MIRROR"; echo "$JOIN : start=$start, size=$RAIDSIZE, type=$RAID_TYPE"; } \
        | sfdisk -q --wipe always --wipe-partitions never --no-reread "$MIRROR" >/dev/null || fail "cannot partition $MIRROR"
      reread "$MIRROR"
    else
      sfdisk -q --no-reread --part-type "$DISK" "$ROOTN" "$LVM_TYPE" >/dev/null 2>&1 || fail "cannot retype $SRC"
      reread "$DISK"
    fi
  fi

  # The mirror's second half, the old root as more room for the volume group.
  if [ -n "$MIRROR" ]; then
    if ! mdadm --detail "$MD" 2>/dev/null | grep -q "$JOIN\$"; then
      mdadm --zero-superblock "$JOIN" >/dev/null 2>&1 || true
      zap "$JOIN"
      mdadm --add "$MD" "$JOIN" >/dev/null || fail "cannot add $JOIN to $MD"
      say "$JOIN joined $MD: it syncs in the installed system"
    fi
    # Its recovery waits for the installed system (whose md resumes it when it assembles the
    # mirror): beside the steps below it held their writes back for minutes on a slow machine.
    # DISK's half has every block meanwhile.
    echo frozen > "/sys/block/${MD#/dev/}/md/sync_action" 2>/dev/null || true
  elif [ "$LVM" = 1 ] && ! lvm pvs --noheadings -o pv_name 2>/dev/null | grep -q "$SRC\$"; then
    zap "$SRC"
    lvm pvcreate -q -ff -y "$SRC" >/dev/null && lvm vgextend -q "$VG" "$SRC" >/dev/null || fail "cannot add $SRC to $VG"
  fi
  ROOTDEV=$MD
  [ "$LVM" = 1 ] && ROOTDEV=/dev/$VG/root
  [ -b "$ROOTDEV" ] || fail "$ROOTDEV is missing"

  # A new file system on $2 (its type $1).
  make_fs() {
    id=$(cat /proc/sys/kernel/random/uuid)
    case "$1" in
      # e2fsprogs' mke2fs by its path: busybox's sh runs its own applet of that name first.
      ext4) out=$(/sbin/mke2fs -q -F -t ext4 -U "$id" "$2" 2>&1) ;;
      xfs) out=$(mkfs.xfs -q -f -m uuid="$id" "$2" 2>&1) ;;
    esac || fail "mkfs.$1 on $2: $out"
  }
  # Extra file systems (an encrypted one's once the installed system's tools are at hand),
  # then the root grows to what is left.
  echo "$FILESYSTEMS" | while read -r mount fstype mib vol enc; do
    [ -n "$mount" ] || continue
    if ! lvm lvs "$VG/$vol" >/dev/null 2>&1; then
      lvm lvcreate -q -y -Wy -Zy -n "$vol" -L "${mib}m" "$VG" >/dev/null || fail "no room for $mount ($mib MiB) in $VG"
    fi
    if [ "$enc" != 1 ] && [ -z "$(uuid "/dev/$VG/$vol")" ]; then
      make_fs "$fstype" "/dev/$VG/$vol"
      say "$mount: $fstype on $VG/$vol ($mib MiB)"
    fi
  done || exit 1
  if [ "$LVM" = 1 ]; then
    lvm lvextend -q -l +100%FREE "$VG/root" >/dev/null 2>&1 || true
  fi
  e2fsck -fy "$ROOTDEV" >/dev/null 2>&1 || [ $? -le 1 ] || fail "the root file system on $ROOTDEV does not check clean"
  resize2fs "$ROOTDEV" >/dev/null 2>&1 || fail "cannot grow the root file system on $ROOTDEV"
  say "root: $ROOTDEV, $(( $(blockdev --getsize64 "$ROOTDEV") >> 20 )) MiB"

  # The installed system: its fstab, mdadm's configuration, its initramfs and GRUB.
  mkdir -p "$R"
  mount "$ROOTDEV" "$R" || fail "cannot mount $ROOTDEV"
  for m in dev proc sys; do mount --bind "/$m" "$R/$m"; done
  trap 'for m in sys proc dev ""; do umount "$R/$m" 2>/dev/null; done' EXIT
  tool() { for d in usr/sbin sbin usr/bin bin; do [ -x "$R/$d/$1" ] && { echo "$R/$d/$1"; return; }; done; }
  # Encrypted file systems: LUKS2 made with a random key held in BootOS's memory, the file
  # system made inside, a Clevis binding to the Tang server added with that key, and the key's
  # own slot wiped. A volume that is LUKS2 with a Clevis binding already is kept as it is; one
  # that is not (an earlier try stopped half way) is made again.
  in_os() { chroot "$R" "$@"; }
  # Clevis is bash with process substitution: /dev/fd must be there (BootOS has no udev to make it).
  [ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
  echo "$FILESYSTEMS" | while read -r mount fstype mib vol enc; do
    [ "$enc" = 1 ] || continue
    dev=/dev/$VG/$vol name=crypt-$vol key=/tmp/layout-$vol.key
    if in_os cryptsetup isLuks "$dev" 2>/dev/null && in_os cryptsetup luksDump "$dev" 2>/dev/null | grep -q ': clevis'; then
      # (An earlier try that stopped before the make-key's slot went left the key here.)
      [ -f "$key" ] && in_os cryptsetup luksRemoveKey -q --key-file=- "$dev" < "$key" >/dev/null 2>&1
      rm -f "$key"
      say "$mount: LUKS2 on $VG/$vol, bound to the Tang server already"
      continue
    fi
    [ -n "$(tool cryptsetup)" ] && [ -n "$(tool clevis)" ] \
      || fail "the image has no cryptsetup and clevis (clevis-luks, clevis-systemd): $mount cannot be encrypted"
    # BootOS's kernel does the encryption (dm-crypt, AES-XTS, the kernel crypto API).
    for m in dm_crypt xts ecb af_alg algif_skcipher; do modprobe "$m" 2>/dev/null || true; done
    od -An -tx1 -N48 /dev/urandom | tr -d ' \n' > "$key"
    in_os cryptsetup luksFormat -q --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 --key-file=- "$dev" < "$key" \
      || { rm -f "$key"; fail "cryptsetup luksFormat on $dev failed"; }
    in_os cryptsetup open --key-file=- "$dev" "$name" < "$key" || { rm -f "$key"; fail "cannot open $dev"; }
    make_fs "$fstype" "/dev/mapper/$name"
    in_os cryptsetup close "$name"
    if ! in_os clevis luks bind -y -d "$dev" -k - tang "{\"url\":\"$TANG_URL\",\"adv\":$TANG_ADV}" < "$key"; then
      # (The key stays in memory: a retry that finds the binding there after all drops its slot.)
      fail "clevis could not bind $dev to the Tang server at $TANG_URL"
    fi
    # The make-key's own slot goes: Clevis's is the only one left.
    out=$(in_os cryptsetup luksRemoveKey -q --key-file=- "$dev" < "$key" 2>&1)
    rc=$?
    rm -f "$key"
    [ "$rc" = 0 ] || fail "cannot wipe the make-key's slot of $dev: $out"
    slots=$(in_os cryptsetup luksDump "$dev" | grep -c '^  [0-9]*: luks2')
    [ "$slots" = 1 ] || fail "$dev has $slots key slots, not Clevis's alone"
    say "$mount: $fstype on LUKS2 on $VG/$vol ($mib MiB), bound to the Tang server at $TANG_URL"
  done || exit 1
  sed -i '/# rackboot layout$/d' "$R/etc/fstab"
  [ -f "$R/etc/crypttab" ] && sed -i '/^crypt-[A-Za-z0-9_]* UUID=/d' "$R/etc/crypttab"
  echo "$FILESYSTEMS" | while read -r mount fstype mib vol enc; do
    [ -n "$mount" ] || continue
    mkdir -p "$R$mount"
    if [ "$enc" = 1 ]; then
      # Unlocked once the network is up, by clevis-luks-askpass; the boot does not wait for it.
      echo "crypt-$vol UUID=$(in_os cryptsetup luksUUID "/dev/$VG/$vol") none luks,_netdev,nofail" >> "$R/etc/crypttab"
      echo "/dev/mapper/crypt-$vol $mount $fstype _netdev,nofail 0 0 # rackboot layout" >> "$R/etc/fstab"
      continue
    fi
    pass=2; [ "$fstype" = xfs ] && pass=0
    echo "UUID=$(uuid "/dev/$VG/$vol") $mount $fstype defaults 0 $pass # rackboot layout" >> "$R/etc/fstab"
  done
  if grep -q '^crypt-' "$R/etc/crypttab" 2>/dev/null; then
    chmod 0600 "$R/etc/crypttab"
    in_os systemctl enable clevis-luks-askpass.path remote-cryptsetup.target >/dev/null 2>&1 \
      || fail "cannot enable clevis-luks-askpass.path in the installed system"
  fi
  if [ -n "$MIRROR" ]; then
    mkdir -p "$R/etc/mdadm"
    { echo "# rackboot layout: the root's mirror"; echo "HOMEHOST <ignore>"; mdadm --detail --scan | sed 's/ spares=[0-9]*//'; } > "$R/etc/mdadm/mdadm.conf"
  fi
  [ -n "$(tool mdadm)" ] || [ -z "$MIRROR" ] || fail "the image has no mdadm: its initramfs could not assemble the mirror"
  [ -n "$(tool lvm)" ] || [ "$LVM" != 1 ] || fail "the image has no lvm2: its initramfs could not find the root"
  # grub-mkconfig names the root by UUID only where /dev/disk/by-uuid has the link udev makes.
  mkdir -p /dev/disk/by-uuid
  ln -sf "$(readlink -f "$ROOTDEV")" "/dev/disk/by-uuid/$(uuid "$ROOTDEV")"
  # The image's initramfs assembles the mirror and finds the volume group as it is (mdadm's and
  # lvm2's hooks bring their tools and udev rules; no configuration is needed): it is rebuilt
  # only where it is older than those tools (update-initramfs takes minutes on a slow machine).
  tools=""
  [ -n "$MIRROR" ] && tools="$tools $(tool mdadm)"
  [ "$LVM" = 1 ] && tools="$tools $(tool lvm)"
  for k in "$R"/boot/initrd.img-*; do
    for t in $tools; do
      if [ -e "$t" ] && [ "$t" -nt "$k" ]; then
        chroot "$R" update-initramfs -u -k all >/dev/null 2>&1 || fail "update-initramfs failed in the installed system"
        say "initramfs rebuilt: it was older than ${t#"$R"}"
        break 2
      fi
    done
  done
  # BIOS boot code only where BootOS came up by BIOS: a machine that booted it by UEFI boots its
  # disk by UEFI too, through the ESP's shim and GRUB (two grub-installs saved).
  if [ -d /sys/firmware/efi ]; then
    say "booted by UEFI: no BIOS boot code (the ESP's GRUB starts the system)"
  elif [ -d "$R/usr/lib/grub/i386-pc" ]; then
    for d in "$DISK" $MIRROR; do
      chroot "$R" grub-install --target=i386-pc "$d" >/dev/null 2>&1 || fail "grub-install (BIOS) on $d failed"
      say "GRUB's BIOS boot code on $d"
    done
  fi
  chroot "$R" update-grub >/dev/null 2>&1 || fail "update-grub failed in the installed system"
  say "GRUB on $DISK${MIRROR:+ and $MIRROR}"
  for m in sys proc dev ""; do umount "$R/$m" 2>/dev/null; done
  trap - EXIT
  sync
}
layout
