//! The one policy seam: what a machine boots, given what it is and what it asked for.
//!
//! Pure functions, no I/O. DHCP asks [`plan_dhcp`] for the boot file; later the HTTP `/boot/ipxe`
//! endpoint and TFTP ask the same module, so the decision lives in one place.

use std::net::Ipv4Addr;

use rackboot_config::{BootFiles, UefiLoader};
use rackboot_model::mac::Mac;
use rackboot_store::{Machine, MachineState};

/// Client architecture from DHCP option 93 (RFC 4578, IANA processor architecture types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// 0: x86 BIOS (legacy PXE ROM).
    Bios,
    /// 6: x86 (32-bit) UEFI.
    UefiX86,
    /// 7 and 9: x86-64 UEFI (9 is "EFI BC", which firmware in the field sends for x64 too).
    UefiX64,
    /// 11: arm64 UEFI.
    UefiArm64,
    /// 16: x86-64 UEFI HTTP boot.
    HttpX64,
    /// 19: arm64 UEFI HTTP boot.
    HttpArm64,
    /// Anything else, by number.
    Other(u16),
}

impl Arch {
    /// Maps option 93's value.
    pub fn from_code(code: u16) -> Arch {
        match code {
            0 => Arch::Bios,
            6 => Arch::UefiX86,
            7 | 9 => Arch::UefiX64,
            11 => Arch::UefiArm64,
            16 => Arch::HttpX64,
            19 => Arch::HttpArm64,
            n => Arch::Other(n),
        }
    }

    /// Stable lowercase name stored in the CMDB and shown by the API.
    pub fn name(self) -> String {
        match self {
            Arch::Bios => "bios".into(),
            Arch::UefiX86 => "uefi-x86".into(),
            Arch::UefiX64 => "uefi-x64".into(),
            Arch::UefiArm64 => "uefi-arm64".into(),
            Arch::HttpX64 => "http-x64".into(),
            Arch::HttpArm64 => "http-arm64".into(),
            Arch::Other(n) => format!("arch-{n}"),
        }
    }
}

/// What a booting client told DHCP about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct DhcpBootRequest {
    pub mac: Mac,
    /// Option 93, if sent; a PXE client without it is treated as BIOS.
    pub arch: Option<Arch>,
    /// User class "iPXE" or option 175 present: the client is iPXE already.
    pub is_ipxe: bool,
    /// The client's subnet's choice of UEFI loader, if it makes one (else `files.uefi_loader`).
    pub uefi_loader: Option<UefiLoader>,
    /// The imported Windows media of the machine's pinned profile, if it is a Windows one.
    pub windows: Option<String>,
    /// The machine boots its own disk (see [`boots_own_disk`]).
    pub boots_disk: bool,
    /// The machine boots BootOS (the discovery profile: no pin, no installer, not its disk):
    /// HTTPS boot has BootOS's image to hand it.
    pub bootos: bool,
}

/// Where the appliance is, for building boot answers.
#[derive(Debug, Clone)]
pub struct BootContext<'a> {
    /// Base URL of the HTTP server, without trailing slash, e.g. `http://198.18.0.1`.
    pub http_base: &'a str,
    /// The boot listener's base URL (firmware's HTTPS boot), e.g. `https://198.18.0.1:4433`;
    /// `None` when it is off (`https.boot_port`).
    pub https_base: Option<&'a str>,
    /// The appliance's address: TFTP next-server.
    pub next_server: Ipv4Addr,
    pub files: &'a BootFiles,
}

/// The boot part of a DHCP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DhcpBoot {
    /// `file` field / option 67: a TFTP file name or an `http://` URL.
    pub filename: String,
    /// siaddr: the TFTP server.
    pub next_server: Ipv4Addr,
    /// Option 60 in the reply: "PXEClient" or "HTTPClient".
    pub vendor_class: &'static str,
}

/// Whether a machine boots its own disk: installed, no profile pinned, no installer under way.
/// Its firmware is then offered no boot program (as Tinkerbell's `allowPXE: false`) and goes on
/// to its disk, instead of loading iPXE only to be told to exit, once per network boot entry;
/// UEFI x64 firmware, which would wait on each of those entries, gets the signed GRUB that starts
/// the disk's own loader. iPXE, where it is the NIC's own ROM, still gets the script that exits
/// to the disk.
pub fn boots_own_disk(state: MachineState, pinned: bool, installer_pending: bool) -> bool {
    state == MachineState::Installed && !pinned && !installer_pending
}

