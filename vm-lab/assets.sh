#!/usr/bin/env bash
# Builds the lab's boot directory from Debian packages only (cached; run again for nothing):
#   OUT/undionly.kpxe, ipxe.efi, snponly.efi     from the ipxe package
#   OUT/bootos/vmlinuz, OUT/bootos/initrd.img     BootOS (bootos/build.sh, cloud kernel; Debian-signed)
#   OUT/shimx64.efi, OUT/grubx64.efi              the Secure Boot chain (vm-lab/signed.sh), and
#   OUT/signed.versions                           their packages' versions and checksums
#
# With --arm64, also what arm64 machines boot (bootos/build.sh --arch arm64, signed.sh --arm64):
#   OUT/bootos/arm64/vmlinuz, initrd.img          BootOS for arm64 (Debian-signed kernel)
#   OUT/shimaa64.efi, OUT/grubaa64.efi            the arm64 signed chain, OUT/signed-arm64.versions
#
#   vm-lab/assets.sh [--arm64] OUT
set -euo pipefail
ARM64=0
[ "${1:-}" = --arm64 ] && { ARM64=1; shift; }
OUT=${1:?usage: $0 [--arm64] OUT}
mkdir -p "$OUT/bootos"
echo "assets: BootOS (bootos/build.sh --kernel cloud; a first build downloads packages and builds the agent)"
"$(dirname "$0")/../bootos/build.sh" --kernel cloud "$OUT/bootos"
echo "assets: iPXE binaries from /usr/lib/ipxe"
for f in undionly.kpxe ipxe.efi snponly.efi; do
  [ -f "/usr/lib/ipxe/$f" ] && cp "/usr/lib/ipxe/$f" "$OUT/"
done
echo "assets: Debian's signed shim and network GRUB (vm-lab/signed.sh)"
signed=$("$(dirname "$0")/signed.sh")
cp "$signed/usr/lib/shim/shimx64.efi.signed" "$OUT/shimx64.efi"
cp "$signed/usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed" "$OUT/grubx64.efi"
cp "$signed/VERSIONS" "$OUT/signed.versions"
if [ $ARM64 = 1 ]; then
  echo "assets: BootOS for arm64 (bootos/build.sh --arch arm64; the agent cross-built)"
  "$(dirname "$0")/../bootos/build.sh" --arch arm64 --kernel cloud "$OUT/bootos/arm64"
  signed=$("$(dirname "$0")/signed.sh" --arm64)
  cp "$signed/usr/lib/shim/shimaa64.efi.signed" "$OUT/shimaa64.efi"
  cp "$signed/usr/lib/grub/arm64-efi-signed/grubnetaa64.efi.signed" "$OUT/grubaa64.efi"
  cp "$signed/VERSIONS-arm64" "$OUT/signed-arm64.versions"
fi
ls -l "$OUT" | awk 'NR>1 && $5 && $1 !~ /^d/ {print "  " $NF ": " $5 " bytes"}'
