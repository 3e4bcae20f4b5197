//! The address allocator and lease state machine, in memory and pure: the server persists what
//! it decides through the CMDB, and rebuilds this table from the CMDB at start.

use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;

use rackboot_config::Subnet;
use rackboot_model::mac::Mac;
use rackboot_store::{Lease, LeaseState};

/// What holds an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Offered, not yet requested; held until the unix second given.
    Offered(u64),
    /// Bound to the client until the unix second given.
    Leased(u64),
    /// Declined (in use by someone we do not know); quarantined until the unix second given.
    Declined(u64),
    /// Released by the client; free, but remembered so the client gets it back.
    Released,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    mac: Mac,
    hold: Hold,
}

impl Entry {
    /// Whether the address is taken for anyone but `mac` at `now`.
    fn blocks(&self, mac: Mac, now: u64) -> bool {
        match self.hold {
            Hold::Declined(until) => now < until,
            Hold::Offered(until) | Hold::Leased(until) => self.mac != mac && now < until,
            Hold::Released => false,
        }
    }
}

/// Why a REQUEST is refused with a NAK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("address is not in this subnet")]
    WrongSubnet,
    #[error("address is not in a pool and not reserved for this client")]
    NotAssignable,
    #[error("address is reserved for another machine")]
    ReservedForOther,
    #[error("address is leased to another client")]
    Taken,
    #[error("client has a reservation for a different address")]
    HasReservation,
}

/// Lease table for all subnets.
#[derive(Debug)]
pub struct Leases {
    by_ip: HashMap<Ipv4Addr, Entry>,
    by_mac: HashMap<Mac, Ipv4Addr>,
    /// Next address to try, per subnet index.
    cursor: HashMap<usize, u32>,
    offer_hold_secs: u64,
    /// Offers in the order they were made, per subnet index: (held until, address). Entries
    /// whose address has moved on since are skipped when met; expired ones are dropped as new
    /// offers come, so this holds at most one hold time's worth of offers.
    offers: HashMap<usize, VecDeque<(u64, Ipv4Addr)>>,
    /// Offers taken back for a newer client because the pools were exhausted.
    pub reclaimed: u64,
    /// How many clients one switch port or relay may have holding pool addresses.
    pub limits: super::limits::Limits,
    /// OFFERs waiting to be written with their ACK.
    pub held: super::held::HeldOffers,
}

impl Leases {
    /// An empty table.
    pub fn new(offer_hold_secs: u64) -> Self {
        Leases {
            by_ip: HashMap::new(),
            by_mac: HashMap::new(),
            cursor: HashMap::new(),
            offer_hold_secs,
            offers: HashMap::new(),
            reclaimed: 0,
            limits: super::limits::Limits::default(),
            held: Default::default(),
        }
    }

    /// Loads persisted leases (at start).
    /// Forgets what it knew and loads `leases` (a pair member that starts answering takes what
    /// its peer leased meanwhile from the shared store).
    pub fn reload(&mut self, leases: impl IntoIterator<Item = Lease>) {
        self.by_ip.clear();
        self.by_mac.clear();
        self.offers.clear();
        self.load(leases);
    }

    pub fn load(&mut self, leases: impl IntoIterator<Item = Lease>) {
        for l in leases {
            let hold = match l.state {
                LeaseState::Active => Hold::Leased(l.expires_at),
                LeaseState::Declined => Hold::Declined(l.expires_at),
                LeaseState::Released => Hold::Released,
            };
            self.by_ip.insert(l.ip, Entry { mac: l.mac, hold });
            if l.state != LeaseState::Declined {
                self.by_mac.insert(l.mac, l.ip);
            }
        }
    }