/// Decides the boot file for a PXE, HTTP-boot or iPXE client; `None` for an arch we cannot boot
/// and for most firmware of a machine that boots its own disk (see [`boots_own_disk`]).
pub fn plan_dhcp(req: &DhcpBootRequest, ctx: &BootContext<'_>) -> Option<DhcpBoot> {
    let arch = req.arch.unwrap_or(Arch::Bios);
    if req.boots_disk && !req.is_ipxe {
        // UEFI x64 gets the signed chain, whose GRUB chainloads the installed system's loader
        // from its disk (`grub/localboot.cfg`); the others go on to their disk.
        return (arch == Arch::UefiX64).then(|| DhcpBoot {
            filename: ctx.files.shim.clone(),
            next_server: ctx.next_server,
            vendor_class: "PXEClient",
        });
    }
    let pxe = |filename: &str| {
        Some(DhcpBoot { filename: filename.to_string(), next_server: ctx.next_server, vendor_class: "PXEClient" })
    };
    if req.is_ipxe {
        // iPXE asks again after chain-loading; sending it the binary again would loop forever.
        let filename = format!("{}/boot/ipxe?mac={}", ctx.http_base, req.mac);
        let vendor_class = if matches!(arch, Arch::HttpX64 | Arch::HttpArm64) { "HTTPClient" } else { "PXEClient" };
        return Some(DhcpBoot { filename, next_server: ctx.next_server, vendor_class });
    }
    let loader = req.uefi_loader.unwrap_or(ctx.files.uefi_loader);
    match arch {
        Arch::Bios => pxe(&ctx.files.bios),
        // Signed all the way: shim, then GRUB from beside it (see UefiLoader::Shim).
        // Microsoft's signed boot manager of the media: Secure Boot stays on.
        Arch::UefiX64 if req.windows.is_some() => pxe(&crate::media::boot_file(req.windows.as_deref().unwrap_or(""))),
        // PXE has no TLS: a machine set to HTTPS boot gets the signed chain from PXE.
        Arch::UefiX64 if matches!(loader, UefiLoader::Shim | UefiLoader::Https) => pxe(&ctx.files.shim),
        Arch::UefiX64 if ctx.files.uefi_x64_snp => pxe("snponly.efi"),
        Arch::UefiX64 => pxe(&ctx.files.uefi_x64),
        // Debian's signed arm64 shim, then its GRUB (Debian ships no arm64 iPXE); an empty
        // `boot.arm64` serves arm64 machines nothing.
        Arch::UefiArm64 | Arch::HttpArm64 if ctx.files.arm64.is_empty() => None,
        Arch::UefiArm64 => pxe(&ctx.files.arm64),
        // HTTPS boot holds BootOS's image only: an installer or a pinned profile goes on
        // through iPXE over HTTP, as does everything while the boot listener is off.
        Arch::HttpX64 if loader == UefiLoader::Https && req.bootos && ctx.https_base.is_some() => Some(DhcpBoot {
            filename: format!("{}/boot/files/{}", ctx.https_base.unwrap_or_default(), crate::uki::IMAGE_PATH),
            next_server: ctx.next_server,
            vendor_class: "HTTPClient",
        }),
        Arch::HttpX64 => Some(DhcpBoot {
            filename: format!("{}/boot/files/{}", ctx.http_base, ctx.files.uefi_x64),
            next_server: ctx.next_server,
            vendor_class: "HTTPClient",
        }),
        Arch::HttpArm64 => Some(DhcpBoot {
            filename: format!("{}/boot/files/{}", ctx.http_base, ctx.files.arm64),
            next_server: ctx.next_server,
            vendor_class: "HTTPClient",
        }),
        Arch::UefiX86 | Arch::Other(_) => None,
    }
}

/// What a machine boots when iPXE asks for its script: complete (every URL resolved), so the
/// renderer only formats it and the HTTP endpoint only reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
// One plan per boot request, moved not copied: boxing the larger variant would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum BootPlan {
    /// Kernel + initrd of a profile (discovery, an installer, a pinned profile).
    Profile(ProfileBoot),
    /// The machine is installed: boot its own disk.
    LocalDisk,
    /// A Windows profile: only UEFI PXE can start it (DHCP names the media's boot manager), so a
    /// loader asking for a script gets one that says so.
    Windows { profile: String, media: String },
}

