#!/usr/bin/env bash
# The test command: installs what the tests need, then runs formatting and lint checks and every
# test, end-to-end ones included (they need root: network namespaces and real DHCP clients).
# One debug build serves every stage, the Debian package check included.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
[ "$(id -u)" = 0 ] || { echo "test.sh: run as root (the end-to-end tests create network namespaces)"; exit 1; }
# One clean build per run: cargo's incremental cache would only add gigabytes to the disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
echo "== setup (tools/setup.sh --libvirt: Debian packages, libvirt and the BMC emulators, validators, cargo-deb; skipped when present)"
source tools/setup.sh --libvirt
echo "== cargo fmt --check"; cargo fmt --all -- --check
echo "== cargo clippy"; cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test (unit, integration, end-to-end; cargo prints each test as it finishes, VM tests take minutes)"
cargo test --workspace --locked -- --include-ignored
# The same CMDB unit tests and the in-process appliance tests once more with the CMDB on
# PostgreSQL: a throwaway cluster on a Unix socket, a schema per test. Left out: tests of the
# embedded file itself (its bytes, size, quarantine, backup and restore of the file).
echo "== the CMDB and in-process appliance tests on PostgreSQL (tests/pg/cluster.sh: a throwaway cluster)"
PGLAB=$(mktemp -d /tmp/rackboot-pg.XXXXXX); chmod 755 "$PGLAB"
trap 'tests/pg/cluster.sh stop "$PGLAB"' EXIT
PGURL=$(tests/pg/cluster.sh start "$PGLAB")
RACKBOOT_TEST_POSTGRES=$PGURL cargo test --locked --lib \
    --test api --test api_contract --test dhcp_inprocess --test agent_inprocess --test agent_json --test racks \
    --test users --test audit --test templates --test bmc_api --test plugins --test tls \
    --test dns_inprocess --test kill9 --test kill9_provision --test provision_image --test provision_installer \
    --test plugin_agent --test boot_http \
    -- --skip the_admin_files_work_and_an_old_token_file_survives_the_upgrade \
       --skip no_secret_reaches_the_log_or_any_answer --skip quarantine --skip store::tests
# The hostile-VLAN attacks that run in-process, on PostgreSQL too (the namespace, flood and
# two-appliance ones already ran above, the last on a cluster of their own).
RACKBOOT_TEST_POSTGRES=$PGURL cargo test --locked --test hostile -- enroll_nonce:: conn_limits:: operator:: \
    sightings::a_flood_of_boot_script
tests/pg/cluster.sh stop "$PGLAB"; trap - EXIT
# The book: its reference pages must be what the binary prints, every link must resolve, and it
# must build (mdBook, installed once).
echo "== the book (tools/book.sh --check: reference pages, links, mdbook build)"
tools/book.sh --check target/debug/rackboot
# The Debian package from the debug build the tests just made (no release build: see tools/deb.sh),
# carrying the BootOS the end-to-end tests built (from bootos/build.sh's cache: seconds).
echo "== Debian package with BootOS: build and check (tools/deb.sh --dev --bootos)"
bootos/build.sh --kernel cloud target/deb-bootos-cloud
tools/deb.sh --dev --bootos target/deb-bootos-cloud
