//! `rackboot windows`: import the operator's Windows media into the boot directory, list it.

use super::*;

#[derive(Subcommand)]
pub(super) enum WindowsCmd {
    /// Import Windows install media (a mounted ISO or a WinPE tree) as NAME.
    ///
    /// The tree is copied into <tftp root>/windows/NAME with every name lowercased, checked for
    /// what a network boot needs (bootmgfw.efi or efi/boot/bootx64.efi, the BCD, boot/boot.sdi,
    /// sources/boot.wim) and its boot files' SHA-256 recorded in rackboot-media.json. With
    /// wimtools installed and the provisioning address known, WinPE's startnet.cmd in boot.wim
    /// is replaced by one that maps \\<address>\rackboot and runs Setup with the machine's
    /// answer file. All or nothing: on any error nothing is left behind. A profile with
    /// `windows = "NAME"` then boots it (UEFI PXE).
    #[command(after_help = "\
Examples:
  mount -o loop,ro SERVER_EVAL_x64FRE_en-us.iso /mnt
  rackboot windows import w2022 /mnt --config /etc/rackboot/rackboot.toml
  umount /mnt")]
    Import {
        /// The media's name (letters, digits and '-'), as profiles name it.
        name: String,
        /// The media's top directory.
        dir: PathBuf,
        /// Replace media already imported under NAME.
        #[arg(long)]
        replace: bool,
        /// The config `rackboot serve` runs with (its boot directory and address). Default: the embedded one.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Print the smbd config `[windows] share = true` runs with (for a host's own Samba).
    SmbConf {
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// List the imported media.
    List {
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

pub(super) fn windows(cmd: WindowsCmd) -> anyhow::Result<()> {
    use rackboot::windows::media;
    match cmd {
        WindowsCmd::Import { name, dir, replace, config } => {
            let cfg = Config::load(config.as_deref())?;
            let address = rackboot::app::provisioning_address(&cfg);
            let opts = media::ImportOptions { replace, share_address: address };
            let m = media::import(&cfg.tftp.root, &name, &dir, &opts)?;
            println!(
                "imported {} ({} files, {} MB) into {}",
                m.name,
                m.files,
                m.bytes >> 20,
                cfg.tftp.root.join("windows").join(&m.name).display()
            );
            println!("  bootmgfw.efi from {}", m.bootmgr_from);
            match m.startnet {
                true => println!("  boot.wim: startnet.cmd maps \\\\{}\\rackboot and runs Setup with unattend\\<MAC>.xml", address.map(|a| a.to_string()).unwrap_or_default()),
                false => println!("  boot.wim left as it is (no wimupdate, or no provisioning address found): WinPE will not start Setup by itself"),
            }
            for (path, sum) in &m.sha256 {
                println!("  sha256 {sum}  {path}");
            }
        }
        WindowsCmd::SmbConf { config } => {
            let cfg = Config::load(config.as_deref())?;
            let address = rackboot::app::provisioning_address(&cfg)
                .context("no provisioning address: set server.address or server.interface")?;
            print!("{}", rackboot::windows::share::config(&rackboot::windows::share::spec(&cfg, address)));
        }
        WindowsCmd::List { config } => {
            let cfg = Config::load(config.as_deref())?;
            for m in media::list(&cfg.tftp.root) {
                println!(
                    "{:<16} {:>6} files {:>7} MB  bootmgfw.efi from {}  startnet {}",
                    m.name,
                    m.files,
                    m.bytes >> 20,
                    m.bootmgr_from,
                    m.startnet
                );
            }
        }
    }
    Ok(())
}
