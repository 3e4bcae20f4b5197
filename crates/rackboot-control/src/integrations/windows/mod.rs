//! Windows from the operator's own media, the way WDS serves it but without Windows servers:
//!
//! 1. `rackboot windows import NAME DIR` copies a mounted install ISO (or a WinPE tree) into
//!    `<tftp root>/windows/NAME/`, every name lowercased, checks that the four files a network
//!    boot needs are there (`bootmgfw.efi`, the BCD, `boot.sdi`, `boot.wim`), records their
//!    SHA-256 in `rackboot-media.json`, and (with `wimupdate` at hand) puts a `startnet.cmd`
//!    into `boot.wim` that maps the share and starts Setup with the machine's answer file.
//! 2. A machine pinned to a profile with `windows = "NAME"` that PXE-boots as UEFI x64 is handed
//!    `windows/NAME/bootmgfw.efi` by DHCP: Microsoft's signed boot manager, so Secure Boot stays
//!    on. It asks TFTP for `\Boot\BCD` and the files the BCD names with backslash paths; TFTP
//!    maps them into the media of the machine leasing the asking address ([`tftp`]).
//! 3. WinPE maps `\\<appliance>\rackboot` (read-only, [`share`]) and runs Setup from it with
//!    `unattend\<its MAC>.xml`, rendered when the machine fetched its boot manager ([`unattend`]).
//!
//! No Windows media exists on the machines this was built on: the tests use stand-ins (an EFI
//! program placed as `bootmgfw.efi`, a WIM made by `wimcapture`), and a real Windows install
//! was not run.

pub mod media;
pub mod share;
pub mod tftp;
pub mod unattend;
pub mod wim;

pub use rackboot_model::boot::{valid_media_name, UNATTEND_DIR};

pub use rackboot_boot::media::{boot_file, pinned_media, BOOTMGR, DIR};
