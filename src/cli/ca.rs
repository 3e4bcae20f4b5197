//! `rackboot ca show`: the CA nodes and the CLI trust, its SHA-256 fingerprint and its pin;
//! `rackboot ca efi`: the boot CA's certificate as an EFI signature list, for firmware's HTTPS
//! boot.

use std::path::PathBuf;

use clap::Subcommand;
use rackboot::config::Config;

#[derive(Subcommand)]
pub enum CaCmd {
    /// Print where the CA certificate is and its SHA-256 fingerprint (compare it with what a node
    /// or `openssl x509 -noout -fingerprint -sha256 -in FILE` shows).
    Show {
        /// TOML config file (its data_dir, or its https.cert). Default: the embedded one.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Write the boot CA's certificate (RSA, made at the first start with `https.boot_port`) as
    /// an EFI signature list, which UEFI firmware's HTTPS boot takes as the certificates it trusts
    /// (OVMF: `-fw_cfg name=etc/edk2/https/cacerts,file=FILE`; vendors' firmware through the BMC
    /// or setup, see the book's secure-boot page).
    Efi {
        /// TOML config file (its data_dir, or its https.cert). Default: the embedded one.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Where to write the list.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
}

/// Runs a `ca` subcommand.
pub fn ca(cmd: CaCmd) -> anyhow::Result<()> {
    let config = match &cmd {
        CaCmd::Show { config } | CaCmd::Efi { config, .. } => config.clone(),
    };
    let cfg = Config::load(config.as_deref())?;
    if let CaCmd::Efi { out, .. } = &cmd {
        let path = rackboot::tls::dir(&cfg.data_dir).join(rackboot::tls::ca::BOOT_CA_PEM);
        anyhow::ensure!(
            path.exists(),
            "no boot CA in {}: set https.boot_port and start the appliance once (it makes the boot CA)",
            path.display()
        );
        let certs = rackboot::tls::read_certs(&path)?;
        let ca = certs.last().ok_or_else(|| anyhow::anyhow!("no certificate in {}", path.display()))?;
        let list = rackboot::tls::efi::signature_list(ca);
        std::fs::write(out, &list).map_err(|e| anyhow::anyhow!("writing {}: {e}", out.display()))?;
        println!("{}: the EFI signature list of the boot CA {} ({} bytes)", out.display(), path.display(), list.len());
        return Ok(());
    }
    let (path, what) = match &cfg.https.own_cert {
        Some((chain, _)) => (chain.clone(), "the last certificate of https.cert"),
        None => (rackboot::tls::dir(&cfg.data_dir).join(rackboot::tls::ca::CA_PEM), "the appliance CA"),
    };
    let certs = rackboot::tls::read_certs(&path)?;
    let ca = certs.last().ok_or_else(|| anyhow::anyhow!("no certificate in {}", path.display()))?;
    let hex = rackboot::tls::fingerprint(ca);
    let colons: Vec<String> = hex.as_bytes().chunks(2).map(|p| String::from_utf8_lossy(p).to_uppercase()).collect();
    println!("certificate: {} ({what})", path.display());
    println!("sha256 fingerprint: {}", colons.join(":"));
    println!("pin: rackboot.ca=sha256:{hex}");
    Ok(())
}
