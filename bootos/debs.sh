# Sourced by bootos/build.sh and bootos/tools.sh: Debian packages fetched and unpacked without
# installing anything on the build host, and binaries copied out of them with their libraries.
#
#   debs_stage CACHE MARKER PACKAGE...
#       apt-get download PACKAGE... and every library they depend on (recursively, lib* only)
#       into CACHE/debs, each unpacked into CACHE/staging; skipped when CACHE/staging.done
#       holds MARKER (a changed list downloads again). Prints how many libraries it took.
#   debs_copy STAGING TREE BIN
#       copies STAGING/BIN to TREE/BIN with every library ldd resolves for it inside STAGING
#       (its private library directories too, never the host's); fails naming a library that
#       no package brought. The dynamic loader is the caller's to place.

debs_stage() {
  local cache=$1 marker=$2; shift 2
  if [ "$(cat "$cache/staging.done" 2>/dev/null)" = "$marker" ]; then return 0; fi
  apt-cache show "$1" >/dev/null 2>&1 || apt-get update -q >/dev/null
  local libs
  libs=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances --no-pre-depends "$@" | awk '/^lib[^<]*$/ {print $1}' | sort -u)
  rm -rf "$cache/debs" "$cache/staging"; mkdir -p "$cache/debs"
  chmod 777 "$cache/debs"  # apt's _apt user writes the downloads
  (cd "$cache/debs" && apt-get download -q "$@" >/dev/null)
  echo "    $(echo $libs | wc -w) libraries"
  for l in $libs; do (cd "$cache/debs" && apt-get download -q "$l" >/dev/null 2>&1) || true; done
  for deb in "$cache"/debs/*.deb; do dpkg-deb -x "$deb" "$cache/staging"; done
  echo "$marker" > "$cache/staging.done"
}

debs_copy() {
  local s=$1 t=$2 bin=$3 libpath missing
  [ -f "$s$bin" ] || { echo "debs: $bin is not in the extracted packages" >&2; return 1; }
  libpath=$(find "$s/lib/x86_64-linux-gnu" "$s/usr/lib/x86_64-linux-gnu" -name '*.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd: -)
  mkdir -p "$t$(dirname "$bin")"
  cp "$s$bin" "$t$bin"
  missing=$(LD_LIBRARY_PATH=$libpath ldd "$s$bin" | awk '/not found/ {print $1}' | sort -u)
  [ -z "$missing" ] || { echo "debs: $bin needs $missing, which no package brought" >&2; return 1; }
  LD_LIBRARY_PATH=$libpath ldd "$s$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    local rel=${lib#"$s"}
    case "$rel" in /*) ;; *) rel=/$rel ;; esac
    [ -f "$s$rel" ] || rel=/lib/x86_64-linux-gnu/$(basename "$lib")
    case "$(basename "$rel")" in ld-linux*) continue ;; esac
    mkdir -p "$t$(dirname "$rel")"
    cp -L "$s$rel" "$t$rel" 2>/dev/null || cp -L "$lib" "$t$rel"
  done
}
