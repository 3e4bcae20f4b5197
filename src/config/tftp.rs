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
}

impl Default for WireTftp {
    fn default() -> Self {
        WireTftp { enabled: true, port: 69, root: PathBuf::new(), max_transfers: 1024 }
    }
}

/// Validated TFTP settings.
#[derive(Debug, Clone)]
pub struct TftpConfig {
    pub enabled: bool,
    pub port: u16,
    /// Transfers at once; a request beyond that gets "server busy" and retries.
    pub max_transfers: usize,
    /// The boot directory served read-only.
    pub root: PathBuf,
}

impl TftpConfig {
    /// Validates `[tftp]`; an empty root is `<data_dir>/boot`.
    pub fn from_wire(w: WireTftp, data_dir: &Path) -> anyhow::Result<Self> {
        let WireTftp { enabled, port, root, max_transfers } = w;
        anyhow::ensure!(max_transfers >= 1, "tftp.max_transfers must be at least 1");
        let root = if root.as_os_str().is_empty() { data_dir.join("boot") } else { root };
        Ok(TftpConfig { enabled, port, max_transfers, root })
    }
}
