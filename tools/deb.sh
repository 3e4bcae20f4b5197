#!/usr/bin/env bash
# Builds the Debian package with cargo-deb (tools/setup.sh installs it) and checks what is in it.
#
#   tools/deb.sh [--dev] [--bootos DIR | --build-bootos] [--no-check]
#
# Output: $CARGO_TARGET_DIR/debian/rackboot_<version>_amd64.deb (default target/debian/).
#   (default)       a release build of rackboot (what operators install)
#   --dev           packages the debug binary the test stage already built (built if missing,
#                   never rebuilt), stripped (about 28 MB), with fast compression, so CI checks the package without a second, release build of the
#                   whole dependency tree; cargo-deb warns that dev profiles are unsupported
#                   (it is pinned in tools/setup.sh, so that warning cannot turn into an error
#                   unannounced)
#   --bootos DIR    carries that BootOS build (vmlinuz, initrd.img, rackboot-agent, its unit) in
#                   /usr/share/rackboot/bootos, where `rackboot assets install` (and the postinst)
#                   takes it from
#   --build-bootos  builds one first: bootos/build.sh --kernel generic (real hardware drivers;
#                   downloads Debian packages, a few minutes)
# Then, unless --no-check: dpkg-deb -I/-c must show the binary, the unit, the config as a
# conffile and the dependency on ipxe; the package is unpacked into a throwaway root and its
# binary must run (--help, default-config, assets install into a temp boot dir from that root).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PROFILE=release BOOTOS="" BUILD_BOOTOS=0 CHECK=1
while [ $# -gt 0 ]; do
  case "$1" in
    --dev) PROFILE=dev; shift ;;
    --bootos) BOOTOS=$2; shift 2 ;;
    --build-bootos) BUILD_BOOTOS=1; shift ;;
    --no-check) CHECK=0; shift ;;
    *) echo "usage: $0 [--dev] [--bootos DIR | --build-bootos] [--no-check]" >&2; exit 2 ;;
  esac
done
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
command -v cargo-deb >/dev/null || { echo "deb.sh: cargo-deb missing; run tools/setup.sh" >&2; exit 1; }
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$TARGET/debian
STAGE=$ROOT/target/deb-bootos

if [ $BUILD_BOOTOS = 1 ]; then
  BOOTOS=$TARGET/bootos-generic
  echo "== deb: building BootOS (generic kernel) into $BOOTOS"
  bootos/build.sh --kernel generic "$BOOTOS"
fi
args=(--locked -o "$OUT/")
rm -rf "$STAGE"
if [ -n "$BOOTOS" ]; then
  for f in vmlinuz initrd.img; do
    [ -s "$BOOTOS/$f" ] || { echo "deb.sh: $BOOTOS/$f missing: not a BootOS build (bootos/build.sh OUT)" >&2; exit 1; }
  done
  mkdir -p "$STAGE"
  cp "$BOOTOS"/{vmlinuz,initrd.img} "$STAGE/"
  for f in rackboot-agent rackboot-agent.service; do [ -f "$BOOTOS/$f" ] && cp "$BOOTOS/$f" "$STAGE/"; done
  args+=(--variant bootos)
  echo "== deb: carrying BootOS from $BOOTOS"
else
  echo "== deb: without BootOS (the postinst installs iPXE only; pass --bootos DIR or --build-bootos to carry one)"
fi
if [ $PROFILE = dev ]; then
  # The test stage's binary as it is: `cargo build --bin rackboot` would build it again, with
  # the features of the package alone rather than the workspace's (a minute and a half in CI).
  if [ ! -x "${CARGO_TARGET_DIR:-target}/debug/rackboot" ]; then
    echo "== deb: the debug build"; cargo build --locked --bin rackboot
  fi
  # Checked, not shipped: fast compression (xz over a debug binary and BootOS took a minute and
  # a half of one core in CI).
  args+=(--profile dev --no-build --fast)
else
  echo "== deb: release build (cargo shows its progress; a first build takes several minutes on 2 cores)"
