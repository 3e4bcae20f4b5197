//! Small configuration values that parse and validate once: networks (CIDR) and address pools.

use std::fmt;
use std::net::Ipv4Addr;

use anyhow::Context;
pub use ipnet::Ipv4Net;

/// Parses `a.b.c.d/n`: a network address (no host bits) with a prefix length of 1..=30.
pub fn parse_net(s: &str) -> anyhow::Result<Ipv4Net> {
    let (ip, len) = s.split_once('/').with_context(|| format!("{s:?} is not a CIDR (a.b.c.d/n)"))?;
    let ip: Ipv4Addr = ip.parse().with_context(|| format!("bad network address in {s:?}"))?;
    let len: u8 = len.parse().with_context(|| format!("bad prefix length in {s:?}"))?;
    anyhow::ensure!((1..=30).contains(&len), "prefix length of {s:?} must be 1..=30");
    let net = Ipv4Net::new(ip, len)?;
    anyhow::ensure!(net.network() == ip, "{s:?} has host bits set");
    Ok(net)
}

/// Parses a list of CIDRs, naming `key` (e.g. `dns.allow_transfer`) in any error.
pub fn parse_nets(key: &str, list: &[String]) -> anyhow::Result<Vec<Ipv4Net>> {
    list.iter().map(|c| parse_net(c).with_context(|| format!("in {key}"))).collect()
}

/// An inclusive address range, `FIRST-LAST` in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pool {
    pub first: Ipv4Addr,
    pub last: Ipv4Addr,
}

impl Pool {
    /// Whether `ip` lies in the range.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        self.first <= ip && ip <= self.last
    }

    /// How many addresses the range holds.
    pub fn size(&self) -> u64 {
        u64::from(u32::from(self.last) - u32::from(self.first)) + 1
    }
}

impl std::str::FromStr for Pool {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Pool> {
        let (a, b) = s.split_once('-').with_context(|| format!("pool {s:?} is not FIRST-LAST"))?;
        let first: Ipv4Addr = a.trim().parse().with_context(|| format!("bad first address in pool {s:?}"))?;
        let last: Ipv4Addr = b.trim().parse().with_context(|| format!("bad last address in pool {s:?}"))?;
        anyhow::ensure!(first <= last, "pool {s:?} ends before it starts");
        Ok(Pool { first, last })
    }
}

impl fmt::Display for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

/// The /24 around `ip`: the fallback network when the config names none.
pub fn slash24(ip: Ipv4Addr) -> Ipv4Net {
    Ipv4Net::new(ip, 24).expect("24 is a valid prefix").trunc()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nets_parse_once_and_refuse_host_bits() {
        let n = parse_net("198.18.0.0/24").unwrap();
        assert!(n.contains(&Ipv4Addr::new(198, 18, 0, 7)));
        assert_eq!(n.netmask(), Ipv4Addr::new(255, 255, 255, 0));
        for bad in ["198.18.0.1/24", "198.18.0.0", "198.18.0.0/31", "198.18.0.0/0", "x/8"] {
            assert!(parse_net(bad).is_err(), "{bad}");
        }
        assert_eq!(slash24(Ipv4Addr::new(10, 1, 2, 3)), parse_net("10.1.2.0/24").unwrap());
    }

    #[test]
    fn pools_parse_and_count() {
        let p: Pool = " 198.18.0.100 - 198.18.0.199".parse().unwrap();
        assert_eq!(p.size(), 100);
        assert!(p.contains(Ipv4Addr::new(198, 18, 0, 199)) && !p.contains(Ipv4Addr::new(198, 18, 0, 99)));
        assert_eq!(p.to_string(), "198.18.0.100-198.18.0.199");
        assert!("198.18.0.9-198.18.0.1".parse::<Pool>().is_err());
        assert!("198.18.0.9".parse::<Pool>().is_err());
    }
}