    /// Picks an address to offer `mac` in subnet `idx`: its reservation, its current address,
    /// the one it asked for, or the next free one. With the pools exhausted, the oldest
    /// outstanding offer is taken back (an offer is only a promise until its REQUEST; a flood
    /// of DISCOVERs from invented MACs never requests), so offers cannot drain a pool; `None`
    /// when every pool address is leased, declined or reserved.
    #[allow(clippy::too_many_arguments)]
    pub fn offer(
        &mut self,
        idx: usize,
        subnet: &Subnet,
        mac: Mac,
        requested: Option<Ipv4Addr>,
        reserved: Option<Ipv4Addr>,
        reserved_for_other: &dyn Fn(Ipv4Addr) -> bool,
        now: u64,
    ) -> Option<Ipv4Addr> {
        let usable = |me: &Self, ip: Ipv4Addr| {
            subnet.in_pool(ip) && !reserved_for_other(ip) && me.by_ip.get(&ip).is_none_or(|e| !e.blocks(mac, now))
        };
        let pick = match reserved.filter(|ip| subnet.contains(*ip)) {
            Some(ip) if self.by_ip.get(&ip).is_none_or(|e| !e.blocks(mac, now)) => Some(ip),
            _ => None,
        }
        .or_else(|| self.by_mac.get(&mac).copied().filter(|ip| usable(self, *ip)))
        .or_else(|| requested.filter(|ip| usable(self, *ip)))
        .or_else(|| self.next_free(idx, subnet, &|me, ip| usable(me, ip)))
        .or_else(|| self.reclaim_offer(idx, subnet, mac, reserved_for_other, now))?;
        let until = now + self.offer_hold_secs;
        self.bind(mac, pick, Hold::Offered(until), now);
        let queue = self.offers.entry(idx).or_default();
        while queue.front().is_some_and(|(t, _)| *t <= now) {
            queue.pop_front();
        }
        queue.push_back((until, pick));
        Some(pick)
    }

    /// The pool address of the oldest offer still outstanding in subnet `idx` made to another
    /// client, taken back from that client.
    fn reclaim_offer(
        &mut self,
        idx: usize,
        subnet: &Subnet,
        mac: Mac,
        reserved_for_other: &dyn Fn(Ipv4Addr) -> bool,
        now: u64,
    ) -> Option<Ipv4Addr> {
        let queue = self.offers.get_mut(&idx)?;
        while let Some((until, ip)) = queue.pop_front() {
            let current = self.by_ip.get(&ip).is_some_and(|e| e.hold == Hold::Offered(until) && e.mac != mac);
            if current && until > now && subnet.in_pool(ip) && !reserved_for_other(ip) {
                self.reclaimed += 1;
                return Some(ip);
            }
        }
        None
    }

    fn next_free(&mut self, idx: usize, subnet: &Subnet, usable: &dyn Fn(&Self, Ipv4Addr) -> bool) -> Option<Ipv4Addr> {
        let total: u64 = subnet.pools.iter().map(|p| p.size()).sum();
        let first = u32::from(subnet.pools.first()?.first);
        let mut at = *self.cursor.get(&idx).unwrap_or(&first);
        for _ in 0..total {
            // Step to the next in-pool address, wrapping from the last pool to the first.
            if !subnet.in_pool(Ipv4Addr::from(at)) {
                at = subnet.pools.iter().map(|p| u32::from(p.first)).filter(|a| *a > at).min().unwrap_or(first);
            }
            let ip = Ipv4Addr::from(at);
            at = at.wrapping_add(1);
            if usable(self, ip) {
                self.cursor.insert(idx, at);
                return Some(ip);
            }
        }
        None
    }

