#!/usr/bin/env bash
# Builds the lab's boot directory from Debian packages only (cached; run again for nothing):
#   OUT/undionly.kpxe, ipxe.efi, snponly.efi     from the ipxe package
#   OUT/bootos/vmlinuz, OUT/bootos/initrd.img     BootOS (bootos/build.sh, cloud kernel)
#
#   vm-lab/assets.sh OUT
set -euo pipefail
OUT=${1:?usage: $0 OUT}
mkdir -p "$OUT/bootos"
echo "assets: BootOS (bootos/build.sh --kernel cloud; a first build downloads packages and builds the agent)"
"$(dirname "$0")/../bootos/build.sh" --kernel cloud "$OUT/bootos"
echo "assets: iPXE binaries from /usr/lib/ipxe"
for f in undionly.kpxe ipxe.efi snponly.efi; do
  [ -f "/usr/lib/ipxe/$f" ] && cp "/usr/lib/ipxe/$f" "$OUT/"
done
ls -l "$OUT" | awk 'NR>1 && $5 && $1 !~ /^d/ {print "  " $NF ": " $5 " bytes"}'
