#!/usr/bin/env bash
# Unpacks Debian's Secure Boot chain (apt-get download + dpkg-deb -x; nothing is installed on
# the host, whose own boot loader stays untouched) into a cached root, and prints that root:
#   ROOT/usr/lib/shim/shimx64.efi.signed                         shim-signed (Microsoft-signed)
#   ROOT/usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed    grub-efi-amd64-signed (Debian-signed)
#   ROOT/VERSIONS                                                package, version, sha256 of each file
# `rackboot assets install --signed-root ROOT` copies them into a boot directory.
#
#   vm-lab/signed.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${RACKBOOT_SIGNED_CACHE:-$ROOT/target/signed-cache}
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if [ ! -f "$CACHE/root/VERSIONS" ]; then
  echo "signed: apt-get download shim-signed grub-efi-amd64-signed (once; cached in $CACHE)" >&2
  rm -rf "$CACHE/debs" "$CACHE/root"; mkdir -p "$CACHE/debs" "$CACHE/root"
  chmod 777 "$CACHE/debs"  # apt's _apt user writes the downloads
  if ! (cd "$CACHE/debs" && apt-get download -q shim-signed grub-efi-amd64-signed >/dev/null 2>&1); then
    apt-get update -q >/dev/null
    (cd "$CACHE/debs" && apt-get download -q shim-signed grub-efi-amd64-signed >/dev/null)
  fi
  for deb in "$CACHE"/debs/*.deb; do dpkg-deb -x "$deb" "$CACHE/root"; done
  {
    for deb in "$CACHE"/debs/*.deb; do
      echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)"
    done
    (cd "$CACHE/root" && sha256sum usr/lib/shim/shimx64.efi.signed usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed)
  } > "$CACHE/root/VERSIONS.tmp"
  mv "$CACHE/root/VERSIONS.tmp" "$CACHE/root/VERSIONS"
fi
echo "$CACHE/root"
