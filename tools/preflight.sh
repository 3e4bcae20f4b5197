# The machine, checked before a run of tools/test.sh (sourced by it, as root): room on the disk
# where target/ lives for what the run builds, and nothing left behind by an earlier run of the
# project's tests, lab or benchmarks (tools/cleanup.sh, which says what it removed).
#
# A run on a fresh clone grows target/ to about PREFLIGHT_FRESH_MB (BENCHMARKS.md, "The test
# command": measured with `du -sm target` after a fresh run); a warm target/ needs the rest of
# that, and never less than 1 GB (the crates a change rebuilds, the lab's disks).
PREFLIGHT_FRESH_MB=${RACKBOOT_TEST_FRESH_MB:-9000}
preflight_disk() {
  local free used need at
  at=$(df -Pm target | awk 'NR == 2 {print $6}')
  free=$(df -Pm target | awk 'NR == 2 {print $4}')
  used=$(du -smx target 2>/dev/null | cut -f1)
  need=$((PREFLIGHT_FRESH_MB - used))
  [ "$need" -ge 1024 ] || need=1024
  if [ "$free" -lt "$need" ]; then
    echo "test.sh: not enough room on $at for the run: $free MB free, $need MB needed" \
         "(a fresh target/ grows to about $PREFLIGHT_FRESH_MB MB; this one holds $used MB)"
    return 1
  fi
  echo "== disk: $free MB free on $at, the run needs about $need MB (target/ holds $used MB)"
}
preflight_disk
echo "== what an earlier run left behind (tools/cleanup.sh)"
tools/cleanup.sh
