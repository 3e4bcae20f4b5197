//! `[dhcp]` and `[[dhcp.subnets]]`: the DHCP mode, ports, and the subnets served in full mode.

use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;

use super::value::{parse_net, Ipv4Net, Pool};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireDhcp {
    pub mode: String,
    pub port: u16,
    pub proxy_port: u16,
    pub reply_port: u16,
    pub relay_port: u16,
    pub offer_hold_secs: u64,
    pub max_clients_per_port: usize,
    pub max_clients_per_relay: usize,
    pub commit_batch: usize,
    pub router_advertisements: bool,
    pub subnets: Vec<WireSubnet>,
    pub pair: super::pair::WirePair,
}

impl Default for WireDhcp {
    fn default() -> Self {
        WireDhcp {
            mode: "proxy".into(),
            port: 67,
            proxy_port: 4011,
            reply_port: 68,
            relay_port: 67,
            offer_hold_secs: 10,
            max_clients_per_port: 16,
            max_clients_per_relay: 0,
            commit_batch: 4096,
            router_advertisements: true,
            subnets: Vec::new(),
            pair: Default::default(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireSubnet {
    pub cidr: String,
    pub pools: Vec<String>,
    #[serde(default)]
    pub routers: Vec<Ipv4Addr>,
    #[serde(default)]
    pub dns_servers: Vec<Ipv4Addr>,
    #[serde(default)]
    pub domain: String,
    #[serde(default = "default_lease_secs")]
    pub lease_secs: u32,
    /// What this subnet's UEFI x64 PXE clients get first; unset: `boot.uefi_loader`.
    #[serde(default)]
    pub uefi_loader: Option<super::UefiLoader>,
}

fn default_lease_secs() -> u32 {
    3600
}

/// DHCP service mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DhcpMode {
    /// Leases from pools and reservations, plus PXE boot options.
    Full,
    /// Boot options only, beside another DHCP server (port 67 and 4011).
    Proxy,
    /// No DHCP at all.
    Off,
}

/// Validated DHCP settings.
#[derive(Debug, Clone)]
pub struct DhcpConfig {
    pub mode: DhcpMode,
    pub port: u16,
    pub proxy_port: u16,
    /// Port replies to clients are sent to (68; tests may change it).
    pub reply_port: u16,
    /// Port replies to relay agents (giaddr) are sent to (67).
    pub relay_port: u16,
    pub offer_hold: Duration,
    /// Different MACs behind one switch port (option 82) that may hold pool addresses at once;
    /// 0: no limit.
    pub max_clients_per_port: usize,
    /// Different MACs behind one relay agent (giaddr) that may hold pool addresses; 0: no limit.
    pub max_clients_per_relay: usize,
    pub commit_batch: usize,
    /// Answer IPv6 router solicitations with an advertisement that configures nothing, so
    /// iPXE stops waiting for one (see the router advertisements in the DHCP layer).
    pub router_advertisements: bool,
    pub subnets: Vec<Subnet>,
    /// A hot-standby pair with another appliance on this VLAN (`[dhcp.pair]`).
    pub pair: Option<super::pair::PairConfig>,
}

/// One IPv4 subnet served in full mode.
#[derive(Debug, Clone, PartialEq)]
pub struct Subnet {
    pub net: Ipv4Net,
    /// Address ranges handed out, in address order, not overlapping.
    pub pools: Vec<Pool>,
    pub routers: Vec<Ipv4Addr>,
    pub dns_servers: Vec<Ipv4Addr>,
    pub domain: String,
    pub lease_secs: u32,
    /// This subnet's choice of UEFI loader, over `boot.uefi_loader`.
    pub uefi_loader: Option<super::UefiLoader>,
}

impl Subnet {
    /// The netmask for this subnet's prefix length.
    pub fn mask(&self) -> Ipv4Addr {
        self.net.netmask()
    }

    /// Whether `ip` lies inside the subnet.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        self.net.contains(&ip)
    }

    /// Whether `ip` lies inside one of the pools.
    pub fn in_pool(&self, ip: Ipv4Addr) -> bool {
        self.pools.iter().any(|p| p.contains(ip))
    }
}

impl TryFrom<WireSubnet> for Subnet {
    type Error = anyhow::Error;

    fn try_from(w: WireSubnet) -> anyhow::Result<Self> {
        let WireSubnet { cidr, pools, routers, dns_servers, domain, lease_secs, uefi_loader } = w;
        let net = parse_net(&cidr)?;
        let mut subnet = Subnet { net, pools: Vec::new(), routers, dns_servers, domain, lease_secs, uefi_loader };
        anyhow::ensure!(lease_secs >= 60, "subnet {cidr}: lease_secs must be at least 60");
        anyhow::ensure!(!pools.is_empty(), "subnet {cidr}: at least one pool is needed");
        for p in &pools {
            let pool: Pool = p.parse()?;
            anyhow::ensure!(
                subnet.contains(pool.first) && subnet.contains(pool.last),
                "subnet {cidr}: pool {p:?} is outside the subnet"
            );
            subnet.pools.push(pool);
        }
        // The allocator walks pools in address order and wraps to the lowest.
        subnet.pools.sort();
        for w in subnet.pools.windows(2) {
            anyhow::ensure!(w[0].last < w[1].first, "subnet {cidr}: pools {} and {} overlap", w[0], w[1]);
        }
        Ok(subnet)
    }
}

impl DhcpConfig {
    /// Validates `[dhcp]`; `domain` (the DNS zone, when DNS runs) fills subnets without their own.
    pub fn from_wire(w: WireDhcp, domain: Option<&str>) -> anyhow::Result<Self> {
        let WireDhcp {
            mode,
            port,
            proxy_port,
            reply_port,
            relay_port,
            offer_hold_secs,
            max_clients_per_port,
            max_clients_per_relay,
            commit_batch,
            router_advertisements,
            subnets,
            pair,
        } = w;
        let pair = super::pair::PairConfig::from_wire(pair)?;
        anyhow::ensure!(pair.is_none() || mode == "full", "dhcp.pair is for dhcp.mode = \"full\"");
        let mode = match mode.as_str() {
            "full" => DhcpMode::Full,
            "proxy" => DhcpMode::Proxy,
            "off" => DhcpMode::Off,
            other => anyhow::bail!("dhcp.mode must be \"full\", \"proxy\" or \"off\", not {other:?}"),
        };
        let mut subnets = subnets
            .into_iter()
            .map(Subnet::try_from)
            .collect::<anyhow::Result<Vec<_>>>()
            .context("in [[dhcp.subnets]]")?;
        if let Some(domain) = domain {
            // Clients should look names up under the zone we answer for.
            for s in subnets.iter_mut().filter(|s| s.domain.is_empty()) {
                s.domain = domain.to_string();
            }
        }
        if mode == DhcpMode::Full {
            anyhow::ensure!(!subnets.is_empty(), "dhcp.mode = \"full\" needs at least one [[dhcp.subnets]]");
        }
        for (i, a) in subnets.iter().enumerate() {
            for b in &subnets[i + 1..] {
                anyhow::ensure!(
                    !a.contains(b.net.network()) && !b.contains(a.net.network()),
                    "subnets {} and {} overlap",
                    a.net,
                    b.net
                );
            }
        }
        anyhow::ensure!(commit_batch >= 1, "dhcp.commit_batch must be at least 1");
        Ok(DhcpConfig {
            mode,
            port,
            proxy_port,
            reply_port,
            relay_port,
            offer_hold: Duration::from_secs(offer_hold_secs),
            max_clients_per_port,
            max_clients_per_relay,
            commit_batch,
            router_advertisements,
            subnets,
            pair,
        })
    }

    /// The networks of the subnets served.
    pub fn networks(&self) -> Vec<Ipv4Net> {
        self.subnets.iter().map(|s| s.net).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    #[test]
    fn full_mode_config_validates() {
        let cfg = Config::parse(
            r#"
            [server]
            interface = "eth1"
            [dhcp]
            mode = "full"
            [[dhcp.subnets]]
            cidr = "198.18.0.0/24"
            pools = ["198.18.0.100-198.18.0.199"]
            routers = ["198.18.0.1"]
            "#,
        )
        .unwrap();
        let s = &cfg.dhcp.subnets[0];
        assert_eq!(s.mask(), Ipv4Addr::new(255, 255, 255, 0));
        assert!(s.in_pool("198.18.0.150".parse().unwrap()));
        assert!(!s.in_pool("198.18.0.99".parse().unwrap()));
        assert_eq!(s.lease_secs, 3600);
        assert_eq!(s.domain, "rack.internal", "the DNS zone fills a subnet without a domain");
    }

    #[test]
    fn pools_are_kept_in_address_order() {
        let s = Subnet::try_from(WireSubnet {
            cidr: "198.18.0.0/24".into(),
            pools: vec!["198.18.0.200-198.18.0.210".into(), "198.18.0.100-198.18.0.110".into()],
            routers: vec![],
            dns_servers: vec![],
            domain: String::new(),
            lease_secs: 600,
            uefi_loader: None,
        })
        .unwrap();
        assert_eq!(s.pools[0].first, Ipv4Addr::new(198, 18, 0, 100));
    }
}
