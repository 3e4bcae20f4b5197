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

source "$ROOT/bootos/debs.sh"
if [ "$(cat "$CACHE/staging.done" 2>/dev/null)" = "$PACKAGES" ]; then
  say "Debian packages: cached in $CACHE"
else
  say "Debian packages: $PACKAGES and their libraries (apt-get download, once)"
  debs_stage "$CACHE" "$PACKAGES" $PACKAGES
fi
S=$CACHE/staging
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# Every library each binary needs, from the packages (fio's librados finds libceph-common in
# .../ceph through its RUNPATH, which ldd would look up on the host); BootOS has the dynamic
# loader already, the rest of glibc comes along (the same release's files).
for bin in $BINARIES; do debs_copy "$S" "$T" "$bin"; done
# Reproducible: fixed owners, order and times, so the same packages give the same hash.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$T" -cf - . | gzip -n -6 > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
say "$OUT: $(du -k "$OUT" | awk '{printf "%.1f MB", $1/1024}'), sha256 $(sha256sum "$OUT" | cut -c1-64)"
