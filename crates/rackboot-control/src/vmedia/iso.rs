//! The boot ISO: BootOS's kernel and initrd with a GRUB config that boots them with the
//! machine's command line, made by `grub-mkrescue` (GRUB's EFI image, xorriso and mtools from
//! Debian's grub-efi-amd64-bin, xorriso and mtools): UEFI boots it as a CD (El Torito), and it
//! is a hybrid image a USB key would boot too. And the static address BootOS comes up with
//! where no DHCP answers.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ipnet::Ipv4Net;

/// How long `grub-mkrescue` may take.
const BUILD_SECS: u64 = 120;
/// The file whose presence tells GRUB which disk is the ISO.
const MARKER: &str = "rackboot-vmedia";

/// A static IPv4 configuration for BootOS (`ip=` on the kernel command line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticNet {
    pub address: Ipv4Net,
    pub gateway: Option<Ipv4Addr>,
}

impl StaticNet {
    /// The kernel's `ip=<client>::<gateway>:<netmask>:::off` (BootOS picks the interface with
    /// the boot MAC).
    pub fn kernel_arg(&self) -> String {
        let gw = self.gateway.map(|g| g.to_string()).unwrap_or_default();
        format!("ip={}::{gw}:{}:::off", self.address.addr(), self.address.netmask())
    }
}

/// The GRUB config on the ISO.
pub fn grub_cfg(cmdline: &str) -> String {
    format!(
        "set timeout=0\nset default=0\nsearch --no-floppy --file --set=root /{MARKER}\nmenuentry \"rackboot BootOS\" {{\n  linux /bootos/vmlinuz {}\n  initrd /bootos/initrd.img\n}}\n",
        crate::render::grub_words(cmdline)
    )
}

/// Builds the ISO of `kernel` and `initrd` booting with `cmdline` at `out` (0600), through a
/// staging directory next to it that is removed whatever happens.
pub async fn build(tool: &Path, kernel: &Path, initrd: &Path, cmdline: &str, out: &Path) -> Result<(), String> {
    let dir = out.parent().ok_or("the ISO has no directory")?;
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(dir)
        .map_err(|e| format!("a staging directory in {}: {e}", dir.display()))?;
    let s = staging.path();
    let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
    std::fs::create_dir_all(s.join("bootos")).map_err(|e| io("staging", e))?;
    std::fs::create_dir_all(s.join("boot/grub")).map_err(|e| io("staging", e))?;
    for (from, to) in [(kernel, "bootos/vmlinuz"), (initrd, "bootos/initrd.img")] {
        // A hard link where the boot directory is on the same file system, else a copy.
        if std::fs::hard_link(from, s.join(to)).is_err() {
            std::fs::copy(from, s.join(to)).map_err(|e| io(&format!("copying {}", from.display()), e))?;
        }
    }
    std::fs::write(s.join("boot/grub/grub.cfg"), grub_cfg(cmdline)).map_err(|e| io("grub.cfg", e))?;
    std::fs::write(s.join(MARKER), b"").map_err(|e| io("marker", e))?;
    let partial = PathBuf::from(format!("{}.partial", out.display()));
    let run = tokio::process::Command::new(tool)
        .arg("-o")
        .arg(&partial)
        .arg(s)
        .args(["--", "-volid", "RACKBOOT"])
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(BUILD_SECS), run)
        .await
        .map_err(|_| format!("{} did not finish within {BUILD_SECS} s", tool.display()))?
        .map_err(|e| format!("{}: {e} (Debian packages grub-efi-amd64-bin, xorriso, mtools)", tool.display()))?;
    if !output.status.success() {
        let _ = std::fs::remove_file(&partial);
        let err = String::from_utf8_lossy(&output.stderr);
        return Err(format!("{} failed: {}", tool.display(), err.trim().chars().take(400).collect::<String>()));
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o600)).map_err(|e| io("the ISO", e))?;
    std::fs::rename(&partial, out).map_err(|e| io("the ISO", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grub_config_boots_bootos_with_the_command_line_as_it_is() {
        let cfg = grub_cfg("console=ttyS0 rackboot.url=https://198.18.0.1 rackboot.nonce=abc ip=198.18.0.70::198.18.0.1:255.255.255.0:::off");
        assert!(cfg.contains("search --no-floppy --file --set=root /rackboot-vmedia\n"), "{cfg}");
        assert!(cfg.contains("  linux /bootos/vmlinuz console=ttyS0 rackboot.url=https://198.18.0.1 rackboot.nonce=abc ip=198.18.0.70::198.18.0.1:255.255.255.0:::off\n"), "{cfg}");
        assert!(grub_cfg("x=$(reboot)").contains("'x=$(reboot)'"), "GRUB's own syntax is quoted");
    }

    #[test]
    fn the_static_address_is_the_kernel_s_ip_argument() {
        let n = StaticNet { address: "198.18.0.70/24".parse().unwrap(), gateway: Some([198, 18, 0, 1].into()) };
        assert_eq!(n.kernel_arg(), "ip=198.18.0.70::198.18.0.1:255.255.255.0:::off");
        let n = StaticNet { address: "10.1.2.3/16".parse().unwrap(), gateway: None };
        assert_eq!(n.kernel_arg(), "ip=10.1.2.3:::255.255.0.0:::off");
    }
}
