//! The IPv6 side of the index: each named machine's newest DHCPv6 address for DNS (the AAAA
//! side of [`Index::dns_hosts`]), and who holds an address.

use std::collections::HashMap;
use std::net::Ipv6Addr;

use super::{Index, LeaseBrief};
use rackboot_model::mac::Mac;

impl Index {
    /// The MAC holding an unexpired DHCPv6 lease on `ip` at `now`.
    pub fn active_lease6_to(&self, ip: Ipv6Addr, now: u64) -> Option<Mac> {
        self.leased6.get(&ip).filter(|l| l.expires_at > now).map(|l| l.mac)
    }

    /// (lowercase hostname, address) for every machine with a hostname and an unexpired DHCPv6
    /// lease at `now` (its newest, as for IPv4), sorted; `next_expiry` is lowered to the earliest
    /// of their leases' ends.
    pub(super) fn dns_hosts6(&self, now: u64, next_expiry: &mut Option<u64>) -> Vec<(String, Ipv6Addr)> {
        let mut newest: HashMap<Mac, (Ipv6Addr, &LeaseBrief)> = HashMap::new();
        for (ip, l) in self.leased6.iter().filter(|(_, l)| l.expires_at > now) {
            let slot = newest.entry(l.mac).or_insert((*ip, l));
            if (l.expires_at, *ip) > (slot.1.expires_at, slot.0) {
                *slot = (*ip, l);
            }
        }
        let mut hosts = Vec::new();
        for (mac, (ip, l)) in newest {
            let Some(name) = self.by_mac(mac).and_then(|b| b.hostname.as_ref()) else { continue };
            *next_expiry = Some(next_expiry.map_or(l.expires_at, |n| n.min(l.expires_at)));
            hosts.push((name.to_ascii_lowercase(), ip));
        }
        hosts.sort();
        hosts
    }
}
