//! rackboot's boot policy, above the store and below the services that answer a machine:
//!
//! - [`planner`]: the one policy seam that decides what a machine boots (DHCP's boot file,
//!   the script's profile), from its record, its firmware and the config.
//! - [`render`]: pure template rendering of boot scripts, identity scripts and installer answer
//!   files (minijinja, strict).
//! - [`templates`]: the boot templates admins override at run time, and the shared renderer.
//! - [`netcfg`]: an installed node's network as systemd-networkd files and network-config v2,
//!   and in each OS installer's own terms.
//! - [`media`]: where imported Windows media sit under the TFTP root.
//! - [`uki`]: BootOS as one UEFI image (systemd's EFI stub with kernel, initrd and command
//!   line as sections), what the firmware's HTTPS boot loads.

pub mod media;
pub mod netcfg;
pub mod planner;
pub mod render;
pub mod templates;
pub mod uki;