/// A profile boot with everything resolved for one machine.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProfileBoot {
    pub name: String,
    /// Why this profile: `pinned` (an operator's pin), `installer` (a run's), or `discovery`.
    pub reason: &'static str,
    pub kernel_url: String,
    pub initrd_url: String,
    /// The kernel's and initrd's paths in the boot directory, for a loader that fetches them
    /// over TFTP (the signed GRUB); `None` for an `http://` URL served elsewhere.
    pub kernel_path: Option<String>,
    pub initrd_path: Option<String>,
    /// The initrd's file name (iPXE's EFI loader needs `initrd=<name>` on the command line).
    pub initrd_name: String,
    /// The profile's kernel command line, a template of the machine's values.
    pub cmdline: String,
    /// For an installer: the kind of its answer file (`preseed`, `kickstart`, `autoinstall`).
    pub answer: Option<String>,
    /// For an installer: the machine's own answer-file URL (`{{ answer_url }}`), as
    /// [`answer_url`] makes it; without a boot token until the boot endpoint adds one.
    pub answer_url: Option<String>,
    /// The command line starts the rackboot agent (`rackboot.url=`): the boot gets a one-time
    /// enrollment nonce when the script goes to the machine's own address.
    pub agent: bool,
}

/// What the boot planner needs besides the machine.
pub struct PlanContext<'a> {
    /// The appliance's HTTP base URL.
    pub http_base: &'a str,
    pub discovery_profile: &'a str,
    /// Every boot profile by name (config and API).
    pub profiles: &'a std::collections::BTreeMap<String, rackboot_config::Profile>,
}

/// A plan names a profile nobody defined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown boot profile {0:?}")]
pub struct UnknownProfile(pub String);

/// Where a token-less answer URL has its token: what a boot script sent to an address that
/// is not the machine's carries (the appliance refuses it).
pub const NO_TOKEN: &str = "no-token";

/// Machine `mac`'s answer-file URL for answer `kind` with its boot token (see
/// `rackboot_store::TokenUse::Answer`). Ubuntu's installer reads a cloud-init NoCloud seed: a
/// directory URL, to which it appends the file names.
pub fn answer_url(http_base: &str, kind: &str, mac: Mac, token: Option<&str>) -> String {
    let token = token.unwrap_or(NO_TOKEN);
    match kind {
        "autoinstall" => format!("{http_base}/boot/nocloud/{mac}/{token}/"),
        kind => format!("{http_base}/boot/answer/{kind}/{token}?mac={mac}"),
    }
}

/// The per-MAC decision: an operator's pin wins; then the installer a provisioning run set up;
/// installed machines boot their disk; everything else (unknown, discovered, queued, failed)
/// boots the discovery profile. A machine whose firmware last said it is arm64 gets the
/// profile's arm64 files where it has them.
pub fn plan_boot(mac: Mac, machine: Option<&Machine>, ctx: &PlanContext<'_>) -> Result<BootPlan, UnknownProfile> {
    let (name, reason) = match machine {
        Some(m) if m.boot_profile.is_some() => (m.boot_profile.clone().unwrap_or_default(), "pinned"),
        Some(m) if m.installer_pending() => {
            (m.installer.as_ref().map(|i| i.profile.clone()).unwrap_or_default(), "installer")
        }
        Some(m) if boots_own_disk(m.state, m.boot_profile.is_some(), m.installer_pending()) => {
            return Ok(BootPlan::LocalDisk)
        }
        _ => (ctx.discovery_profile.to_string(), "discovery"),
    };
    let p = ctx.profiles.get(&name).ok_or_else(|| UnknownProfile(name.clone()))?;
    if let Some(media) = &p.windows {
        return Ok(BootPlan::Windows { profile: name, media: media.clone() });
    }
    let arm64 = machine.and_then(|m| m.last_arch.as_deref());
    let (kernel, initrd, cmdline) = match p.arm64.as_ref().filter(|_| rackboot_model::boot::is_arm64(arm64)) {
        Some(a) => (&a.kernel, &a.initrd, a.cmdline.as_ref().unwrap_or(&p.cmdline)),
        None => (&p.kernel, &p.initrd, &p.cmdline),
    };
    let url = |path: &str| {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{}/boot/files/{}", ctx.http_base, path.trim_start_matches('/'))
        }
    };
    let local = |path: &str| {
        let remote = path.starts_with("http://") || path.starts_with("https://");
        (!remote).then(|| path.trim_start_matches('/').to_string())
    };
    let answer_url = p.answer.as_deref().map(|kind| answer_url(ctx.http_base, kind, mac, None));
    Ok(BootPlan::Profile(ProfileBoot {
        name,
        reason,
        kernel_url: url(kernel),
        initrd_url: url(initrd),
        kernel_path: local(kernel),
        initrd_path: local(initrd),
        initrd_name: initrd.rsplit('/').next().unwrap_or(initrd).to_string(),
        agent: cmdline.contains("rackboot.url="),
        cmdline: cmdline.clone(),
        answer: p.answer.clone(),
        answer_url,
    }))
}

#[cfg(test)]
mod tests;
