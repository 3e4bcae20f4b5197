#!/usr/bin/env bash
# Removes what an earlier run of this project's tests, lab or benchmarks left behind (a run cut
# off, a terminal closed, a test killed), and says what it removed. It finds them only by the
# names the project gives them, and leaves each alone while its owner still runs:
#
#   network namespaces   rbt<PID>-...     tests/netns (kept while PID runs)
#                        rblab..., rbinst, rb{boot,bench,dns,http,soak,store,storm}-...
#                                         vm-lab/run.sh and bench/ (kept while one of them runs)
#                        and every process inside one (qemu, dnsmasq, Kea, nginx, the BMC
#                        emulators, rackboot): SIGTERM, then SIGKILL 5 s later
#   libvirt domains      rb<PID>-...      tests/netns/libvirt.rs (kept while PID runs), with
#                                         their disks under /var/lib/libvirt/images
#                        rblab-...        vm-lab/run.sh --libvirt (kept while it runs)
#   PostgreSQL clusters  /tmp/rackboot-pg.<PID>.*   tools/test.sh and tests/pg (kept while PID runs)
#   mounts               /tmp/rackboot-mnt.<PID>.*  vm-lab/os-image.sh, tests (kept while PID runs)
#   loop devices         of the lab image being built (target/.../lab-os.img.tmp), once no
#                        vm-lab/os-image.sh runs
#
#   tools/cleanup.sh [--dry-run]     (as root; --dry-run only lists)
# Nothing else is touched: a namespace, domain or process the project did not name stays.
set -uo pipefail
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
DRY=0
[ "${1:-}" = --dry-run ] && DRY=1
[ "$(id -u)" = 0 ] || { echo "cleanup: not root: nothing to clean (namespaces, domains and mounts need root)"; exit 0; }
removed=0

say() { echo "cleanup: $*"; }
# act DESCRIPTION COMMAND...: does COMMAND (or only says it, with --dry-run).
act() {
  local what=$1; shift
  if [ $DRY = 1 ]; then say "would remove $what"; return 0; fi
  "$@" && say "removed $what" || say "could not remove $what"
  removed=$((removed + 1))
}
# alive PID: whether process PID runs.
alive() { [ -d "/proc/$1" ]; }
# a_test_runs: whether a test binary (it-<hash>) runs.
a_test_runs() {
  local c
  for c in /proc/[0-9]*/comm; do
    [[ $(cat "$c" 2>/dev/null) == it-* ]] && return 0
  done
  return 1
}
# script_alive: whether vm-lab/run.sh or a benchmark runs (their namespaces are theirs).
script_alive() { pgrep -f 'vm-lab/run\.sh|bench/[a-z]+\.sh' >/dev/null; }

# stale_ns NAME: whether namespace NAME is the project's and its owner is gone.
stale_ns() {
  case $1 in
    rbt[0-9]*-*)
      local p=${1#rbt}; p=${p%%-*}
      [[ $p =~ ^[0-9]+$ ]] && ! alive "$p" ;;
    # Named before the PID was whole in the name (rbt<PID mod 100000><tag>).
    rbt[0-9]*) ! a_test_runs ;;
    rblab*|rbinst|rbboot-*|rbbench-*|rbdns-*|rbhttp-*|rbsoak-*|rbstore-*|rbstorm-*) ! script_alive ;;
    *) return 1 ;;
  esac
}
remove_ns() {
  local ns=$1 pids
  pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill $pids 2>/dev/null
    for _ in $(seq 50); do [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break; sleep 0.1; done
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
  fi
  ip netns del "$ns"
}
for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
  stale_ns "$ns" || continue
  procs=$(ip netns pids "$ns" 2>/dev/null | xargs -r -I{} cat /proc/{}/comm 2>/dev/null | sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
  act "network namespace $ns${procs:+ (processes: $procs)}" remove_ns "$ns"
done

# stale_domain NAME: whether libvirt domain NAME is the project's and its owner is gone.
stale_domain() {
  case $1 in
    rblab-*) ! script_alive ;;
    rb[0-9]*-*) local p=${1#rb}; p=${p%%-*}; ! alive "$p" ;;
    *) return 1 ;;
  esac
}
remove_domain() {
  local dom=$1
  virsh -q -c qemu:///system destroy "$dom" >/dev/null 2>&1
  virsh -q -c qemu:///system undefine --nvram "$dom" >/dev/null || return 1
  rm -rf "/var/lib/libvirt/images/$dom"
}
if command -v virsh >/dev/null && virsh -q -c qemu:///system list --all --name >/dev/null 2>&1; then
  for dom in $(virsh -q -c qemu:///system list --all --name); do
    stale_domain "$dom" && act "libvirt domain $dom" remove_domain "$dom"
  done
else
  # No libvirtd answers: a domain is its definition file (and nothing of it runs).
  for xml in /etc/libvirt/qemu/rb*.xml; do
    [ -e "$xml" ] || continue
    dom=$(basename "$xml" .xml)
    stale_domain "$dom" || continue
    act "libvirt domain $dom (its definition; libvirtd is not running)" \
      rm -rf "$xml" "/var/lib/libvirt/qemu/nvram/${dom}_VARS.fd" "/var/lib/libvirt/images/$dom"
  done
fi

# owner_gone PATH: whether the PID in a /tmp/rackboot-<kind>.<PID>.<random> name has ended (a
# name without one is from before names carried it: gone).
owner_gone() {
  local p=${1##*/}; p=${p#rackboot-*.}; p=${p%%.*}
  [[ $p =~ ^[0-9]+$ ]] || return 0
  ! alive "$p"
}

for m in $(findmnt -rn -o TARGET | grep '^/tmp/rackboot-mnt\.' | sort -r); do
  owner_gone "${m#/tmp/}" || continue
  act "mount $m" umount -l "$m"
done
if ! pgrep -f 'vm-lab/os-image\.sh' >/dev/null; then
  while read -r dev file; do
    [[ $file == */lab-os.img.tmp* ]] || continue
    act "loop device $dev ($file)" sh -c "partx -d '$dev' 2>/dev/null; losetup -d '$dev'"
  done < <(losetup -l -n -O NAME,BACK-FILE 2>/dev/null)
fi
for d in /tmp/rackboot-mnt.*; do
  [ -d "$d" ] && owner_gone "$d" && ! findmnt -rn "$d" >/dev/null && act "directory $d" rmdir "$d"
done

stop_cluster() {
  local dir=$1 pid
  pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null)
  # SIGQUIT: PostgreSQL's immediate shutdown (the cluster is thrown away).
  if [ -n "$pid" ] && alive "$pid"; then
    kill -QUIT "$pid" 2>/dev/null
    for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null
  fi
  rm -rf "$dir"
}
for d in /tmp/rackboot-pg*; do
  [ -d "$d" ] || continue
  owner_gone "$d" || continue
  act "PostgreSQL cluster $d" stop_cluster "$d"
done

[ $removed = 0 ] && [ $DRY = 0 ] && say "nothing left behind by an earlier run"
exit 0
