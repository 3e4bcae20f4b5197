//! `[server]` and `[http]`: where state lives, the provisioning interface, logging, and the HTTP
//! listener with the base URL machines use.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireServer {
    pub data_dir: PathBuf,
    pub interface: String,
    pub address: Option<Ipv4Addr>,
    pub log_format: String,
    pub max_unclaimed_machines: usize,
    pub backup_interval_secs: u64,
    pub backup_keep: usize,
}

impl Default for WireServer {
    fn default() -> Self {
        WireServer {
            data_dir: PathBuf::from("/var/lib/rackboot"),
            interface: String::new(),
            address: None,
            log_format: "human".into(),
            max_unclaimed_machines: rackboot_model::records::DEFAULT_UNCLAIMED_CAP,
            backup_interval_secs: 0,
            backup_keep: 7,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireHttp {
    pub listen: SocketAddr,
    pub public_url: String,
    pub header_timeout_secs: u64,
    pub idle_timeout_secs: u64,
    pub max_connections: usize,
    pub max_connections_per_client: usize,
    pub loopback_api: bool,
}

impl Default for WireHttp {
    fn default() -> Self {
        WireHttp {
            listen: ([0, 0, 0, 0], 80).into(),
            public_url: String::new(),
            header_timeout_secs: 30,
            idle_timeout_secs: 120,
            max_connections: 8192,
            max_connections_per_client: 256,
            loopback_api: false,
        }
    }
}

/// `server.log_format`: whether logs are JSON lines.
pub fn log_json(log_format: &str) -> anyhow::Result<bool> {
    match log_format {
        "human" => Ok(false),
        "json" => Ok(true),
        other => anyhow::bail!("server.log_format must be \"human\" or \"json\", not {other:?}"),
    }
}

/// `http.public_url`: empty, or an http(s) URL, kept without a trailing slash.
pub fn public_url(url: &str) -> anyhow::Result<String> {
    if !url.is_empty() {
        anyhow::ensure!(
            url.starts_with("http://") || url.starts_with("https://"),
            "http.public_url must start with http:// or https://"
        );
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// `http.loopback_api`: the whole API on the plain listener too, so a benchmark can compare TLS
/// with plain HTTP. Credentials would cross in clear, so only a loopback `http.listen` may have it.
pub fn loopback_api(enabled: bool, listen: SocketAddr) -> anyhow::Result<bool> {
    anyhow::ensure!(
        !enabled || listen.ip().is_loopback(),
        "http.loopback_api sends credentials in clear: it needs a loopback http.listen, not {listen}"
    );
    Ok(enabled)
}

/// `server.backup_interval_secs` and `server.backup_keep`: scheduled snapshots, `None` when off.
pub fn backups(interval_secs: u64, keep: usize) -> anyhow::Result<Option<(std::time::Duration, usize)>> {
    if interval_secs == 0 {
        return Ok(None);
    }
    anyhow::ensure!(interval_secs >= 60, "server.backup_interval_secs must be 0 (off) or at least 60");
    anyhow::ensure!((1..=1000).contains(&keep), "server.backup_keep must be 1..=1000");
    Ok(Some((std::time::Duration::from_secs(interval_secs), keep)))
}
