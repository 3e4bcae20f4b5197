//! `[dhcp6]` and `[[dhcp6.subnets]]`: the DHCPv6 server (IA_NA addresses from pools, boot URLs),
//! and what the router advertisements tell hosts (the managed and other-config flags, prefixes).

use std::net::Ipv6Addr;

use anyhow::Context;
use ipnet::Ipv6Net;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireDhcp6 {
    pub enabled: bool,
    pub port: u16,
    pub rapid_commit: bool,
    pub preference: u8,
    pub subnets: Vec<WireSubnet6>,
}

impl Default for WireDhcp6 {
    fn default() -> Self {
        WireDhcp6 { enabled: false, port: 547, rapid_commit: true, preference: 255, subnets: Vec::new() }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireSubnet6 {
    pub prefix: String,
    pub pools: Vec<String>,
    #[serde(default)]
    pub dns_servers: Vec<Ipv6Addr>,
    #[serde(default)]
    pub domain: String,
    #[serde(default = "default_preferred")]
    pub preferred_secs: u32,
    #[serde(default = "default_valid")]
    pub valid_secs: u32,
    /// Put the prefix in router advertisements (on-link), and let hosts form addresses in it
    /// themselves too (SLAAC) when `slaac` is set.
    #[serde(default = "yes")]
    pub advertise: bool,
    #[serde(default)]
    pub slaac: bool,
}

fn default_preferred() -> u32 {
    3600
}
fn default_valid() -> u32 {
    7200
}
fn yes() -> bool {
    true
}

/// Validated `[dhcp6]`.
#[derive(Debug, Clone, Default)]
pub struct Dhcp6Config {
    pub enabled: bool,
    /// The server's port (547); relays send to it too.
    pub port: u16,
    /// Answer a SOLICIT carrying rapid commit with a REPLY at once (RFC 8415 18.3.1).
    pub rapid_commit: bool,
    /// The preference option in ADVERTISE: 255 tells clients not to wait for other servers.
    pub preference: u8,
    pub subnets: Vec<Subnet6>,
}

/// One IPv6 prefix served with addresses.
#[derive(Debug, Clone, PartialEq)]
pub struct Subnet6 {
    pub prefix: Ipv6Net,
    /// Address ranges handed out, in address order, not overlapping.
    pub pools: Vec<Pool6>,
    pub dns_servers: Vec<Ipv6Addr>,
    pub domain: String,
    pub preferred_secs: u32,
    pub valid_secs: u32,
    pub advertise: bool,
    pub slaac: bool,
}

impl Subnet6 {
    /// Whether `ip` lies inside one of the pools.
    pub fn in_pool(&self, ip: Ipv6Addr) -> bool {
        self.pools.iter().any(|p| p.contains(ip))
    }
}

/// An IPv6 address range, `FIRST-LAST`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pool6 {
    pub first: Ipv6Addr,
    pub last: Ipv6Addr,
}

impl Pool6 {
    pub fn contains(&self, ip: Ipv6Addr) -> bool {
        self.first <= ip && ip <= self.last
    }

    /// How many addresses the range holds (saturating: a whole /64 is more than a u64 counts).
    pub fn size(&self) -> u64 {
        u64::try_from(u128::from(self.last) - u128::from(self.first)).map_or(u64::MAX, |n| n.saturating_add(1))
    }
}

impl std::str::FromStr for Pool6 {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Pool6> {
        let (a, b) = s.split_once('-').with_context(|| format!("pool {s:?} is not FIRST-LAST"))?;
        let first: Ipv6Addr = a.trim().parse().with_context(|| format!("bad first address in pool {s:?}"))?;
        let last: Ipv6Addr = b.trim().parse().with_context(|| format!("bad last address in pool {s:?}"))?;
        anyhow::ensure!(first <= last, "pool {s:?} ends before it starts");
        Ok(Pool6 { first, last })
    }
}

impl TryFrom<WireDhcp6> for Dhcp6Config {
    type Error = anyhow::Error;

