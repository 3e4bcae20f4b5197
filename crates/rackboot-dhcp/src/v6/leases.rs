//! The DHCPv6 lease map in memory: every stored lease by address, each client's (DUID, IAID)
//! binding, addresses advertised but not yet requested, and the allocator over a subnet's
//! pools. Rebuilt from the store at start; the store is written before any REPLY.

use std::collections::HashMap;
use std::net::Ipv6Addr;

use rackboot_config::Subnet6;
use rackboot_model::lease6::Lease6;
use rackboot_model::records::LeaseState;

/// How long an advertised address is kept for its client's REQUEST.
pub const OFFER_HOLD_SECS: u64 = 10;
/// Advertised addresses remembered at most (a SOLICIT flood cannot grow the map without end).
pub const MAX_OFFERS: usize = 65_536;

/// A client's identity association: (DUID in hex, IAID).
pub type Client = (String, u32);

#[derive(Debug, Default)]
pub struct Leases6 {
    by_ip: HashMap<Ipv6Addr, Lease6>,
    /// Each client's newest address (held, released or expired: it gets it back when free).
    by_client: HashMap<Client, Ipv6Addr>,
    /// Advertised addresses: to whom, until when (Unix seconds).
    offered: HashMap<Ipv6Addr, (Client, u64)>,
    /// Where the next search of each pool starts (by the pool's first address).
    cursor: HashMap<Ipv6Addr, u128>,
}

impl Leases6 {
    /// The map of `stored` leases.
    pub fn load(stored: Vec<Lease6>) -> Leases6 {
        let mut m = Leases6::default();
        for l in stored {
            m.put(l);
        }
        m
    }

    /// Records `l` (after the decision that made it). The address's previous client forgets it,
    /// so the bindings never outnumber the addresses (a stream of new clients cannot grow them).
    pub fn put(&mut self, l: Lease6) {
        let client = (l.duid.clone(), l.iaid);
        if let Some(old) = self.by_ip.get(&l.ip).filter(|o| (&o.duid, o.iaid) != (&l.duid, l.iaid)) {
            let old_client = (old.duid.clone(), old.iaid);
            if self.by_client.get(&old_client) == Some(&l.ip) {
                self.by_client.remove(&old_client);
            }
        }
        match self.by_client.get(&client).and_then(|ip| self.by_ip.get(ip)) {
            Some(old) if old.ip != l.ip && old.updated_at > l.updated_at => {}
            _ => {
                self.by_client.insert(client, l.ip);
            }
        }
        self.offered.remove(&l.ip);
        self.by_ip.insert(l.ip, l);
    }

    pub fn get(&self, ip: Ipv6Addr) -> Option<&Lease6> {
        self.by_ip.get(&ip)
    }

    /// The address `client` holds at `now`, if it holds one.
    pub fn bound(&self, client: &Client, now: u64) -> Option<&Lease6> {
        let l = self.by_ip.get(self.by_client.get(client)?)?;
        (l.state == LeaseState::Active && l.expires_at > now).then_some(l)
    }

    /// Whether `ip` may go to `client` at `now`: nobody else holds it (an active or declined
    /// lease), and it is not advertised to someone else.
    pub fn free_for(&self, ip: Ipv6Addr, client: &Client, now: u64) -> bool {
        let leased = self.by_ip.get(&ip).is_some_and(|l| {
            l.expires_at > now
                && match l.state {
                    LeaseState::Active => (&l.duid, l.iaid) != (&client.0, client.1),
                    LeaseState::Declined => true,
                    LeaseState::Released => false,
                }
        });
        let offered = self.offered.get(&ip).is_some_and(|(to, until)| to != client && *until > now);
        !leased && !offered
    }

    /// Clients holding an address at `now`.
    pub fn active(&self, now: u64) -> usize {
        self.by_ip.values().filter(|l| l.state == LeaseState::Active && l.expires_at > now).count()
    }

    /// The address for `client` in `subnet`: the one it holds, else one it asked for, else the
    /// one it had before, else the next free one in the pools; `None` when the pools are full.
    pub fn pick(&mut self, subnet: &Subnet6, client: &Client, asked: &[Ipv6Addr], now: u64) -> Option<Ipv6Addr> {
        if let Some(l) = self.bound(client, now).filter(|l| subnet.in_pool(l.ip)) {
            return Some(l.ip);
        }
        let before = self.by_client.get(client).copied();
        let known = asked.iter().copied().chain(before);
        if let Some(ip) = known.into_iter().find(|ip| subnet.in_pool(*ip) && self.free_for(*ip, client, now)) {
            return Some(ip);
        }
        // At most every taken address plus one is passed over before a free one, in each pool.
        let taken = self.by_ip.len() + self.offered.len() + 1;
        for pool in &subnet.pools {
            let (first, last) = (u128::from(pool.first), u128::from(pool.last));
            let size = last - first + 1;
            let start = self.cursor.get(&pool.first).copied().filter(|c| (first..=last).contains(c)).unwrap_or(first);
            for step in 0..size.min(taken as u128) {
                let ip = Ipv6Addr::from(first + (start - first + step) % size);
                if self.free_for(ip, client, now) {
                    self.cursor.insert(pool.first, first + (u128::from(ip) - first + 1) % size);
                    return Some(ip);
                }
            }
        }
        None
    }