fi
rm -f "$OUT"/rackboot_*.deb
cargo deb "${args[@]}" 2> >(grep -v "dev profile is not supported\|To enable debug symbols set" >&2)
DEB=$(ls "$OUT"/rackboot_*.deb)
echo "== deb: $DEB ($(du -h "$DEB" | cut -f1))"
[ $CHECK = 1 ] || exit 0

echo "== deb: checking its contents"
fail() { echo "deb.sh: CHECK FAILED: $*" >&2; exit 1; }
info=$(dpkg-deb -I "$DEB")
list=$(dpkg-deb -c "$DEB")
grep -q '^ Package: rackboot$' <<< "$info" || fail "package name"
grep -Eq '^ Depends:.*\bipxe\b' <<< "$info" || fail "does not depend on ipxe"
for f in ./usr/bin/rackboot ./usr/lib/systemd/system/rackboot.service ./etc/rackboot/rackboot.toml \
         ./usr/share/rackboot/templates/ipxe/profile.ipxe ./usr/share/bash-completion/completions/rackboot \
         ./usr/share/zsh/vendor-completions/_rackboot ./usr/share/fish/vendor_completions.d/rackboot.fish; do
  grep -q " $f\$" <<< "$list" || fail "$f is not in the package"
done
grep -Eq " ./usr/share/man/man1/rackboot-tasks-create.1(.gz)?$" <<< "$list" || fail "the man pages are not in the package"
[ "$(dpkg-deb -f "$DEB" Package)" = rackboot ] || fail "control file"
dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles | grep -qx /etc/rackboot/rackboot.toml || fail "config is not a conffile"
if [ -n "$BOOTOS" ]; then
  grep -q " ./usr/share/rackboot/bootos/initrd.img$" <<< "$list" || fail "BootOS is not in the package"
fi
# A throwaway root: unpack, run the packaged binary, and install assets from the unpacked tree
# (a fake ipxe dir when the host has no ipxe package).
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
dpkg-deb -x "$DEB" "$T/root"
"$T/root/usr/bin/rackboot" --help | grep -q "assets" || fail "rackboot --help"
"$T/root/usr/bin/rackboot" default-config | cmp -s - "$T/root/etc/rackboot/rackboot.toml" || fail "default-config differs from the packaged config"
grep -q '^ExecStart=/usr/bin/rackboot serve --config /etc/rackboot/rackboot.toml$' "$T/root/usr/lib/systemd/system/rackboot.service" || fail "unit ExecStart"
if command -v systemd-analyze >/dev/null; then
  # The unit names /usr/bin/rackboot; verify it against the unpacked copy.
  sed "s|/usr/bin/rackboot|$T/root/usr/bin/rackboot|" "$T/root/usr/lib/systemd/system/rackboot.service" > "$T/rackboot.service"
  systemd-analyze verify "$T/rackboot.service" || fail "systemd-analyze verify"
fi
ipxe=/usr/lib/ipxe
if [ ! -f $ipxe/undionly.kpxe ]; then
  ipxe=$T/ipxe; mkdir -p "$ipxe"
  for f in undionly.kpxe ipxe.efi snponly.efi; do echo "fake $f" > "$ipxe/$f"; done
fi
bootos=$T/root/usr/share/rackboot/bootos
if [ -z "$BOOTOS" ]; then
  bootos=$T/fake-bootos; mkdir -p "$bootos"; echo kernel > "$bootos/vmlinuz"; echo initrd > "$bootos/initrd.img"
fi
sed "s|^data_dir = .*|data_dir = \"$T/data\"|" "$T/root/etc/rackboot/rackboot.toml" > "$T/rackboot.toml"
"$T/root/usr/bin/rackboot" assets install --config "$T/rackboot.toml" --ipxe-dir "$ipxe" --bootos "$bootos" | sed 's/^/    /'
"$T/root/usr/bin/rackboot" assets check --config "$T/rackboot.toml" >/dev/null || fail "assets check after install"
echo "== deb: ok"
dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ {printf "    %10s %s\n", $3, $6}'
