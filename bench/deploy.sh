#!/usr/bin/env bash
# Image write in BootOS, side by side: rackboot's `deploy_image` (HTTP stream, SHA-256, write,
# fsync) against `wget | dd` (no check) and `wget | tee disk | sha256sum` (busybox, checked) of
# the same 1 GiB lab image on the same SeaBIOS VM. Runs the lab (vm-lab/run.sh --baseline) with
# one VM: the baselines first, then the task whose deploy line prints rackboot's figure.
# The VM has VM_CPUS vCPUs (default 2: the agent hashes and writes on threads of their own).
# A benchmark: prints, never fails. About 10 minutes under TCG.
#
#   bench/deploy.sh   (as root)
#
# With --formats: no VM. The agent's deploy stages (hash, decode, write, fsync) on this host, for
# the lab image packed as gzip, xz and zstd beside the raw one: the served size, the rate on the
# disk and the CPU each format costs (bootos/agent/examples/deploy_formats.rs). About 8 minutes,
# nearly all of it packing (xz -6, zstd -19).
#
#   bench/deploy.sh --formats   (as root: the lab image is built on loop devices)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --formats ]; then
  set -e
  mkdir -p target/bench
  vm-lab/os-image.sh target/bench/lab.img >/dev/null
  cargo run --release --locked -q -p rackboot-agent --example deploy_formats -- target/bench/lab.img target/bench
  exit 0
fi
export VM_CPUS=${VM_CPUS:-2}
echo "VM: $VM_CPUS vCPUs"
vm-lab/run.sh --bios 1 --uefi 0 --baseline 2>&1 | grep -E "^== baseline|MB/s" || true
