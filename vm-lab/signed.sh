#!/usr/bin/env bash
# Unpacks Debian's Secure Boot chain (apt-get download + dpkg-deb -x; nothing is installed on
# the host, whose own boot loader stays untouched) into a cached root, and prints that root:
#   ROOT/usr/lib/shim/shimx64.efi.signed                         shim-signed (Microsoft-signed)
#   ROOT/usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed    grub-efi-amd64-signed (Debian-signed)
#   ROOT/VERSIONS                                                package, version, sha256 of each file
# With --arm64, the arm64 chain too (apt reads arm64 lists of its own, see bootos/debs.sh):
#   ROOT/usr/lib/shim/shimaa64.efi.signed                        shim-signed:arm64
#   ROOT/usr/lib/grub/arm64-efi-signed/grubnetaa64.efi.signed    grub-efi-arm64-signed
#   ROOT/VERSIONS-arm64
# `rackboot assets install --signed-root ROOT` copies them into a boot directory.
#
#   vm-lab/signed.sh [--arm64]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${RACKBOOT_SIGNED_CACHE:-$ROOT/target/signed-cache}
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
# unpack ARCH VERSIONS FILE...: the packages' files into the root, and their versions and sums.
unpack() {
  local arch=$1 versions=$2 debs=$CACHE/debs-$1; shift 2
  rm -rf "$debs"; mkdir -p "$debs"
  chmod 777 "$debs"  # apt's _apt user writes the downloads
  if [ "$arch" = amd64 ]; then
    local pkgs="shim-signed grub-efi-amd64-signed"
    echo "signed: apt-get download $pkgs (once; cached in $CACHE)" >&2
    if ! (cd "$debs" && apt-get download -q $pkgs >/dev/null 2>&1); then
      apt-get update -q >/dev/null
      (cd "$debs" && apt-get download -q $pkgs >/dev/null)
    fi
  else
    export DEBS_ARCH=$arch DEBS_APT_DIR=${RACKBOOT_BOOTOS_CACHE:-$ROOT/target/bootos-cache}/apt-$arch
    source "$ROOT/bootos/debs.sh"
    debs_apt_init
    local pkgs="shim-signed grub-efi-$arch-signed"
    echo "signed: apt-get download $pkgs for $arch (once; cached in $CACHE)" >&2
    (cd "$debs" && apt-get "${DEBS_APT[@]}" download -q $pkgs >/dev/null 2>&1) ||
      { apt-get "${DEBS_APT[@]}" update -q >/dev/null; (cd "$debs" && apt-get "${DEBS_APT[@]}" download -q $pkgs >/dev/null); }
  fi
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$CACHE/root"; done
  {
    for deb in "$debs"/*.deb; do
      echo "$(dpkg-deb -f "$deb" Package):$(dpkg-deb -f "$deb" Architecture) $(dpkg-deb -f "$deb" Version)"
    done
    (cd "$CACHE/root" && sha256sum "$@")
  } > "$CACHE/root/$versions.tmp"
  mv "$CACHE/root/$versions.tmp" "$CACHE/root/$versions"
}
if [ ! -f "$CACHE/root/VERSIONS" ]; then
  rm -rf "$CACHE/root"; mkdir -p "$CACHE/root"
  unpack amd64 VERSIONS usr/lib/shim/shimx64.efi.signed usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed
fi
if [ "${1:-}" = --arm64 ] && [ ! -f "$CACHE/root/VERSIONS-arm64" ]; then
  unpack arm64 VERSIONS-arm64 usr/lib/shim/shimaa64.efi.signed usr/lib/grub/arm64-efi-signed/grubnetaa64.efi.signed
fi
echo "$CACHE/root"
