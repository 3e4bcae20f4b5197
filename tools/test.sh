#!/usr/bin/env bash
# The test command: installs what the tests need, then runs formatting and lint checks and every
# test, end-to-end ones included (they need root: network namespaces and real DHCP clients).
# One debug build serves every stage, the Debian package check included; the lab's assets are
# built once. Each stage and background job has a time limit (tools/harness.sh), the whole run
# one too, and each stage prints how many seconds it took.
#
#   tools/test.sh                  everything (what .ci/run runs)
#   tools/test.sh --quick          fmt, clippy and every test that needs no VM
#   tools/test.sh --only FILTER    the tests whose names contain FILTER (repeatable), with the
#                                  set-up they need (the lab's assets only for VM tests)
# Environment: RACKBOOT_TEST_TIMEOUT (seconds for the whole run; default 3600).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
[ "$(id -u)" = 0 ] || { echo "test.sh: run as root (the end-to-end tests create network namespaces)"; exit 1; }
# One clean build per run: cargo's incremental cache would only add gigabytes to the disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
STARTED=$SECONDS
MODE=all FILTERS=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) MODE=quick ;;
    --only) MODE=only; FILTERS+=("${2:?--only needs a test name filter, e.g. hostile::}"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown option $1 (--quick, --only FILTER, --help)"; exit 2 ;;
  esac
  shift
done
[ -x "$HOME/.cargo/bin/cargo" ] && PATH="$HOME/.cargo/bin:$PATH"
mkdir -p target
source tools/harness.sh
source tools/setup.sh --env

# Limits: about three times each one's time on a fresh 2-core machine (BENCHMARKS.md, "The test
# command"); a stage past its limit ends the run. The whole run: RACKBOOT_TEST_TIMEOUT.
L_FMT=120 L_SETUP=900 L_BUILD=2400 L_ASSETS=3000 L_ASSETS_ARM64=3000 L_TOOLS=3000
L_REST=2700 L_PG=1200 L_CLIPPY=900 L_BOOK=300 L_DEB=900 L_VM=3600 L_QEMU=3600
run_limit "${RACKBOOT_TEST_TIMEOUT:-3600}"
# The run's end, however it comes (a failure, Ctrl-C, the run's limit): whatever still runs is
# ended, and what the tests left behind is removed.
on_exit() {
  local rc=$?
  trap - EXIT INT TERM HUP
  [ -z "$(ls -A "$HARNESS_DIR/running" 2>/dev/null)" ] || end_all "the run is ending (exit $rc)"
  kill -TERM "$RUN_WATCHDOG" 2>/dev/null || true
  tools/cleanup.sh | grep -v 'nothing left behind' || true
  if [ -e "$HARNESS_DIR/run.expired" ]; then
    echo "== the run passed its limit of $RUN_LIMIT s (RACKBOOT_TEST_TIMEOUT); the stages it ended are named above"
    rc=1
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'echo "== interrupted"; exit 130' INT TERM HUP

# The machine, before anything: room for the build, and nothing left by an earlier run.
source tools/preflight.sh

stage "cargo fmt --check" $L_FMT cargo fmt --all -- --check
# The test build needs nothing the set-up installs (cargo and its C compiler come before it), so it
# compiles from the start while apt-get and pip download (on a fresh machine, minutes of each).
# (A machine without a C compiler gets one from the set-up first.) Doc tests are the full run's.
BUILD_ARGS=(--workspace --locked)
[ $MODE = all ] || BUILD_ARGS+=(--lib --bins --tests)
start_build() {
  job test-build $L_BUILD cargo test "${BUILD_ARGS[@]}" --no-run &
  launched test-build
}
build_ready() {
  local rc=0
  ready test-build >/dev/null || rc=$?
  grep -vE '^ +(Compiling|Downloaded|Downloading|Blocking) ' target/test-build.log || true
  return "$rc"
}
rm -f target/test-build.pid
command -v cc >/dev/null && start_build
SETUP_ARGS=(--libvirt --no-cargo-deb)
[ $MODE = quick ] && SETUP_ARGS=(--no-cargo-deb)
setup() { source tools/setup.sh "${SETUP_ARGS[@]}"; }
stage "setup (tools/setup.sh ${SETUP_ARGS[*]}: Debian packages, libvirt and the BMC emulators, validators; skipped when present)" \
  $L_SETUP setup
[ -e target/test-build.pid ] || start_build

# The lab's assets, built once per run into their caches under target/ (BootOS with its static
# agent, iPXE, Debian's signed shim and GRUB, the commissioning tools' overlay, the lab OS image
# by debootstrap; then BootOS and the chain for arm64): mostly downloads, unpacking and the
# agent's release builds (in target/ beside the test build's, not under its lock). They build in
# the background at a lower priority than the test build and the tests: the rest lane starts
# as soon as the test build is done and needs none of them, the vm lane waits for the amd64
# ones, and the arm64 ones (one test of the qemu lane needs them, and that lane starts last)
# come after those, at the lowest priority, from the cycles the lanes leave.
# The tests and the Debian package then only copy them.
# The image (debootstrap) and the tools' overlay (downloads and unpacking) build beside BootOS
# (the agent's compiles), as the image does in the main job.
mkdir -p target/lab-assets/boot/images
# low NICE COMMAND...: runs COMMAND at NICE in a session of its own, whose autogroup gets that
# nice too. Linux shares the CPU between sessions' autogroups first and by nice only inside
# one, and the VMs of libvirt's domains run in libvirtd's session: beside a busy process of
# this script's session, at any nice, they got half the machine between them (test run 29:
# arm64's agent build at nice 19 held back the provision test's two VMs for its 8 minutes).
# (The amd64 assets, which the vm lane waits for, stay in this session at nice 10: beside the
# test build and the rest lane's tests, not below them in a group of their own, where the vm
# lane waited 238 s for them in run 30 against 140 s in run 29.)
low() {
  local n=$1; shift
  setsid bash -c 'echo "$0" 2>/dev/null >/proc/self/autogroup; exec nice -n "$0" "$@"' "$n" "$@"
}
lab_assets() {
  local image tools rc=0
  # The package lists, once, before three scripts that would each fetch them if missing.
  apt-cache show busybox-static >/dev/null 2>&1 || apt-get update -q >/dev/null
  vm-lab/os-image.sh target/lab-assets/boot/images/lab.img >target/os-image.log 2>&1 &
  image=$!
  bootos/tools.sh target/lab-assets/boot/bootos-tools.tar.gz >target/bootos-tools.log 2>&1 &
  tools=$!
  vm-lab/assets.sh target/lab-assets/boot || rc=$?
  wait "$image" || rc=$?
  wait "$tools" || rc=$?
  cat target/os-image.log target/bootos-tools.log
  return "$rc"
}
# (amd64's BootOS is in its cache by then: assets.sh --arm64 adds arm64's.)
export -f lab_assets
[ $MODE = all ] || { source tools/test-area.sh; exit; }
(
  job lab-assets $L_ASSETS nice -n 10 bash -c lab_assets
  job lab-assets-arm64 $L_ASSETS_ARM64 low 19 vm-lab/assets.sh --arm64 target/lab-assets/boot
) &
launched lab-assets lab-assets-arm64

# mdBook for the book stage and cargo-deb for the package's, compiled at the lowest priority from
# the start: they take the cycles the builds and tests leave (a fresh machine compiles them for
# minutes), not a lane's time.
job tools-install $L_TOOLS low 19 bash -c 'tools/book.sh --install-mdbook && tools/setup.sh --cargo-deb' &
launched tools-install

stage "build the tests (compiling since the start; one build for every stage below)" $L_BUILD build_ready
# The same CMDB unit tests and the in-process appliance tests once more with the CMDB on
# PostgreSQL: a throwaway cluster on a Unix socket, a schema per test. Left out: tests of the
# embedded file itself (its bytes, size, quarantine, backup and restore of the file), the UI in
# a browser, and what runs on clusters of its own anyway.
on_postgres() {
  PGLAB=$(mktemp -d "/tmp/rackboot-pg.$BASHPID.XXXXXX"); chmod 755 "$PGLAB"
  trap 'tests/pg/cluster.sh stop "$PGLAB"' EXIT
  PGURL=$(tests/pg/cluster.sh start "$PGLAB")
  local skip=(--skip the_admin_files_work_and_an_old_token_file_survives_the_upgrade
              --skip no_secret_reaches_the_log_or_any_answer --skip quarantine --skip schema::tests --skip ui::)
  # (Only these crates' unit tests open a CMDB: the others' would run the same again.)
  RACKBOOT_TEST_POSTGRES=$PGURL cargo test --locked -p rackboot-store -p rackboot-control -p rackboot-kv --lib -- "${skip[@]}"
  RACKBOOT_TEST_POSTGRES=$PGURL cargo test --locked --test it -- \
    api::basics:: api::contract:: api::racks:: api::users:: api::audit:: api::templates:: agent::inprocess:: \
    agent::json:: agent::plugin:: bmc::api:: plugins::store:: protocols::dhcp:: protocols::dns:: protocols::tls:: \
    protocols::boot_tls:: protocols::boot_http:: protocols::tang:: crash::kill9:: crash::kill9_provision:: \
    crash::sigterm:: provision::image:: provision::installer:: provision::lifecycle:: hostile::plugins:: \
    hostile::templates:: hostile::enroll_nonce:: hostile::conn_limits:: hostile::operator:: \
    hostile::sightings::a_flood_of_boot_script \
    "${skip[@]}"
  tests/pg/cluster.sh stop "$PGLAB"; trap - EXIT
}


# The Debian package from the debug build the tests just made (no release build: see tools/deb.sh),
# carrying the BootOS built with the lab assets (from bootos/build.sh's cache: seconds).
deb() {
  ready lab-assets >/dev/null
  bootos/build.sh --kernel cloud target/deb-bootos-cloud
  tools/deb.sh --dev --bootos target/deb-bootos-cloud
}

# Three lanes, each stopping at its first failed stage, their lines prefixed with the lane's
# name. The VM lanes run the tests with virtual machines (e2e::vm: firmware in qemu under TCG),
# one at a time each (a TCG VM keeps a core busy), with what they print: their timelines
# (`[  123 s] ...`) show where a run's time went. The `vm` lane has the tests whose VMs are
# libvirt domains behind BMCs (libvirtd is one per machine) and the Secure Boot ones (so the two
# VM lanes take about as long); the `qemu` lane the other ones, which start qemu themselves.
# The `rest` lane runs everything else, one test at a time too: each crate's unit tests and
# tests/it (in-process, hostile, end to end in namespaces), the PostgreSQL re-run, clippy, the
# book and the Debian package. The qemu lane waits for the rest lane's
# tests to end before it starts (they are timed against a load of one VM lane, not two) and
# runs beside its PostgreSQL re-run: the machine's cores are never idle, and neither VM lane
# waits for the other. Each stage prints the CPU seconds it used beside its wall seconds (the
# VMs of libvirt domains are libvirtd's children, not the lane's).
# (e2e::vm::leftovers defines a libvirt domain: beside libvirt's other users, not the qemu lane.)
VM_LANE_TESTS=(e2e::vm::provision:: e2e::vm::secureboot:: e2e::vm::vbmc:: e2e::vm::vmedia:: e2e::vm::leftovers::)
vm_lane() {
  stage "lab assets (built in the background since the set-up: vm-lab/assets.sh, bootos/tools.sh, vm-lab/os-image.sh)" \
    $L_ASSETS ready lab-assets
  stage "tests with libvirt VMs, and Secure Boot (tests/it ${VM_LANE_TESTS[*]}: one at a time; minutes)" \
    $L_VM cargo test --locked --test it -- --include-ignored --test-threads=1 --nocapture "${VM_LANE_TESTS[@]}"
}
REST_TESTS_DONE=target/rest-lane-tests.done
rm -f "$REST_TESTS_DONE"
qemu_lane() {
  while [ ! -e "$REST_TESTS_DONE" ] && kill -0 "$REST_LANE" 2>/dev/null; do sleep 5; done
  stage "arm64 lab assets (built after the amd64 ones, at the lowest priority: vm-lab/assets.sh --arm64)" \
    $L_ASSETS_ARM64 ready lab-assets-arm64
  local skip=()
  for t in "${VM_LANE_TESTS[@]}"; do skip+=(--skip "$t"); done
  stage "tests with qemu VMs (tests/it e2e::vm but the vm lane's: one at a time; minutes)" \
    $L_QEMU cargo test --locked --test it -- --include-ignored --test-threads=1 --nocapture e2e::vm:: "${skip[@]}"
}
rest_lane() {
  # One test at a time here too: the VM lane's qemu has the other core. Two test threads beside
  # it made three busy threads on two cores, and timing-sensitive tests (a kill -9 every second,
  # a DNS rename read back) failed where they pass with the load they were written for.
  export RUST_TEST_THREADS=1
  stage "cargo test (each crate's unit tests, then tests/it but e2e::vm: in-process, hostile, end to end in namespaces)" \
    $L_REST cargo test --workspace --locked --no-fail-fast -- --include-ignored --skip e2e::vm::
  touch "$REST_TESTS_DONE"
  stage "the CMDB and in-process appliance tests on PostgreSQL (tests/pg/cluster.sh: a throwaway cluster)" $L_PG on_postgres
  # Lint here, off the VM lanes' paths: the vm lane waits only for the test build, the qemu lane
  # for the tests above, and neither cargo of theirs then waits for clippy's lock on target/.
  stage "cargo clippy" $L_CLIPPY cargo clippy --workspace --all-targets --locked -- -D warnings
  # The book: its reference pages must be what the binary prints, every link must resolve, and
  # it must build (mdBook, installed once).
  stage "mdBook and cargo-deb (installed in the background since the start)" $L_TOOLS eval 'ready tools-install | tail -n 3'
  stage "the book (tools/book.sh --check: reference pages, links, mdbook build)" \
    $L_BOOK tools/book.sh --check target/debug/rackboot
  stage "Debian package with BootOS: build and check (tools/deb.sh --dev --bootos)" $L_DEB deb
}
# lane NAME FUNCTION: runs FUNCTION under `set -e`, prefixing its lines with the lane's name and
# its seconds so far (one test at a time per lane: the gap between two `test ... ok` lines is a
# test's time); returns its status.
lane() {
  local name=$1 t0=$SECONDS rc line; shift
  set +e
  (set -e; "$@") 2>&1 | while IFS= read -r line || [ -n "$line" ]; do
    printf '%s %5d | %s\n' "$name" "$((SECONDS - t0))" "$line"
  done
  rc=${PIPESTATUS[0]}
  echo "== lane $name: exit $rc after $((SECONDS - t0)) s"
  return "$rc"
}
lane vm vm_lane &
VM_LANE=$!
lane rest rest_lane &
REST_LANE=$!
lane qemu qemu_lane &
QEMU_LANE=$!
failed=0
wait "$VM_LANE" || failed=1
wait "$REST_LANE" || failed=1
wait "$QEMU_LANE" || failed=1
echo "== all stages: $((SECONDS - STARTED)) s"
print_times
exit "$failed"
