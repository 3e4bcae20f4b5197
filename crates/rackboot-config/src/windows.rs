//! `[windows]`: Windows installs from media the operator imports (`rackboot windows import`),
//! and the read-only SMB share of that media that rackboot runs through Debian's `smbd`.

use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireWindows {
    pub share: bool,
    pub smbd: PathBuf,
}

impl Default for WireWindows {
    fn default() -> Self {
        WireWindows { share: false, smbd: PathBuf::from("/usr/sbin/smbd") }
    }
}

/// Validated `[windows]`.
#[derive(Debug, Clone)]
pub struct WindowsConfig {
    /// Run `smbd` (started and restarted by rackboot) sharing `<tftp root>/windows` read-only as
    /// `\\<address>\rackboot`, bound to the provisioning address only.
    pub share: bool,
    /// The `smbd` binary.
    pub smbd: PathBuf,
}

impl TryFrom<WireWindows> for WindowsConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireWindows) -> anyhow::Result<Self> {
        let WireWindows { share, smbd } = w;
        anyhow::ensure!(smbd.is_absolute(), "windows.smbd {:?} must be an absolute path", smbd.display());
        Ok(WindowsConfig { share, smbd })
    }
}