    /// Keeps `ip` for `client` until its REQUEST (or [`OFFER_HOLD_SECS`]).
    pub fn offer(&mut self, ip: Ipv6Addr, client: Client, now: u64) {
        if self.offered.len() >= MAX_OFFERS {
            self.offered.retain(|_, (_, until)| *until > now);
            if self.offered.len() >= MAX_OFFERS {
                return;
            }
        }
        self.offered.insert(ip, (client, now + OFFER_HOLD_SECS));
    }

    /// Forgets advertisements that ran out.
    pub fn prune(&mut self, now: u64) {
        self.offered.retain(|_, (_, until)| *until > now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subnet(pools: &[(&str, &str)]) -> Subnet6 {
        Subnet6 {
            prefix: "fd18::/64".parse().unwrap(),
            pools: pools
                .iter()
                .map(|(a, b)| rackboot_config::Pool6 { first: a.parse().unwrap(), last: b.parse().unwrap() })
                .collect(),
            dns_servers: vec![],
            domain: String::new(),
            preferred_secs: 3600,
            valid_secs: 7200,
            advertise: true,
            slaac: false,
        }
    }

    fn lease(ip: &str, duid: &str, iaid: u32, state: LeaseState, expires_at: u64) -> Lease6 {
        Lease6 { v: 1, ip: ip.parse().unwrap(), duid: duid.into(), iaid, mac: None, expires_at, state, updated_at: 1 }
    }

    fn c(duid: &str, iaid: u32) -> Client {
        (duid.into(), iaid)
    }

    #[test]
    fn addresses_go_out_once_and_come_back_to_their_client() {
        let s = subnet(&[("fd18::10", "fd18::12")]);
        let mut m = Leases6::default();
        let a = m.pick(&s, &c("aa", 1), &[], 100).unwrap();
        m.put(lease(&a.to_string(), "aa", 1, LeaseState::Active, 200));
        let b = m.pick(&s, &c("bb", 1), &[], 100).unwrap();
        assert_ne!(a, b);
        // The same client's other IA is another client.
        m.offer(b, c("bb", 1), 100);
        let d = m.pick(&s, &c("aa", 2), &[], 100).unwrap();
        assert!(d != a && d != b, "held and advertised addresses are passed over");
        m.put(lease(&d.to_string(), "aa", 2, LeaseState::Active, 200));
        assert_eq!(m.pick(&s, &c("cc", 1), &[], 100), None, "pool full (b advertised to bb)");
        assert_eq!(m.pick(&s, &c("cc", 1), &[], 111), Some(b), "the advertisement ran out");
        // Asking for another's address gets one's own; asking for a free one in the pool gets it.
        assert_eq!(m.pick(&s, &c("aa", 1), &[b], 100), Some(a));
        assert_eq!(m.pick(&s, &c("bb", 1), &["fd18::99".parse().unwrap()], 100), Some(b), "outside the pools");
        // Released: it is free, and its client gets it back first.
        m.put(lease(&a.to_string(), "aa", 1, LeaseState::Released, 200));
        assert_eq!(m.bound(&c("aa", 1), 100), None);
        assert_eq!(m.pick(&s, &c("aa", 1), &[], 100), Some(a));
        // Declined: nobody gets it until it expires.
        m.put(lease(&a.to_string(), "aa", 1, LeaseState::Declined, 200));
        assert!(!m.free_for(a, &c("aa", 1), 150) && m.free_for(a, &c("zz", 1), 200));
        assert_eq!(m.active(100), 1);
        // Its previous client forgets an address that went to another.
        m.put(lease(&a.to_string(), "zz", 1, LeaseState::Active, 300));
        assert_eq!(m.by_client.get(&c("aa", 1)), None);
        assert_eq!(m.by_client.len(), m.by_ip.len());
    }

    #[test]
    fn a_large_pool_is_searched_from_where_the_last_search_ended() {
        let s = subnet(&[("fd18::1:0", "fd18::ffff:ffff")]);
        let mut m = Leases6::default();
        let mut got = Vec::new();
        for i in 0..1000u32 {
            let ip = m.pick(&s, &c("dd", i), &[], 1).unwrap();
            m.put(lease(&ip.to_string(), "dd", i, LeaseState::Active, 100));
            got.push(ip);
        }
        got.sort();
        got.dedup();
        assert_eq!(got.len(), 1000);
        assert_eq!(got[999], "fd18::1:3e7".parse::<Ipv6Addr>().unwrap(), "in order, none skipped");
    }
}
