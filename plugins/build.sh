#!/usr/bin/env bash
# Builds every plugin directory here (one with a manifest.toml) into a reproducible bundle,
# signs it with minisign, and writes a pack (bundles, signatures, index.toml) that
# `rackboot plugins import` takes. The signing key is the lab's, made here on first use with
# Debian's `minisign` (no password) and never committed; a vendor passes its own with
# RACKBOOT_PLUGIN_KEY=secret.key.
#
#   plugins/build.sh [OUT]    (default: target/plugins)
#   rackboot plugins trust add --vendor rackboot-lab OUT/lab-key/lab.pub
#   rackboot plugins import OUT/pack
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-$here/../target/plugins}
mkdir -p "$out"
out=$(cd "$out" && pwd)
command -v minisign >/dev/null || { echo "build.sh: minisign is not installed (apt-get install minisign)" >&2; exit 1; }
key=${RACKBOOT_PLUGIN_KEY:-$out/lab-key/lab.key}
if [ -z "${RACKBOOT_PLUGIN_KEY:-}" ] && [ ! -f "$key" ]; then
  mkdir -p "$out/lab-key"
  chmod 700 "$out/lab-key"
  minisign -G -W -p "$out/lab-key/lab.pub" -s "$key" >/dev/null
  echo "build.sh: made the lab key $out/lab-key/lab.pub"
fi
pack="$out/pack"
rm -rf "$pack"
mkdir -p "$pack"
index="$pack/index.toml"
echo "# rackboot plugin pack: every bundle with its detached minisign signature and SHA-256." > "$index"
for dir in "$here"/*/; do
  [ -f "$dir/manifest.toml" ] || continue
  name=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$dir/manifest.toml")
  version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$dir/manifest.toml")
  file="$name-$version.tar.gz"
  # Same sources, same bytes: sorted names, no owners, a fixed time, gzip without a name.
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu -C "$dir" -cf - . |
    gzip -n -9 > "$pack/$file"
  minisign -S -s "$key" -m "$pack/$file" -x "$pack/$file.minisig" -t "$name $version" >/dev/null
  sha=$(sha256sum "$pack/$file" | cut -d' ' -f1)
  printf '\n[[bundle]]\nfile = "%s"\nsignature = "%s"\nsha256 = "%s"\n' "$file" "$file.minisig" "$sha" >> "$index"
  echo "build.sh: $pack/$file ($sha)"
done
echo "build.sh: trust the key with: rackboot plugins trust add --vendor rackboot-lab ${key%.key}.pub"
