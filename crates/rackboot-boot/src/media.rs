//! Where imported Windows media sit under the TFTP root, and which media a machine boots.

/// The directory under the TFTP root holding every imported media (also the share's root).
pub const DIR: &str = "windows";
/// The boot manager DHCP names, at the top of each media directory.
pub const BOOTMGR: &str = "bootmgfw.efi";

/// The media a machine pinned to profile `pinned` boots, when that is a Windows profile (DHCP,
/// TFTP and the answer file's preview all ask this).
pub fn pinned_media(
    profiles: &std::collections::BTreeMap<String, rackboot_config::Profile>,
    pinned: Option<&str>,
) -> Option<String> {
    profiles.get(pinned?)?.windows.clone()
}

/// The file a UEFI x64 PXE client booting `media` is handed first, relative to the TFTP root.
pub fn boot_file(media: &str) -> String {
    format!("{DIR}/{media}/{BOOTMGR}")
}
