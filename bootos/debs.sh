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
#
# For another architecture (BootOS for arm64), the caller sets DEBS_ARCH=arm64 before these:
# apt then reads its own package lists for that architecture (kept in DEBS_APT_DIR, fetched
# once; the host's apt configuration and architectures stay as they are), and debs_copy reads
# each binary's needed libraries with readelf, since the host cannot run it to ask ldd.
DEBS_ARCH=${DEBS_ARCH:-amd64}
DEBS_APT=()
case "$DEBS_ARCH" in
  amd64) DEBS_TRIPLET=x86_64-linux-gnu ;;
  arm64) DEBS_TRIPLET=aarch64-linux-gnu ;;
  *) echo "debs: architecture $DEBS_ARCH is not one BootOS is built for (amd64, arm64)" >&2; return 2 ;;
esac

# apt for DEBS_ARCH in a state directory of its own: its lists, its cache, an empty status.
debs_apt_init() {
  [ "$DEBS_ARCH" = amd64 ] && return 0
  local dir=${DEBS_APT_DIR:?DEBS_APT_DIR names where apt keeps the lists of $DEBS_ARCH}
  mkdir -p "$dir/state/lists/partial" "$dir/cache/archives/partial"
  touch "$dir/state/status"
  chmod -R 777 "$dir"  # apt's _apt user writes the lists
  DEBS_APT=(-o "Dir::State=$dir/state" -o "Dir::State::status=$dir/state/status" -o "Dir::Cache=$dir/cache"
            -o "APT::Architecture=$DEBS_ARCH" -o "APT::Architectures::=$DEBS_ARCH")
}

debs_stage() {
  local cache=$1 marker=$2; shift 2
  if [ "$(cat "$cache/staging.done" 2>/dev/null)" = "$marker" ]; then return 0; fi
  debs_apt_init
  apt-cache "${DEBS_APT[@]}" show "$1" >/dev/null 2>&1 || apt-get "${DEBS_APT[@]}" update -q >/dev/null
  local libs
  libs=$(apt-cache "${DEBS_APT[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances "$@" | awk '/^(lib[^<]*|zlib1g)$/ {print $1}' | sort -u)
  rm -rf "$cache/debs" "$cache/staging"; mkdir -p "$cache/debs"
  chmod 777 "$cache/debs"  # apt's _apt user writes the downloads
  (cd "$cache/debs" && apt-get "${DEBS_APT[@]}" download -q "$@" >/dev/null)
  echo "    $(echo $libs | wc -w) libraries"
  for l in $libs; do (cd "$cache/debs" && apt-get "${DEBS_APT[@]}" download -q "$l" >/dev/null 2>&1) || true; done
  for deb in "$cache"/debs/*.deb; do dpkg-deb -x "$deb" "$cache/staging"; done
  echo "$marker" > "$cache/staging.done"
}

debs_copy() {
  local s=$1 t=$2 bin=$3 libpath missing
  [ -f "$s$bin" ] || { echo "debs: $bin is not in the extracted packages" >&2; return 1; }
  [ "$DEBS_ARCH" = amd64 ] || { debs_copy_elf "$@"; return; }
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

# debs_copy for a binary of another architecture: its NEEDED libraries (readelf), looked up in
# its RUNPATH and the staging tree's library directories, and theirs in turn.
debs_copy_elf() {
  local s=$1 t=$2 bin=$3 f lib d found runpath
  local queue=("$bin") seen=" "
  mkdir -p "$t$(dirname "$bin")"
  cp "$s$bin" "$t$bin"
  while [ ${#queue[@]} -gt 0 ]; do
    f=${queue[0]}; queue=("${queue[@]:1}")
    runpath=$(readelf -d "$s$f" | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p' | sed "s|\$ORIGIN|$(dirname "$f")|g" | tr ':' ' ')
    for lib in $(readelf -d "$s$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      case "$lib" in ld-linux*) continue ;; esac
      case "$seen" in *" $lib "*) continue ;; esac
      seen="$seen$lib "
      found=
      for d in $runpath /lib/$DEBS_TRIPLET /usr/lib/$DEBS_TRIPLET; do
        if [ -e "$s$d/$lib" ]; then found=$d/$lib; break; fi
      done
      [ -n "$found" ] || { echo "debs: $bin needs $lib, which no package brought" >&2; return 1; }
      mkdir -p "$t$(dirname "$found")"
      cp -L "$s$found" "$t$found"
      queue+=("$found")
    done
  done
}
