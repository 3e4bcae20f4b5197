#!/usr/bin/env bash
# The test command: installs what the tests need, then runs formatting and lint checks and every
# test, end-to-end ones included (they need root: network namespaces and real DHCP clients).
# One debug build serves every stage, the Debian package check included. Each stage prints how
# many seconds it took.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
[ "$(id -u)" = 0 ] || { echo "test.sh: run as root (the end-to-end tests create network namespaces)"; exit 1; }
# One clean build per run: cargo's incremental cache would only add gigabytes to the disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
STARTED=$SECONDS
# stage NAME COMMAND...: runs one stage, then prints its seconds.
stage() {
  local name=$1 t0=$SECONDS; shift
  echo "== $name"
  "$@"
  echo "== $name: $((SECONDS - t0)) s"
}

setup() { source tools/setup.sh --libvirt; }
stage "setup (tools/setup.sh --libvirt: Debian packages, libvirt and the BMC emulators, validators, cargo-deb; skipped when present)" setup
stage "cargo fmt --check" cargo fmt --all -- --check
stage "cargo clippy" cargo clippy --workspace --all-targets --locked -- -D warnings
stage "cargo test (each crate's unit tests, then tests/it: in-process, hostile, end-to-end; VM tests take minutes)" \
  cargo test --workspace --locked --no-fail-fast -- --include-ignored

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
  RACKBOOT_TEST_POSTGRES=$PGURL cargo test --locked --workspace --lib -- "${skip[@]}"
  RACKBOOT_TEST_POSTGRES=$PGURL cargo test --locked --test it -- \
    api:: api_contract:: dhcp_inprocess:: agent_inprocess:: agent_json:: racks:: users:: audit:: templates:: \
    bmc_api:: plugins:: tls:: dns_inprocess:: kill9:: kill9_provision:: sigterm:: provision_image:: provision_installer:: \
    plugin_agent:: boot_http:: \
    hostile::enroll_nonce:: hostile::conn_limits:: hostile::operator:: hostile::sightings::a_flood_of_boot_script \
    "${skip[@]}"
  tests/pg/cluster.sh stop "$PGLAB"; trap - EXIT
}
stage "the CMDB and in-process appliance tests on PostgreSQL (tests/pg/cluster.sh: a throwaway cluster)" on_postgres

# The book: its reference pages must be what the binary prints, every link must resolve, and it
# must build (mdBook, installed once).
stage "the book (tools/book.sh --check: reference pages, links, mdbook build)" \
  tools/book.sh --check target/debug/rackboot

# The Debian package from the debug build the tests just made (no release build: see tools/deb.sh),
# carrying the BootOS the end-to-end tests built (from bootos/build.sh's cache: seconds).
deb() {
  bootos/build.sh --kernel cloud target/deb-bootos-cloud
  tools/deb.sh --dev --bootos target/deb-bootos-cloud
}
stage "Debian package with BootOS: build and check (tools/deb.sh --dev --bootos)" deb
echo "== all stages: $((SECONDS - STARTED)) s"