    fn try_from(w: WireDhcp6) -> anyhow::Result<Self> {
        let WireDhcp6 { enabled, port, rapid_commit, preference, subnets } = w;
        let subnets = subnets
            .into_iter()
            .enumerate()
            .map(|(i, s)| subnet(s).with_context(|| format!("dhcp6.subnets[{i}]")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        anyhow::ensure!(!enabled || !subnets.is_empty(), "dhcp6.enabled needs at least one [[dhcp6.subnets]]");
        for (i, a) in subnets.iter().enumerate() {
            for b in &subnets[i + 1..] {
                anyhow::ensure!(
                    !a.prefix.contains(&b.prefix.network()) && !b.prefix.contains(&a.prefix.network()),
                    "dhcp6.subnets {} and {} overlap",
                    a.prefix,
                    b.prefix
                );
            }
        }
        Ok(Dhcp6Config { enabled, port, rapid_commit, preference, subnets })
    }
}

fn subnet(w: WireSubnet6) -> anyhow::Result<Subnet6> {
    let WireSubnet6 { prefix, pools, dns_servers, domain, preferred_secs, valid_secs, advertise, slaac } = w;
    let net: Ipv6Net = prefix.parse().with_context(|| format!("prefix {prefix:?} is not an IPv6 prefix"))?;
    anyhow::ensure!(net == net.trunc(), "prefix {prefix:?} has host bits set");
    anyhow::ensure!((8..=120).contains(&net.prefix_len()), "prefix {prefix:?}: the length must be 8 to 120");
    anyhow::ensure!(!slaac || net.prefix_len() == 64, "slaac needs a /64 prefix, not {prefix}");
    anyhow::ensure!(!pools.is_empty(), "at least one pool");
    anyhow::ensure!(pools.len() <= 64, "at most 64 pools");
    let mut pools = pools.iter().map(|p| p.parse::<Pool6>()).collect::<anyhow::Result<Vec<_>>>()?;
    pools.sort_by_key(|p| p.first);
    for p in &pools {
        anyhow::ensure!(
            net.contains(&p.first) && net.contains(&p.last),
            "pool {}-{} is outside {net}",
            p.first,
            p.last
        );
    }
    for w in pools.windows(2) {
        anyhow::ensure!(
            w[0].last < w[1].first,
            "pools {}-{} and {}-{} overlap",
            w[0].first,
            w[0].last,
            w[1].first,
            w[1].last
        );
    }
    anyhow::ensure!(valid_secs >= 60, "valid_secs must be at least 60");
    anyhow::ensure!(preferred_secs <= valid_secs, "preferred_secs must not exceed valid_secs");
    anyhow::ensure!(dns_servers.len() <= 8, "at most 8 dns_servers");
    Ok(Subnet6 { prefix: net, pools, dns_servers, domain, preferred_secs, valid_secs, advertise, slaac })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> anyhow::Result<Dhcp6Config> {
        let w: WireDhcp6 = toml::from_str(toml_text)?;
        Dhcp6Config::try_from(w)
    }

    #[test]
    fn subnets_are_checked_and_named_in_the_refusal() {
        let ok = parse(
            "enabled = true\n[[subnets]]\nprefix = \"fd18::/64\"\npools = [\"fd18::1:0-fd18::1:ff\", \"fd18::100-fd18::1ff\"]",
        )
        .unwrap();
        let s = &ok.subnets[0];
        assert_eq!(s.pools[0].first, "fd18::100".parse::<Ipv6Addr>().unwrap(), "pools sorted");
        assert_eq!(s.pools[1].size(), 256);
        assert!(s.in_pool("fd18::1:80".parse().unwrap()) && !s.in_pool("fd18::2".parse().unwrap()));
        assert_eq!((s.valid_secs, s.preferred_secs, ok.preference, ok.rapid_commit), (7200, 3600, 255, true));
        for (bad, says) in [
            ("enabled = true", "at least one [[dhcp6.subnets]]"),
            ("[[subnets]]\nprefix = \"fd18::1/64\"\npools = [\"fd18::5-fd18::9\"]", "host bits"),
            ("[[subnets]]\nprefix = \"198.18.0.0/24\"\npools = []", "not an IPv6 prefix"),
            ("[[subnets]]\nprefix = \"fd18::/64\"\npools = [\"fd19::5-fd19::9\"]", "outside"),
            ("[[subnets]]\nprefix = \"fd18::/64\"\npools = [\"fd18::9-fd18::5\"]", "ends before"),
            ("[[subnets]]\nprefix = \"fd18::/64\"\npools = [\"fd18::1-fd18::9\", \"fd18::5-fd18::20\"]", "overlap"),
            ("[[subnets]]\nprefix = \"fd18::/112\"\npools = [\"fd18::1-fd18::9\"]\nslaac = true", "slaac needs a /64"),
            ("[[subnets]]\nprefix = \"fd18::/64\"\npools = [\"fd18::1-fd18::9\"]\nvalid_secs = 10", "valid_secs"),
            (
                "[[subnets]]\nprefix = \"fd18::/64\"\npools = [\"fd18::1-fd18::9\"]\n[[subnets]]\nprefix = \"fd18::/48\"\npools = [\"fd18::1:1-fd18::1:9\"]",
                "overlap",
            ),
        ] {
            let e = format!("{:#}", parse(bad).unwrap_err());
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
