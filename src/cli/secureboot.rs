//! `rackboot secureboot export-cert`: the certificate of the key BootOS's image is signed with,
//! to enrol in the machines' Secure Boot `db` (PEM for a BMC's `SecureBootDatabases`, or an EFI
//! signature list for tools such as virt-fw-vars and firmware setup screens).

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
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Pem,
    Esl,
}

/// Runs a `secureboot` subcommand.
pub fn secureboot(cmd: SecureBootCmd) -> anyhow::Result<()> {
    let SecureBootCmd::ExportCert { config, out, format } = cmd;
    let cfg = Config::load(config.as_deref())?;
    let path = rackboot::secureboot::dir(&cfg.data_dir).join(rackboot::secureboot::CERT);
    anyhow::ensure!(
        path.exists(),
        "no Secure Boot certificate in {}: the appliance makes it at start when it has BootOS, the EFI stub (systemd-boot-efi) and sbsign (sbsigntool)",
        path.display()
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
