#!/usr/bin/env bash
# Builds the commissioning tools' overlay for BootOS from Debian packages only (apt-get download
# + extract; nothing is installed on the build host): stress-ng, memtester, fio, smartctl and iperf3 with
# the libraries they need, as a tar.gz that a commissioning job fetches by its SHA-256 and
# unpacks into BootOS's root. BootOS itself stays small; only machines being tested fetch this.
#
#   bootos/tools.sh OUT.tar.gz      (the appliance serves it from its boot directory as
#                                    provision.test_tools, default bootos-tools.tar.gz)
#
# Downloads are cached in target/bootos-cache/tools.
set -euo pipefail
OUT=${1:?usage: $0 OUT.tar.gz}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
CACHE=${RACKBOOT_BOOTOS_CACHE:-$ROOT/target/bootos-cache}/tools
mkdir -p "$CACHE" "$(dirname "$OUT")"
exec 9>"$CACHE/.lock"
flock 9
PACKAGES="stress-ng memtester fio smartmontools iperf3"
BINARIES="/usr/bin/stress-ng /usr/sbin/memtester /usr/bin/fio /usr/sbin/smartctl /usr/bin/iperf3"
say() { echo "bootos-tools: $*"; }

if [ "$(cat "$CACHE/staging.done" 2>/dev/null)" = "$PACKAGES" ]; then
  say "Debian packages: cached in $CACHE"
else
  say "Debian packages: $PACKAGES and their libraries (apt-get download, once)"
  apt-cache show stress-ng >/dev/null 2>&1 || apt-get update -q >/dev/null
  libs=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances --no-pre-depends $PACKAGES | awk '/^lib[^<]*$/ {print $1}' | sort -u)
  rm -rf "$CACHE/debs" "$CACHE/staging"; mkdir -p "$CACHE/debs"
  chmod 777 "$CACHE/debs"  # apt's _apt user writes the downloads
  (cd "$CACHE/debs" && apt-get download -q $PACKAGES >/dev/null)
  for l in $libs; do (cd "$CACHE/debs" && apt-get download -q "$l" >/dev/null 2>&1) || true; done
  for deb in "$CACHE"/debs/*.deb; do dpkg-deb -x "$deb" "$CACHE/staging"; done
  echo "$PACKAGES" > "$CACHE/staging.done"
fi
S=$CACHE/staging
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# Every library directory of the packages, the private ones too (fio's librados finds
# libceph-common in .../ceph through its RUNPATH, which ldd would look up on the host).
libpath=$(find "$S/lib/x86_64-linux-gnu" "$S/usr/lib/x86_64-linux-gnu" -name '*.so*' -printf '%h\n' | sort -u | paste -sd: -)
for bin in $BINARIES; do
  [ -f "$S$bin" ] || { echo "tools.sh: $bin is not in the extracted packages" >&2; exit 1; }
  mkdir -p "$T$(dirname "$bin")"
  cp "$S$bin" "$T$bin"
  missing=$(LD_LIBRARY_PATH=$libpath ldd "$S$bin" | awk '/not found/ {print $1}' | sort -u)
  [ -z "$missing" ] || { echo "tools.sh: $bin needs $missing, which no package brought" >&2; exit 1; }
  LD_LIBRARY_PATH=$libpath ldd "$S$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    rel=${lib#"$S"}
    case "$rel" in /*) ;; *) rel=/$rel ;; esac
    [ -f "$S$rel" ] || rel=/lib/x86_64-linux-gnu/$(basename "$lib")
    # BootOS has the dynamic loader already; the rest of glibc comes along (BootOS's own tools
    # may not need libm, for one), the same release's files.
    case "$(basename "$rel")" in ld-linux*) continue ;; esac
    mkdir -p "$T$(dirname "$rel")"
    cp -L "$S$rel" "$T$rel" 2>/dev/null || cp -L "$lib" "$T$rel"
  done
done
# Reproducible: fixed owners, order and times, so the same packages give the same hash.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$T" -cf - . | gzip -n -6 > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
say "$OUT: $(du -k "$OUT" | awk '{printf "%.1f MB", $1/1024}'), sha256 $(sha256sum "$OUT" | cut -c1-64)"
