//! End to end, with real peers in network namespaces (root; `#[ignore]`d for a plain `cargo
//! test`, run by the README's test command with `--include-ignored`): DHCP, TFTP and DNS clients
//! and a DHCP pair behind a relay here; firmware in qemu and libvirt under [`vm`]. Each holds the
//! lab lock (`netns::Net` takes it), so one runs at a time in a process however many threads the
//! harness has. `tools/test.sh` runs `e2e::vm` in a process of its own beside all the other
//! tests: a VM under TCG keeps one core busy, the rest of the suite the other.

mod ansible;
mod dhcp;
mod dhcp6;
mod dns;
mod fallback;
mod pair;
mod proxy;
mod tftp;
mod vm;
