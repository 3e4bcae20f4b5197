//! `rackboot assets`: check and install the boot files a config needs.

use super::*;

#[derive(Subcommand)]
pub(super) enum AssetsCmd {
    /// List the boot assets the config needs and whether each is present; exits 1 if any is missing.
    Check {
        /// The config `rackboot serve` runs with. Default: the embedded one.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Copy the iPXE binaries and a BootOS build into the config's boot directory.
    ///
    /// iPXE comes from Debian's ipxe package (--ipxe-dir, /usr/lib/ipxe), BootOS from a build
    /// directory with vmlinuz and initrd.img (--bootos; the rackboot .deb installs one in
    /// /usr/share/rackboot/bootos when it was built with BootOS; from the source tree:
    /// bootos/build.sh --kernel generic DIR). Every source is checked first: if one is missing
    /// nothing is copied and the message names the package or command that provides it. Each file
    /// is written to a temporary name, synced, read back and compared (SHA-256) and then renamed
    /// into place, so a running appliance never serves a half-written file. Files already
    /// identical are left alone; running it again is safe.
    #[command(after_help = "\
Examples:
  apt-get install ipxe
  rackboot assets install --config /etc/rackboot/rackboot.toml
  bootos/build.sh --kernel generic /tmp/bootos && rackboot assets install --bootos /tmp/bootos")]
    Install {
        /// The config `rackboot serve` runs with (its boot directory and file names). Default: the embedded one.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
        /// A BootOS build: vmlinuz, initrd.img (and rackboot-agent, rackboot-agent.service if
        /// present; arm64/vmlinuz and arm64/initrd.img, from bootos/build.sh --arch arm64, for
        /// arm64 machines).
        #[arg(long, value_name = "DIR", default_value = rackboot::assets::BOOTOS_DIR)]
        bootos: PathBuf,
        /// Where the iPXE binaries are (undionly.kpxe, ipxe.efi, snponly.efi).
        #[arg(long, value_name = "DIR", default_value = rackboot::assets::IPXE_DIR)]
        ipxe_dir: PathBuf,
        /// With boot.uefi_loader = "shim": the root Debian's shim-signed and
        /// grub-efi-amd64-signed packages are installed (/) or unpacked (dpkg-deb -x) in; the
        /// arm64 chain (shim-signed:arm64, grub-efi-arm64-signed) is taken from it too.
        #[arg(long, value_name = "DIR", default_value = "/")]
        signed_root: PathBuf,
    },
}
pub(super) fn assets(cmd: AssetsCmd) -> anyhow::Result<()> {
    use rackboot::assets;
    match cmd {
        AssetsCmd::Check { config } => {
            let cfg = Config::load(config.as_deref())?;
            let needed = assets::needed(&cfg);
            let gaps = assets::missing(&cfg.tftp.root, &needed);
            println!("boot directory {}", cfg.tftp.root.display());
            for a in &needed {
                let state = if gaps.iter().any(|m| m.asset == *a) { "MISSING" } else { "ok" };
                println!("  {state:<8}{:<24}{}", a.name, a.purpose);
            }
            let arm64 = assets::arm64(&cfg);
            if !arm64.is_empty() {
                let absent = assets::missing(&cfg.tftp.root, &arm64);
                println!("arm64 machines (optional: without these they get no boot program)");
                for a in &arm64 {
                    let state = if absent.iter().any(|m| m.asset == *a) { "absent" } else { "ok" };
                    println!("  {state:<8}{:<24}{}", a.name, a.purpose);
                }
            }
            if !gaps.is_empty() {
                print!("{}", assets::report(&gaps));
                std::process::exit(1);
            }
        }
        AssetsCmd::Install { config, bootos, ipxe_dir, signed_root } => {
            let cfg = Config::load(config.as_deref())?;
            let src = assets::install::Sources { ipxe_dir, bootos_dir: bootos, signed_root };
            println!("installing boot assets into {}", cfg.tftp.root.display());
            for i in assets::install::install(&cfg, &src)? {
                let what = if i.unchanged { "unchanged" } else { "installed" };
                println!(
                    "  {what:<10}{} ({} bytes, sha256 {}) from {}",
                    i.to.display(),
                    i.bytes,
                    &i.sha256[..16],
                    i.from.display()
                );
            }
        }
    }
    Ok(())
}
