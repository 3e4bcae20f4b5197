//! The last-resort network, the G8OS way: when neither a static configuration nor DHCP reaches
//! the appliance, each interface in turn takes an address in a fallback network (default
//! `10.254.254.0/24`), chosen from its MAC and then at random, probed first with ARP duplicate
//! address detection (RFC 5227: `arping -D`), and looks for the appliance at the network's
//! `.254`. An address another node answers for is never taken; one that does not lead to the
//! appliance is given back, so the interfaces not used keep what they had.

use std::net::Ipv4Addr;
use std::process::Command;

/// The fallback network when the kernel command line names none.
pub const DEFAULT: Net = Net { network: Ipv4Addr::new(10, 254, 254, 0), prefix: 24 };
/// Addresses tried per interface per round before giving up on it.
const TRIES: usize = 6;

/// An IPv4 network in which the appliance is host `.254`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net {
    pub network: Ipv4Addr,
    pub prefix: u8,
}

impl Net {
    /// Parses `a.b.c.d/n` (n 8..=24, no host bits): room for `.254` and the hosts below it.
    pub fn parse(s: &str) -> Option<Net> {
        let (ip, len) = s.split_once('/')?;
        let network: Ipv4Addr = ip.parse().ok()?;
        let prefix: u8 = len.parse().ok()?;
        let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
        ((8..=24).contains(&prefix) && u32::from(network) & !mask == 0).then_some(Net { network, prefix })
    }

    /// Where the appliance answers: the network's `.254`.
    pub fn appliance(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network) + 254)
    }

    /// Host `n` of the network's first 253 (`.1` to `.253`), wrapping.
    pub fn host(&self, n: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network) + 1 + n % 253)
    }
}

/// The first address an interface with `mac` tries: the same on every boot, and different for
/// most neighbours (FNV-1a of the MAC). Later tries are random.
pub fn first_choice(net: &Net, mac: &str) -> Ipv4Addr {
    let h = mac.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    net.host(h)
}

/// A random host of the network.
pub fn random_choice(net: &Net) -> Ipv4Addr {
    let mut b = [0u8; 4];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    net.host(u32::from_le_bytes(b))
}

/// Whether nobody answers ARP for `ip` on `dev` (busybox or iputils `arping -D`: exit 0 when no
/// reply came).
fn free(dev: &str, ip: Ipv4Addr) -> bool {
    let ip = ip.to_string();
    match Command::new("arping").args(["-D", "-q", "-c", "2", "-w", "2", "-I", dev, &ip]).status() {
        Ok(s) => s.success(),
        Err(error) => {
            tracing::warn!(%error, "cannot run arping: the fallback address is taken unprobed");
            true
        }
    }
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).status().is_ok_and(|s| s.success())
}

/// Tries `dev` on the fallback network: an address nobody holds (the `preferred` one first when
/// given, else the MAC's), added to `dev`, then `reachable(appliance)`. The address on success;
/// otherwise the interface is left as it was.
pub async fn try_interface(
    net: &Net,
    dev: &str,
    preferred: Option<Ipv4Addr>,
    reachable: &impl AsyncFn(Ipv4Addr) -> bool,
) -> Option<Ipv4Addr> {
    let mac = std::fs::read_to_string(format!("/sys/class/net/{dev}/address")).unwrap_or_default();
    let mut choice = preferred.unwrap_or_else(|| first_choice(net, mac.trim()));
    for _ in 0..TRIES {
        if !free(dev, choice) {
            tracing::info!(%dev, address = %choice, "fallback address in use by another node: choosing again");
            choice = random_choice(net);
            continue;
        }
        let cidr = format!("{choice}/{}", net.prefix);
        if !ip(&["addr", "add", &cidr, "dev", dev]) {
            tracing::warn!(%dev, %cidr, "cannot add the fallback address");
            return None;
        }
        if reachable(net.appliance()).await {
            tracing::info!(%dev, address = %choice, appliance = %net.appliance(), "network up (fallback)");
            return Some(choice);
        }
        ip(&["addr", "del", &cidr, "dev", dev]);
        return None;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_network_and_its_hosts() {
        assert_eq!(Net::parse("10.254.254.0/24"), Some(DEFAULT));
        assert_eq!(DEFAULT.appliance(), Ipv4Addr::new(10, 254, 254, 254));
        assert_eq!(Net::parse("10.254.0.0/16").unwrap().appliance(), Ipv4Addr::new(10, 254, 0, 254));
        for bad in ["10.254.254.1/24", "10.254.254.0/25", "10.0.0.0/7", "nope", "10.254.254.0"] {
            assert_eq!(Net::parse(bad), None, "{bad}");
        }
        for n in [0, 1, 252, 253, 254, u32::MAX] {
            let h = DEFAULT.host(n).octets()[3];
            assert!((1..=253).contains(&h), "{n} -> .{h}: never the network, the appliance or broadcast");
        }
        let a = first_choice(&DEFAULT, "52:54:00:fb:00:01");
        assert_eq!(a, first_choice(&DEFAULT, "52:54:00:fb:00:01"), "the same on every boot");
        assert_ne!(a, first_choice(&DEFAULT, "52:54:00:fb:00:02"), "neighbours differ");
    }
}
