//! End to end, with real peers in network namespaces (root; `#[ignore]`d for a plain `cargo
//! test`, run by the README's test command with `--include-ignored`): DHCP clients, TFTP and DNS
//! clients, firmware in qemu, libvirt, a DHCP pair behind a relay, Windows media over SMB. They
//! hold the lab lock (`netns::Net` takes it), so one runs at a time however many threads the
//! harness has.

mod dhcp;
mod dns;
mod httpboot;
mod pair;
mod provision;
mod secureboot;
mod tftp;
mod vmlab;
mod windows;