    /// Decides a REQUEST for `ip`; on success binds it and returns the expiry (unix seconds).
    pub fn ack(
        &mut self,
        subnet: &Subnet,
        mac: Mac,
        ip: Ipv4Addr,
        reserved: Option<Ipv4Addr>,
        reserved_for_other: &dyn Fn(Ipv4Addr) -> bool,
        now: u64,
    ) -> Result<u64, Refusal> {
        if !subnet.contains(ip) {
            return Err(Refusal::WrongSubnet);
        }
        let reserved = reserved.filter(|r| subnet.contains(*r));
        // Moved to its reservation only when the reservation is usable now; while it is blocked
        // (declined, or still leased to a client from before the reservation) the pool address
        // `offer` fell back to must be acceptable, or the client would loop on NAKs.
        let reservation_free = |r: Ipv4Addr| self.by_ip.get(&r).is_none_or(|e| !e.blocks(mac, now));
        if reserved.is_some_and(|r| r != ip && reservation_free(r)) {
            return Err(Refusal::HasReservation);
        }
        if reserved != Some(ip) {
            if !subnet.in_pool(ip) {
                return Err(Refusal::NotAssignable);
            }
            if reserved_for_other(ip) {
                return Err(Refusal::ReservedForOther);
            }
        }
        if self.by_ip.get(&ip).is_some_and(|e| e.blocks(mac, now)) {
            return Err(Refusal::Taken);
        }
        let expires = now + u64::from(subnet.lease_secs);
        self.bind(mac, ip, Hold::Leased(expires), now);
        Ok(expires)
    }

    /// Whether we know `mac` holds `ip` (a lease or an offer, even expired but not reused).
    pub fn knows(&self, mac: Mac, ip: Ipv4Addr) -> bool {
        self.by_ip.get(&ip).is_some_and(|e| e.mac == mac)
    }

    /// Whether anything at all is recorded for `ip`.
    pub fn has_record(&self, ip: Ipv4Addr) -> bool {
        self.by_ip.contains_key(&ip)
    }

    /// A RELEASE: frees the address if `mac` holds it. Returns whether anything changed.
    pub fn release(&mut self, mac: Mac, ip: Ipv4Addr) -> bool {
        match self.by_ip.get_mut(&ip) {
            Some(e) if e.mac == mac && e.hold != Hold::Released => {
                e.hold = Hold::Released;
                true
            }
            _ => false,
        }
    }

    /// A DECLINE: quarantines the address for `secs` if `mac` was given it.
    pub fn decline(&mut self, mac: Mac, ip: Ipv4Addr, until: u64) -> bool {
        if !self.knows(mac, ip) {
            return false;
        }
        self.by_ip.insert(ip, Entry { mac, hold: Hold::Declined(until) });
        self.by_mac.remove(&mac);
        true
    }

    /// Forgets an offer the client turned down (it chose another server).
    pub fn withdraw_offer(&mut self, mac: Mac) {
        if let Some(ip) = self.by_mac.get(&mac).copied() {
            if matches!(self.by_ip.get(&ip), Some(Entry { hold: Hold::Offered(_), mac: holder }) if *holder == mac) {
                self.by_ip.remove(&ip);
                self.by_mac.remove(&mac);
            }
        }
    }

    /// Leases bound and unexpired at `now`.
    pub fn active(&self, now: u64) -> usize {
        self.by_ip.values().filter(|e| matches!(e.hold, Hold::Leased(t) if t > now)).count()
    }

    fn bind(&mut self, mac: Mac, ip: Ipv4Addr, hold: Hold, now: u64) {
        if let Some(old) = self.by_mac.insert(mac, ip) {
            if old != ip {
                // A client holds one address per server; its previous one goes back to the pool
                // unless it is still leased (then it simply expires).
                if let Some(e) = self.by_ip.get(&old) {
                    if e.mac == mac && !matches!(e.hold, Hold::Leased(t) if t > now) {
                        self.by_ip.remove(&old);
                    }
                }
            }
        }
        // The address may be taken over from an earlier holder whose offer or lease ran out.
        if let Some(prev) = self.by_ip.insert(ip, Entry { mac, hold }) {
            if prev.mac != mac && self.by_mac.get(&prev.mac) == Some(&ip) {
                self.by_mac.remove(&prev.mac);
            }
        }
    }
}

#[cfg(test)]
mod tests;
