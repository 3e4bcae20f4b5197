//! `[tftp]`: the read-only TFTP server for the boot directory.

use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireTftp {
    pub enabled: bool,
    pub port: u16,
    pub root: PathBuf,
    pub max_transfers: usize,
    pub max_transfers_per_client: usize,
}

impl Default for WireTftp {
    fn default() -> Self {
        WireTftp { enabled: true, port: 69, root: PathBuf::new(), max_transfers: 16_384, max_transfers_per_client: 8 }
    }
}

/// Validated TFTP settings.
#[derive(Debug, Clone)]
pub struct TftpConfig {
    pub enabled: bool,
    pub port: u16,
    /// Transfers at once; past it a request evicts the oldest transfer never acknowledged, or
    /// gets "server busy" when every transfer is acknowledged.
    pub max_transfers: usize,
    /// Transfers at once from one client address.
    pub max_transfers_per_client: usize,
    /// The boot directory served read-only.
    pub root: PathBuf,
}

impl TftpConfig {
    /// Validates `[tftp]`; an empty root is `<data_dir>/boot`.
    pub fn from_wire(w: WireTftp, data_dir: &Path) -> anyhow::Result<Self> {
        let WireTftp { enabled, port, root, max_transfers, max_transfers_per_client } = w;
        anyhow::ensure!(max_transfers >= 1, "tftp.max_transfers must be at least 1");
        anyhow::ensure!(
            (1..=max_transfers).contains(&max_transfers_per_client),
            "tftp.max_transfers_per_client must be 1..=tftp.max_transfers"
        );
        let root = if root.as_os_str().is_empty() { data_dir.join("boot") } else { root };
        Ok(TftpConfig { enabled, port, max_transfers, max_transfers_per_client, root })
    }
}
