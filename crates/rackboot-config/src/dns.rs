//! `[dns]`: the zone rackboot answers for, its reverse zones, forwarding and transfers.

use std::net::SocketAddr;

use anyhow::Context;
use serde::Deserialize;

use super::value::{parse_nets, Ipv4Net};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireDns {
    pub enabled: bool,
    pub port: u16,
    pub domain: String,
    pub ttl: u32,
    pub reverse_zones: Vec<String>,
    pub upstreams: Vec<String>,
    pub forward_clients: Vec<String>,
    pub allow_transfer: Vec<String>,
}

impl Default for WireDns {
    fn default() -> Self {
        WireDns {
            enabled: true,
            port: 53,
            domain: "rack.internal".into(),
            ttl: 30,
            reverse_zones: Vec::new(),
            upstreams: Vec::new(),
            forward_clients: Vec::new(),
            allow_transfer: Vec::new(),
        }
    }
}

/// Validated DNS settings.
#[derive(Debug, Clone, PartialEq)]
pub struct DnsConfig {
    pub enabled: bool,
    pub port: u16,
    /// The forward zone, lowercase, without the trailing dot.
    pub domain: String,
    /// TTL of every answer, in seconds.
    pub ttl: u32,
    /// Networks whose reverse zones are served. Empty: the DHCP subnets, else the server's /24.
    pub reverse_zones: Vec<Ipv4Net>,
    /// Resolvers that get names outside our zones; empty: such names are REFUSED.
    pub upstreams: Vec<SocketAddr>,
    /// Clients whose names outside our zones are forwarded; empty: the reverse zones' networks
    /// (and loopback, always).
    pub forward_clients: Vec<Ipv4Net>,
    /// Clients allowed zone transfers (AXFR, over TCP); empty: none.
    pub allow_transfer: Vec<Ipv4Net>,
}

impl TryFrom<WireDns> for DnsConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireDns) -> anyhow::Result<Self> {
        let WireDns { enabled, port, domain, ttl, reverse_zones, upstreams, forward_clients, allow_transfer } = w;
        let domain = domain.trim_end_matches('.').to_ascii_lowercase();
        anyhow::ensure!(
            !domain.is_empty()
                && domain.len() <= 200
                && domain.split('.').all(rackboot_model::records::valid_hostname)
                && domain.contains('.'),
            "dns.domain {domain:?} must be a dotted name of letters, digits and '-' (e.g. \"rack.internal\")"
        );
        anyhow::ensure!(ttl <= 86_400, "dns.ttl must be at most 86400 seconds");
        let reverse_zones = parse_nets("dns.reverse_zones", &reverse_zones)?;
        for net in &reverse_zones {
            anyhow::ensure!(net.prefix_len() >= 8, "dns.reverse_zones: {net} is wider than a /8");
        }
        let allow_transfer = parse_nets("dns.allow_transfer", &allow_transfer)?;
        let forward_clients = parse_nets("dns.forward_clients", &forward_clients)?;
        let upstreams = upstreams
            .iter()
            .map(|u| {
                u.parse::<SocketAddr>()
                    .or_else(|_| u.parse::<std::net::IpAddr>().map(|ip| SocketAddr::new(ip, 53)))
                    .with_context(|| format!("dns.upstreams: {u:?} is not an address or address:port"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(DnsConfig { enabled, port, domain, ttl, reverse_zones, upstreams, forward_clients, allow_transfer })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstreams_default_to_port_53_and_domain_is_normalized() {
        let w = WireDns {
            domain: "Lab.Rack.Test.".into(),
            upstreams: vec!["192.0.2.1".into(), "192.0.2.2:5353".into()],
            ..WireDns::default()
        };
        let d = DnsConfig::try_from(w).unwrap();
        assert_eq!(d.domain, "lab.rack.test");
        assert_eq!(d.upstreams, ["192.0.2.1:53".parse().unwrap(), "192.0.2.2:5353".parse().unwrap()]);
    }
}
