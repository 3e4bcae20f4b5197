# Sourced by check and apply: $DISK, $SETTING from the parameters (compact JSON on stdin), the
# marker line, and $SECTOR, the disk's last 512-byte sector.
PARAMS=$(cat)
DISK=$(printf '%s' "$PARAMS" | sed -n 's/.*"disk":"\([^"]*\)".*/\1/p')
SETTING=$(printf '%s' "$PARAMS" | sed -n 's/.*"setting":"\([^"]*\)".*/\1/p')
case "${DISK#/dev/}" in
  "$DISK"|*[!a-z0-9]*|"") echo "lab-vendor: disk $DISK is not a plain /dev name" >&2; exit 2 ;;
esac
case "$SETTING" in
  *[!A-Za-z0-9._-]*|"") echo "lab-vendor: setting must be letters, digits, '.', '_', '-'" >&2; exit 2 ;;
esac
MARKER="rackboot-lab-setting=$SETTING"
SIZE=$(cat "/sys/class/block/${DISK#/dev/}/size" 2>/dev/null) || { echo "lab-vendor: $DISK: no such disk here: not applicable"; exit 20; }
SECTOR=$((SIZE - 1))
