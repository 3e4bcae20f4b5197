#!/usr/bin/env bash
# Installs what rackboot's tests, lab and benchmarks need on a fresh Debian 12 machine (root).
# Idempotent: skips apt when everything is present.
#   tools/setup.sh [--lab] [--libvirt] [--arm64] [--bench] [--no-cargo-deb]
#   tools/setup.sh --cargo-deb
#   --lab      only what the main job (vm-lab/run.sh) uses: no test tools, validators or cargo-deb
#   --arm64    with --lab: arm64 VMs and BootOS for arm64 too (the tests always have them)
#   --libvirt  libvirt and the BMC emulators (sushy-tools, VirtualBMC)
#   --bench    the reference servers bench/ compares against
#   --no-cargo-deb  all but cargo-deb (tools/test.sh compiles it later, in the background)
#   --cargo-deb     only cargo-deb
#   --env           only the download bounds below (exported into the caller's shell)
set -euo pipefail
# Every download bounded and retried, for this script and everything started after it: apt-get
# (tools/apt.conf: 30 s without a byte fails a try, three more tries), pip, npm and cargo
# (which bounds each request itself: http.timeout 30 s, below 10 B/s for that long fails).
export APT_CONFIG="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/apt.conf"
export PIP_DEFAULT_TIMEOUT=30 PIP_RETRIES=3
export npm_config_fetch_timeout=30000 npm_config_fetch_retries=3
export CARGO_NET_RETRY=3 CARGO_HTTP_TIMEOUT=30
SETUP_LAB=0 SETUP_LIBVIRT=0 SETUP_BENCH=0 SETUP_ARM64=0 SETUP_CARGO_DEB=1
if ! command -v cargo >/dev/null; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
# cargo-deb builds the Debian package (tools/deb.sh). Pinned: tools/deb.sh relies on its
# behaviour (variants, --profile dev --no-build); cached in ~/.cargo/bin once built (~1-2 min).
CARGO_DEB_VERSION=3.8.0
install_cargo_deb() {
  if [ "$(cargo-deb --version 2>/dev/null | awk '{print $2}')" != "$CARGO_DEB_VERSION" ]; then
    echo "setup: cargo install cargo-deb $CARGO_DEB_VERSION (once; cargo shows its progress)"
    cargo install cargo-deb --locked --version "$CARGO_DEB_VERSION"
  fi
}
for arg in "$@"; do
  case $arg in
    --lab) SETUP_LAB=1 ;;
    --libvirt) SETUP_LIBVIRT=1 ;;
    --arm64) SETUP_ARM64=1 ;;
    --bench) SETUP_BENCH=1 ;;
    --no-cargo-deb) SETUP_CARGO_DEB=0 ;;
    --cargo-deb) install_cargo_deb; return 0 2>/dev/null || exit 0 ;;
    --env) return 0 2>/dev/null || exit 0 ;;
    *) echo "setup: unknown option $arg (use --lab, --libvirt, --arm64, --bench, --no-cargo-deb, --cargo-deb, --env)"
       return 2 2>/dev/null || exit 2 ;;
  esac
done
# The lab: qemu with both firmwares, iPXE, the rack switch's relay, LLDP and router advertisements,
# plugin signing, and what its report uses. bootos/build.sh and vm-lab/os-image.sh bring their own.
PKGS=(iproute2 curl qemu-system-x86 ipxe-qemu ipxe ovmf cpio zstd jq bc bind9-dnsutils
      isc-dhcp-relay lldpd radvd minisign openssl ipmitool python3-venv systemd-boot-efi sbsigntool)
