#!/usr/bin/env bash
# The test command: installs what the tests need, then runs formatting and lint checks and every
# test, end-to-end ones included (they need root: network namespaces and real DHCP clients).
# One debug build serves every stage, the Debian package check included; the lab's assets are
# built once. Each stage prints how many seconds it took.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
[ "$(id -u)" = 0 ] || { echo "test.sh: run as root (the end-to-end tests create network namespaces)"; exit 1; }
# One clean build per run: cargo's incremental cache would only add gigabytes to the disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
STARTED=$SECONDS
# ticks: sets TICKS to the CPU time (user and system, in clock ticks) of this shell's
# waited-for children so far (read in this shell: a command substitution is another process).
ticks() {
  local stat
  read -r stat < "/proc/$BASHPID/stat"
  set -- ${stat##*) }
  TICKS=$(( ${14} + ${15} ))
}
# stage NAME COMMAND...: runs one stage, then prints its seconds and the CPU seconds it used.
stage() {
  local name=$1 t0=$SECONDS c0; shift
  ticks; c0=$TICKS
  echo "== $name"
  "$@"
  ticks
  echo "== $name: $((SECONDS - t0)) s ($(( (TICKS - c0) / $(getconf CLK_TCK) )) s of CPU)"
}

[ -x "$HOME/.cargo/bin/cargo" ] && PATH="$HOME/.cargo/bin:$PATH"
stage "cargo fmt --check" cargo fmt --all -- --check
# The test build needs nothing the set-up installs (cargo and its C compiler come before it), so it
# compiles from the start while apt-get and pip download (on a fresh machine, minutes of each).
# (A machine without a C compiler gets one from the set-up first.)
mkdir -p target
start_build() {
  cargo test --workspace --locked --no-run >target/test-build.log 2>&1 &
  BUILD=$!
  trap 'kill "$BUILD" 2>/dev/null || true' EXIT
}
build_ready() {
  local rc=0
  wait "$BUILD" || rc=$?
  trap - EXIT
  grep -vE '^ +(Compiling|Downloaded|Downloading|Blocking) ' target/test-build.log
  return "$rc"
}
command -v cc >/dev/null && start_build
setup() { source tools/setup.sh --libvirt --no-cargo-deb; }
stage "setup (tools/setup.sh --libvirt: Debian packages, libvirt and the BMC emulators, validators; skipped when present)" setup
[ -n "${BUILD:-}" ] || start_build

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
rm -f target/lab-assets.rc target/lab-assets-arm64.rc
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
# job NAME COMMAND...: runs COMMAND with its output in target/NAME.log and its exit status in
# target/NAME.rc, for `ready NAME`.
job() {
  local name=$1; shift
  "$@" >"target/$name.log" 2>&1 && echo 0 >"target/$name.rc" || echo 1 >"target/$name.rc"
}
(
  job lab-assets nice -n 10 bash -c lab_assets
  job lab-assets-arm64 low 19 vm-lab/assets.sh --arm64 target/lab-assets/boot
) &
# ready NAME: waits for a background job's status file target/NAME.rc (a lane is a subshell,
# which cannot `wait` for this shell's child), prints the job's log, returns its status.
ready() {
  while [ ! -s "target/$1.rc" ]; do sleep 2; done
  sed "s/^/$1 | /" "target/$1.log"
  return "$(cat "target/$1.rc")"
}

# mdBook for the book stage and cargo-deb for the package's, compiled at the lowest priority from
# the start: they take the cycles the builds and tests leave (a fresh machine compiles them for
# minutes), not a lane's time.
rm -f target/tools-install.rc
job tools-install low 19 bash -c 'tools/book.sh --install-mdbook && tools/setup.sh --cargo-deb' &

stage "build the tests (compiling since the start; one build for every stage below)" build_ready
# The same CMDB unit tests and the in-process appliance tests once more with the CMDB on
# PostgreSQL: a throwaway cluster on a Unix socket, a schema per test. Left out: tests of the
# embedded file itself (its bytes, size, quarantine, backup and restore of the file), the UI in
# a browser, and what runs on clusters of its own anyway.
on_postgres() {
  PGLAB=$(mktemp -d /tmp/rackboot-pg.XXXXXX); chmod 755 "$PGLAB"
  trap 'tests/pg/cluster.sh stop "$PGLAB"' EXIT
  PGURL=$(tests/pg/cluster.sh start "$PGLAB")
  local skip=(--skip the_admin_files_work_and_an_old_token_file_survives_the_upgrade
              --skip no_secret_reaches_the_log_or_any_answer --skip quarantine --skip store::tests --skip ui_
              --skip shared_plugins)  # filters match substrings: plugins:: would take it, on its own cluster
  # (Only these crates' unit tests open a CMDB: the others' would run the same again.)
  RACKBOOT_TEST_POSTGRES=$PGURL cargo test --locked -p rackboot-store -p rackboot-control -p rackboot-kv --lib -- "${skip[@]}"
  RACKBOOT_TEST_POSTGRES=$PGURL cargo test --locked --test it -- \
    api:: api_contract:: dhcp_inprocess:: agent_inprocess:: agent_json:: racks:: users:: audit:: templates:: \
    bmc_api:: plugins:: tls:: dns_inprocess:: kill9:: kill9_provision:: sigterm:: provision_image:: provision_installer:: \
    plugin_agent:: boot_http:: lifecycle:: tang:: \
    hostile::enroll_nonce:: hostile::conn_limits:: hostile::operator:: hostile::sightings::a_flood_of_boot_script \
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
VM_LANE_TESTS=(e2e::vm::provision:: e2e::vm::secureboot:: e2e::vm::vbmc:: e2e::vm::vmedia::)
vm_lane() {
  stage "lab assets (built in the background since the set-up: vm-lab/assets.sh, bootos/tools.sh, vm-lab/os-image.sh)" \
    ready lab-assets
  stage "tests with libvirt VMs, and Secure Boot (tests/it ${VM_LANE_TESTS[*]}: one at a time; minutes)" \
    cargo test --locked --test it -- --include-ignored --test-threads=1 --nocapture "${VM_LANE_TESTS[@]}"
}
REST_TESTS_DONE=target/rest-lane-tests.done
rm -f "$REST_TESTS_DONE"
qemu_lane() {
  while [ ! -e "$REST_TESTS_DONE" ] && kill -0 "$REST_LANE" 2>/dev/null; do sleep 5; done
  stage "arm64 lab assets (built after the amd64 ones, at the lowest priority: vm-lab/assets.sh --arm64)" \
    ready lab-assets-arm64
  local skip=()
  for t in "${VM_LANE_TESTS[@]}"; do skip+=(--skip "$t"); done
  stage "tests with qemu VMs (tests/it e2e::vm but the vm lane's: one at a time; minutes)" \
    cargo test --locked --test it -- --include-ignored --test-threads=1 --nocapture e2e::vm:: "${skip[@]}"
}
rest_lane() {
  # One test at a time here too: the VM lane's qemu has the other core. Two test threads beside
  # it made three busy threads on two cores, and timing-sensitive tests (a kill -9 every second,
  # a DNS rename read back) failed where they pass with the load they were written for.
  export RUST_TEST_THREADS=1
  stage "cargo test (each crate's unit tests, then tests/it but e2e::vm: in-process, hostile, end to end in namespaces)" \
    cargo test --workspace --locked --no-fail-fast -- --include-ignored --skip e2e::vm::
  touch "$REST_TESTS_DONE"
  stage "the CMDB and in-process appliance tests on PostgreSQL (tests/pg/cluster.sh: a throwaway cluster)" on_postgres
  # Lint here, off the VM lanes' paths: the vm lane waits only for the test build, the qemu lane
  # for the tests above, and neither cargo of theirs then waits for clippy's lock on target/.
  stage "cargo clippy" cargo clippy --workspace --all-targets --locked -- -D warnings
  # The book: its reference pages must be what the binary prints, every link must resolve, and
  # it must build (mdBook, installed once).
  stage "mdBook and cargo-deb (installed in the background since the start)" eval 'ready tools-install | tail -n 3'
  stage "the book (tools/book.sh --check: reference pages, links, mdbook build)" \
    tools/book.sh --check target/debug/rackboot
  stage "Debian package with BootOS: build and check (tools/deb.sh --dev --bootos)" deb
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
exit "$failed"
