//! How a machine boots, as its record says.

use serde::Deserialize;

/// What a UEFI x64 PXE client is handed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum UefiLoader {
    /// iPXE (`boot.uefi_x64`), which loads kernel and initrd over HTTP. Unsigned: a machine
    /// with Secure Boot on refuses it.
    Ipxe,
    /// The signed chain: Microsoft-signed shim (`boot.shim`), then Debian's signed network
    /// GRUB (`grubx64.efi`, the name shim asks for) with a config rendered per machine, kernel
    /// and initrd over TFTP. Boots with Secure Boot on or off.
    Shim,
    /// The firmware's own HTTPS boot (UEFI HTTP Boot, DHCP arch 16): BootOS as one signed
    /// image (`bootos/bootos.efi`) over TLS from the appliance, whose CA the firmware must
    /// trust (`rackboot tls efi-ca`); BootOS's agent fetches its nonce over pinned TLS, so
    /// nothing of the boot travels in the clear. A PXE client (arch 7) of such a machine gets
    /// the signed chain instead: PXE has no TLS.
    Https,
}

impl UefiLoader {
    /// The name the timeline and the API use.
    pub fn name(self) -> &'static str {
        match self {
            UefiLoader::Ipxe => "ipxe",
            UefiLoader::Shim => "shim",
            UefiLoader::Https => "https",
        }
    }
}

/// A boot profile's files for arm64 machines (DHCP option 93 arch 11 or 19), where one profile
/// boots both architectures: their own kernel and initrd, and their own command line where it
/// differs (the serial console is `ttyAMA0` there), else the profile's. A profile without them
/// boots its one kernel on whatever machine it is pinned to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchBoot {
    pub kernel: String,
    pub initrd: String,
    #[serde(default)]
    pub cmdline: Option<String>,
}

/// Whether a machine's last DHCP architecture (`Machine::last_arch`, the planner's names) is
/// arm64.
pub fn is_arm64(last_arch: Option<&str>) -> bool {
    matches!(last_arch, Some("uefi-arm64" | "http-arm64"))
}

/// The installer answer files rackboot renders (an installer profile's `answers`).
pub const ANSWER_KINDS: [&str; 3] = ["kickstart", "preseed", "autoinstall"];

/// The folder under the Windows boot directory that holds per-machine answer files.
pub const UNATTEND_DIR: &str = "unattend";

/// A Windows media set's name: a folder under the Windows boot directory (a hostname's
/// characters, and not the answer-file folder).
pub fn valid_media_name(name: &str) -> bool {
    crate::records::valid_hostname(name) && name != UNATTEND_DIR
}
