#!/usr/bin/env bash
# Installs what rackboot's tests, lab and benchmarks need on a fresh Debian 12 machine (root).
# Idempotent: skips apt when everything is present.
set -euo pipefail
PKGS=(iproute2 curl isc-dhcp-client udhcpc dhcpcd5 dnsmasq-base atftp tftp-hpa
      qemu-system-x86 ipxe-qemu ipxe ovmf cpio bind9-dnsutils zstd jq bc dpkg-dev
      debian-installer-12-netboot-amd64 ndisc6 openssl sslscan chromium chromium-driver isc-dhcp-relay lldpd
      ipmitool python3-venv python3-yaml python3-jsonschema python3-requests python3-configobj python3-jsonpatch
      minisign)
[ "${1:-}" = "--bench" ] && PKGS+=(kea-dhcp4-server kea-admin atftpd nginx-light wrk dnsperf)
# --libvirt: libvirt (daemons started by hand, no systemd) and what VirtualBMC's libvirt-python
# builds with, for tests/bmc_vbmc.rs.
[ "${1:-}" = "--libvirt" ] && PKGS+=(libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients libvirt-dev
                                     pkg-config python3-dev gcc)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  echo "setup: apt-get update"
  apt-get update -q >/dev/null
  echo "setup: apt-get install (${#missing[@]} packages; this can take a few minutes)"
  # policy-rc.d keeps package scripts from starting a DHCP server on this host's own network.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi
# The distributions' own answer-file validators, kept out of the host's system: pykickstart's
# ksvalidator (on PyPI only) in a venv, and cloud-init's schema check from its Debian package,
# unpacked rather than installed (installing it would enable its boot-time services here).
VALIDATORS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/validators"
if [ ! -x "$VALIDATORS/venv/bin/ksvalidator" ]; then
  echo "setup: pykickstart into $VALIDATORS/venv"
  mkdir -p "$VALIDATORS"
  /usr/bin/python3 -m venv "$VALIDATORS/venv"
  "$VALIDATORS/venv/bin/pip" install -q pykickstart==3.78
fi
# schemathesis, the OpenAPI-driven API tester (tests/schemathesis.rs), in a venv of its own.
if [ ! -x "$VALIDATORS/st/bin/schemathesis" ]; then
  echo "setup: schemathesis into $VALIDATORS/st"
  mkdir -p "$VALIDATORS"
  /usr/bin/python3 -m venv "$VALIDATORS/st"
  "$VALIDATORS/st/bin/pip" install -q schemathesis==4.32.5
fi
# sushy-tools, the Redfish BMC emulator (tests/bmc_sushy.rs runs `sushy-emulator --fake`).
if [ ! -x "$VALIDATORS/sushy/bin/sushy-emulator" ]; then
  echo "setup: sushy-tools into $VALIDATORS/sushy"
  mkdir -p "$VALIDATORS"
  /usr/bin/python3 -m venv "$VALIDATORS/sushy"
  "$VALIDATORS/sushy/bin/pip" install -q sushy-tools==2.2.0
fi
# Its libvirt driver (vm-lab/libvirt.sh: Redfish for the libvirt lab's VMs) needs libvirt-python.
if [ "${1:-}" = "--libvirt" ] && ! "$VALIDATORS/sushy/bin/python3" -c 'import libvirt' 2>/dev/null; then
  echo "setup: libvirt-python into $VALIDATORS/sushy"
  "$VALIDATORS/sushy/bin/pip" install -q libvirt-python==12.8.0
fi
# VirtualBMC, the IPMI BMC emulator in front of libvirt domains (tests/bmc_vbmc.rs).
if [ "${1:-}" = "--libvirt" ] && [ ! -x "$VALIDATORS/vbmc/bin/vbmc" ]; then
  echo "setup: virtualbmc into $VALIDATORS/vbmc"
  mkdir -p "$VALIDATORS"
  /usr/bin/python3 -m venv "$VALIDATORS/vbmc"
  "$VALIDATORS/vbmc/bin/pip" install -q virtualbmc==3.3.0 libvirt-python==12.8.0
fi
if [ ! -d "$VALIDATORS/cloud-init/usr/lib/python3/dist-packages/cloudinit" ]; then
  echo "setup: cloud-init (unpacked) into $VALIDATORS/cloud-init"
  (cd "$VALIDATORS" && { apt-get download -q cloud-init >/dev/null 2>&1 ||
     { apt-get update -q >/dev/null && apt-get download -q cloud-init >/dev/null 2>&1; }; } &&
   dpkg-deb -x cloud-init_*_all.deb cloud-init && rm -f cloud-init_*_all.deb)
fi
if ! command -v cargo >/dev/null; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null || { echo "setup: cargo not found (install Rust with rustup)"; exit 1; }
# cargo-deb builds the Debian package (tools/deb.sh). Pinned: tools/deb.sh relies on its
# behaviour (variants, --profile dev --no-build); cached in ~/.cargo/bin once built (~1-2 min).
CARGO_DEB_VERSION=3.8.0
if [ "$(cargo-deb --version 2>/dev/null | awk '{print $2}')" != "$CARGO_DEB_VERSION" ]; then
  echo "setup: cargo install cargo-deb $CARGO_DEB_VERSION (once; cargo shows its progress)"
  cargo install cargo-deb --locked --version "$CARGO_DEB_VERSION"
fi
