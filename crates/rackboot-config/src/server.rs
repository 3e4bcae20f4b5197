//! `[server]` and `[http]`: where state lives, the provisioning interface, logging, and the HTTP
//! listener with the base URL machines use.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use serde::Deserialize;

use crate::Ipv4Net;

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
    pub fallback_network: String,
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
            fallback_network: String::new(),
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

/// `server.fallback_network`: empty (off), or a network of /8 to /24 in which the appliance
/// answers at `.254` on its provisioning interface, overlapping no DHCP subnet.
pub fn fallback_network(text: &str, interface: &str, subnets: &[Ipv4Net]) -> anyhow::Result<Option<Ipv4Net>> {
    if text.is_empty() {
        return Ok(None);
    }
    let net: Ipv4Net = text.parse().map_err(|_| anyhow::anyhow!("server.fallback_network {text:?} is not a CIDR"))?;
    anyhow::ensure!(
        (8..=24).contains(&net.prefix_len()) && net.network() == net.addr(),
        "server.fallback_network must be a network of /8 to /24 (no host bits), e.g. \"10.254.254.0/24\""
    );
    anyhow::ensure!(!interface.is_empty(), "server.fallback_network needs server.interface: its address goes on it");
    if let Some(s) = subnets.iter().find(|s| s.contains(&net.network()) || net.contains(&s.network())) {
        anyhow::bail!("server.fallback_network {net} overlaps the DHCP subnet {s}");
    }
    Ok(Some(net))
}

/// Where the appliance answers on the fallback network: its `.254`.
pub fn fallback_address(net: Ipv4Net) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(net.network()) + 254)
}
