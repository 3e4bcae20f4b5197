//! `rackboot secureboot export-cert`: the certificate of the key BootOS's image is signed with,
//! to enrol in the machines' Secure Boot `db` (PEM for a BMC's `SecureBootDatabases`, or an EFI
//! signature list for tools such as virt-fw-vars and firmware setup screens);
//! `rackboot secureboot rotate`: a new key, the old certificate kept as the previous one.

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};
use rackboot::config::Config;

#[derive(Subcommand)]
pub enum SecureBootCmd {
    /// Write the Secure Boot certificate (made at the first start with a BootOS build, the EFI
    /// stub and sbsign) to enrol in the machines' db.
    ExportCert {
        /// TOML config file (its data_dir). Default: the embedded one.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Where to write it; default: standard output (PEM only).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// pem, or esl (an EFI signature list of it).
        #[arg(long, value_enum, default_value_t = Format::Pem)]
        format: Format,
        /// The certificate of the key before the last rotation (to remove from the db once
        /// every machine has the new one).
        #[arg(long)]
        previous: bool,
    },
    /// Replace the signing key with a new one (the old key destroyed, its certificate kept as
    /// the previous one). Enrol the new certificate, then restart the appliance: BootOS's image
    /// is signed again with the new key at start.
    Rotate {
        /// TOML config file (its data_dir). Default: the embedded one.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Pem,
    Esl,
}

/// Runs a `secureboot` subcommand.
pub fn secureboot(cmd: SecureBootCmd) -> anyhow::Result<()> {
    let (config, out, format, previous) = match cmd {
        SecureBootCmd::ExportCert { config, out, format, previous } => (config, out, format, previous),
        SecureBootCmd::Rotate { config } => return rotate(config),
    };
    let cfg = Config::load(config.as_deref())?;
    let dir = rackboot::secureboot::dir(&cfg.data_dir);
    let path = dir.join(if previous { rackboot::secureboot::PREVIOUS_CERT } else { rackboot::secureboot::CERT });
    anyhow::ensure!(
        path.exists() || previous,
        "no Secure Boot certificate in {}: the appliance makes it at start when it has BootOS, the EFI stub (systemd-boot-efi) and sbsign (sbsigntool)",
        path.display()
    );
    anyhow::ensure!(
        path.exists(),
        "no previous Secure Boot certificate in {}: the key was never rotated",
        dir.display()
    );
    let pem = std::fs::read_to_string(&path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    let bytes = match format {
        Format::Pem => pem.into_bytes(),
        Format::Esl => {
            let der = rackboot::tls::read_certs(&path)?.pop().ok_or_else(|| anyhow::anyhow!("no certificate"))?;
            rackboot::tls::efi::signature_list(&der)
        }
    };
    match (out, format) {
        (Some(out), _) => {
            std::fs::write(&out, &bytes).map_err(|e| anyhow::anyhow!("writing {}: {e}", out.display()))?;
            eprintln!("{}: the Secure Boot certificate {} ({} bytes)", out.display(), path.display(), bytes.len());
        }
        (None, Format::Pem) => print!("{}", String::from_utf8_lossy(&bytes)),
        (None, Format::Esl) => anyhow::bail!("--format esl needs --out FILE"),
    }
    Ok(())
}

/// Rotates the signing key in the config's data directory.
fn rotate(config: Option<PathBuf>) -> anyhow::Result<()> {
    let cfg = Config::load(config.as_deref())?;
    let dir = rackboot::secureboot::dir(&cfg.data_dir);
    anyhow::ensure!(
        dir.join(rackboot::secureboot::CERT).exists(),
        "no Secure Boot key in {} to rotate: the appliance makes the first at start",
        dir.display()
    );
    let sealer = rackboot::secrets::Sealer::load_or_create(&cfg.data_dir)?;
    rackboot::secureboot::rotate(&cfg.data_dir, &sealer)?;
    eprintln!(
        "new Secure Boot key; its certificate: {}, the previous one: {}.\n\
         Enrol the new certificate in the machines' db (a hardware profile's \"secure-boot-db\", or \
         `rackboot secureboot export-cert`) before they boot the new image, then restart the appliance: \
         it signs BootOS's image with the new key at start.",
        dir.join(rackboot::secureboot::CERT).display(),
        dir.join(rackboot::secureboot::PREVIOUS_CERT).display()
    );
    Ok(())
}
