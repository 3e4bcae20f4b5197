# Sourced by check and apply: reads the parameters (compact JSON on stdin, as the agent sends
# them) into $DEVICE, $DISK1 and $DISK2, refusing anything but plain /dev paths.
PARAMS=$(cat)
DEVICE=$(printf '%s' "$PARAMS" | sed -n 's/.*"device":"\([^"]*\)".*/\1/p')
DEVICE=${DEVICE:-/dev/md0}
DISKS=$(printf '%s' "$PARAMS" | sed -n 's/.*"disks":\[\([^]]*\)\].*/\1/p' | tr -d '"' | tr ',' ' ')
set -- $DISKS
DISK1=${1:-}
DISK2=${2:-}
for p in "$DEVICE" "$DISK1" "$DISK2"; do
  case "$p" in
    /dev/*) ;;
    *) echo "mdadm-raid1: ${p:-a disk} is not a /dev path" >&2; exit 2 ;;
  esac
  case "${p#/dev/}" in
    *[!a-z0-9/_-]*|"") echo "mdadm-raid1: $p is not a plain device name" >&2; exit 2 ;;
  esac
done
[ "$DISK1" != "$DISK2" ] || { echo "mdadm-raid1: the two disks must differ" >&2; exit 2; }