# openipmi (tests): ipmi_sim, a BMC simulator the in-band account test sets users up on.
# xorriso, mtools (with grub-efi-amd64-bin): grub-mkrescue makes virtual-media boot ISOs.
# qemu-img: the appliance converts qcow2 images to raw with it (the Debian package recommends it).
PKGS+=(qemu-utils)
# What vm-lab/os-image.sh builds the lab image with (it installs them itself too, but here they
# come before it runs beside BootOS's build, which downloads with apt-get).
PKGS+=(debootstrap dosfstools mtools fdisk e2fsprogs)
[ $SETUP_LAB = 1 ] || PKGS+=(isc-dhcp-client udhcpc dhcpcd5 dnsmasq-base atftp tftp-hpa dpkg-dev
      debian-installer-12-netboot-amd64 ndisc6 sslscan chromium chromium-driver
      python3-yaml python3-jsonschema python3-requests python3-configobj python3-jsonpatch
      samba smbclient wimtools grub-efi-amd64-bin postgresql kea-admin squid iperf3 prometheus
      ansible-core openssh-server clevis openipmi xorriso mtools slapd ldap-utils)
# arm64 machines in the lab (qemu-system-aarch64, AAVMF) and the cross toolchain BootOS's agent
# is built with for arm64 (bootos/build.sh --arch arm64).
[ $SETUP_LAB = 0 ] && SETUP_ARM64=1
[ $SETUP_ARM64 = 1 ] && PKGS+=(qemu-system-arm qemu-efi-aarch64 gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
[ $SETUP_BENCH = 1 ] && PKGS+=(kea-dhcp4-server kea-dhcp6-server kea-admin atftpd nginx-light wrk dnsperf)
# --libvirt: libvirt (daemons started by hand, no systemd) and what VirtualBMC's libvirt-python
# builds with, for tests/it/e2e/vm/vbmc.rs and `vm-lab/run.sh --libvirt`.
[ $SETUP_LIBVIRT = 1 ] && PKGS+=(libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients libvirt-dev
                                 pkg-config python3-dev gcc)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  echo "setup: apt-get update"
  apt-get update -q >/dev/null || { echo "setup: apt-get update failed (above)"; exit 1; }
  echo "setup: apt-get install (${#missing[@]} packages; this can take a few minutes)"
  # policy-rc.d keeps package scripts from starting a DHCP server on this host's own network.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  setup_rc=0
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null || setup_rc=$?
  rm -f /usr/sbin/policy-rc.d
  if [ $setup_rc != 0 ]; then
    still=()
    for p in "${missing[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || still+=("$p"); done
    echo "setup: apt-get install failed (exit $setup_rc); not installed: ${still[*]}"
    exit 1
  fi
fi
# The Python tools below, each in a venv of its own under target/validators, kept out of the
# host's system. Their pip runs are mostly downloads: they run side by side.
VALIDATORS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/validators"
VENV_PIDS=()
# venv NAME PROBE PACKAGE...: unless PROBE succeeds, pip-installs PACKAGEs into the venv NAME in
# the background (its output goes to NAME.log, shown if it fails).
venv() {
  local name=$1 probe=$2; shift 2
  eval "$probe" 2>/dev/null && return 0
  echo "setup: $* into $VALIDATORS/$name"
  mkdir -p "$VALIDATORS"
  { { { [ -x "$VALIDATORS/$name/bin/pip" ] || /usr/bin/python3 -m venv "$VALIDATORS/$name"; } &&
      "$VALIDATORS/$name/bin/pip" install -q "$@"; } >"$VALIDATORS/$name.log" 2>&1 ||
    { cat "$VALIDATORS/$name.log"; echo "setup: pip install $* failed"; exit 1; }; } &
  VENV_PIDS+=($!)
}
if [ $SETUP_LAB = 0 ]; then
  # The distributions' answer-file validators: pykickstart's ksvalidator (on PyPI only).
  venv venv '[ -x "$VALIDATORS/venv/bin/ksvalidator" ]' pykickstart==3.78
  # schemathesis, the OpenAPI-driven API tester (tests/it/api/schemathesis.rs).
  venv st '[ -x "$VALIDATORS/st/bin/schemathesis" ]' schemathesis==4.32.5
fi
# node-oidc-provider, the OpenID provider the tests log in through (tests/it/ui/oidc.rs), pinned by
# tests/oidc/package-lock.json; Node.js and npm come with the machine, else from Debian.
if [ $SETUP_LAB = 0 ] && [ ! -d "$(dirname "$VALIDATORS")/../tests/oidc/node_modules/oidc-provider" ]; then
  command -v npm >/dev/null || { apt-get install -y -q --no-install-recommends nodejs npm >/dev/null ||
    { echo "setup: apt-get install nodejs npm failed"; exit 1; }; }
  echo "setup: npm ci in tests/oidc (oidc-provider)"
  (cd "$(dirname "$VALIDATORS")/../tests/oidc" && npm ci --no-audit --no-fund -q >/dev/null) ||
    { echo "setup: npm ci in tests/oidc failed"; exit 1; }
fi
# sushy-tools, the Redfish BMC emulator (tests/it/bmc/sushy.rs runs `sushy-emulator --fake`), with
# libvirt-python for its libvirt driver (vm-lab/libvirt.sh: Redfish for the libvirt lab's VMs).
if [ $SETUP_LAB = 0 ] || [ $SETUP_LIBVIRT = 1 ]; then
  sushy=(sushy-tools==2.2.0)
  probe='[ -x "$VALIDATORS/sushy/bin/sushy-emulator" ]'
  if [ $SETUP_LIBVIRT = 1 ]; then
    sushy+=(libvirt-python==12.8.0)
    probe+=' && "$VALIDATORS/sushy/bin/python3" -c "import libvirt"'
  fi
  venv sushy "$probe" "${sushy[@]}"
fi
# virt-firmware's virt-fw-vars: enrols the appliance's Secure Boot certificate in a copy of
# OVMF's variable store (tests/it/e2e/vm/vmlab.rs: the signed BootOS image under Secure Boot).
venv vfw '[ -x "$VALIDATORS/vfw/bin/virt-fw-vars" ]' virt-firmware==26.10
# VirtualBMC, the IPMI BMC emulator in front of libvirt domains (tests/it/e2e/vm/vbmc.rs).
if [ $SETUP_LIBVIRT = 1 ]; then
  venv vbmc '[ -x "$VALIDATORS/vbmc/bin/vbmc" ]' virtualbmc==3.3.0 libvirt-python==12.8.0
fi
# /dev/kvm as Debian's udev rules leave it (root:kvm 0660). Some machines boot with it root-only:
# libvirtd then finds KVM in its QEMU capability probe but not when it checks the cache, throws
# the capabilities away and probes again at every call, so defining a domain hangs (VirtualBMC's
# boot-device change timed out). The lab's domains are TCG (`type='qemu'`) either way.
if [ $SETUP_LIBVIRT = 1 ] && [ -c /dev/kvm ] && getent group kvm >/dev/null; then
  chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
fi
if [ $SETUP_LAB = 0 ] && [ ! -d "$VALIDATORS/cloud-init/usr/lib/python3/dist-packages/cloudinit" ]; then
  echo "setup: cloud-init (unpacked) into $VALIDATORS/cloud-init"
  (cd "$VALIDATORS" && { apt-get download -q cloud-init >/dev/null 2>&1 ||
     { apt-get update -q >/dev/null && apt-get download -q cloud-init >/dev/null 2>&1; }; } &&
   dpkg-deb -x cloud-init_*_all.deb cloud-init && rm -f cloud-init_*_all.deb) ||
    { echo "setup: apt-get download cloud-init failed (the answer-file validators need it)"; exit 1; }
fi
command -v cargo >/dev/null || { echo "setup: cargo not found (install Rust with rustup)"; exit 1; }
# The arm64 agent's Rust standard library.
if [ $SETUP_ARM64 = 1 ] && command -v rustup >/dev/null &&
   ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
  echo "setup: rustup target add aarch64-unknown-linux-gnu"
  timeout 10m rustup target add aarch64-unknown-linux-gnu ||
    { echo "setup: rustup target add aarch64-unknown-linux-gnu failed or took over 10 minutes"; exit 1; }
fi
# Every venv's end is waited for, failed or not, before the set-up fails for one.
venvs_failed=0
for pid in "${VENV_PIDS[@]}"; do wait "$pid" || venvs_failed=1; done
[ $venvs_failed = 0 ] || { echo "setup: a Python tool did not install (above)"; exit 1; }
[ $SETUP_LAB = 1 ] || [ $SETUP_CARGO_DEB = 0 ] || install_cargo_deb
