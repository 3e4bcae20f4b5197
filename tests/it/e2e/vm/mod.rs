//! The end-to-end runs with virtual machines: firmware (SeaBIOS, OVMF, Secure Boot) in qemu
//! under TCG, and libvirt domains behind VirtualBMC and sushy-emulator (libvirtd is one daemon per
//! machine). `tools/test.sh` runs this module in its own process, one test at a time; nothing
//! outside it may start a VM or libvirtd.

mod day_two;
mod disk_crypt;
mod fallback;
mod installer;
mod ipv6;
mod layout;
mod provision;
mod secureboot;
mod vbmc;
mod vmedia;
mod vmlab;
mod windows;
