//! In-memory index of the hot subset of the CMDB (MAC -> machine, reservations, hostnames), kept
//! in step with redb by the writer thread so the DHCP path never waits on storage for a lookup.

mod dns6;
mod facets;

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

pub use facets::Facet;

use super::model::{Lease, Machine, MachineState};
use rackboot_model::mac::Mac;

/// What the DHCP path needs to know about a machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Brief {
    pub id: u64,
    pub macs: Vec<Mac>,
    pub hostname: Option<String>,
    pub reserved_ip: Option<Ipv4Addr>,
    pub state: MachineState,
    /// Only seen on the network so far: `discovered`, and nothing an operator set (hostname,
    /// reservation, tags, pinned profile). These count against the unclaimed-machine cap.
    pub unclaimed: bool,
    /// What the machine list filters and searches on (shared: a Brief is cloned on hot paths).
    pub facet: Arc<Facet>,
    /// Its own choice of UEFI loader, for DHCP (see [`Machine::uefi_loader`]).
    pub uefi_loader: Option<rackboot_model::boot::UefiLoader>,
    /// The profile an operator pinned, for DHCP (a Windows profile starts its boot manager).
    pub boot_profile: Option<String>,
    /// The rack it is placed in, for DHCP (the rack's UEFI loader).
    pub rack: Option<String>,
    /// An installer a provisioning run set up has not reported back yet, for DHCP.
    pub installer_pending: bool,
}

impl From<&Machine> for Brief {
    fn from(m: &Machine) -> Self {
        Brief {
            id: m.id,
            macs: m.macs.clone(),
            hostname: m.hostname.clone(),
            reserved_ip: m.reserved_ip,
            state: m.state,
            unclaimed: is_unclaimed(m),
            facet: Arc::new(Facet::from(m)),
            uefi_loader: m.uefi_loader,
            boot_profile: m.boot_profile.clone(),
            rack: m.rack.clone(),
            installer_pending: m.installer_pending(),
        }
    }
}

/// Whether `m` is only what the network told rackboot (see [`Brief::unclaimed`]).
pub fn is_unclaimed(m: &Machine) -> bool {
    m.state == MachineState::Discovered
        && m.hostname.is_none()
        && m.reserved_ip.is_none()
        && m.tags.is_empty()
        && m.boot_profile.is_none()
        && m.uefi_loader.is_none()
}

/// A change to apply once the transaction that made it has committed.
#[derive(Debug)]
pub enum Delta {
    Upsert(Brief),
    Remove(u64),
    /// An address now leased (`Some`) or no longer (`None`).
    Lease(Ipv4Addr, Option<LeaseBrief>),
    /// The same for a DHCPv6 address (only those whose client's MAC is known).
    Lease6(Ipv6Addr, Option<LeaseBrief>),
}

/// What the index keeps of an active lease.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseBrief {
    pub mac: Mac,
    /// The hostname the client sent (option 12), if any.
    pub hostname: Option<String>,
    /// Unix seconds.
    pub expires_at: u64,
}

impl From<&Lease> for LeaseBrief {
    fn from(l: &Lease) -> Self {
        LeaseBrief { mac: l.mac, hostname: l.client_hostname.clone(), expires_at: l.expires_at }
    }
}

/// The names DNS should publish, as of one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DnsHosts {
    /// (lowercase hostname, address), sorted and without duplicates.
    pub hosts: Vec<(String, Ipv4Addr)>,
    /// The same for IPv6 (AAAA): each named machine's newest DHCPv6 address.
    pub hosts6: Vec<(String, Ipv6Addr)>,
    /// When the earliest lease behind one of `hosts` expires (Unix seconds).
    pub next_expiry: Option<u64>,
}

/// The index itself.
#[derive(Debug, Default)]
pub struct Index {
    machines: HashMap<u64, Brief>,
    by_mac: HashMap<Mac, u64>,
    by_ip: HashMap<Ipv4Addr, u64>,
    by_hostname: HashMap<String, u64>,
    leased: HashMap<Ipv4Addr, LeaseBrief>,
    /// DHCPv6 addresses held, by the MAC their client was known by (see `dns6`).
    leased6: HashMap<Ipv6Addr, LeaseBrief>,
    /// Ids of unclaimed machines, oldest (lowest id) first.
    unclaimed: BTreeSet<u64>,
    /// All ids, by state and by tag, for the machine list.
    sets: facets::Sets,
    /// On a shared store: the change-log sequence each machine's and address's entry was last
    /// applied at, so an older read never overwrites a newer one (see [`Index::apply_at`]).
    versions: HashMap<Key, u64>,
}

/// What a delta is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Machine(u64),
    Address(IpAddr),
}

impl Delta {
    fn key(&self) -> Key {
        match self {
            Delta::Upsert(b) => Key::Machine(b.id),
            Delta::Remove(id) => Key::Machine(*id),
            Delta::Lease(ip, _) => Key::Address(IpAddr::V4(*ip)),
            Delta::Lease6(ip, _) => Key::Address(IpAddr::V6(*ip)),
        }
    }
}

impl Index {
    /// The machine with this id.
    pub fn by_id(&self, id: u64) -> Option<&Brief> {
        self.machines.get(&id)
    }

    /// The machines in any of `pools`.
    pub fn ids_in_pools(&self, pools: &[String]) -> std::collections::HashSet<u64> {
        self.machines.values().filter(|b| pools.contains(&b.facet.pool)).map(|b| b.id).collect()
    }

    /// Every MAC's unexpired leased addresses at `now`.
    pub fn leased_by_mac(&self, now: u64) -> HashMap<Mac, Vec<Ipv4Addr>> {
        let mut out: HashMap<Mac, Vec<Ipv4Addr>> = HashMap::new();
        for (ip, l) in self.leased.iter().filter(|(_, l)| l.expires_at > now) {
            out.entry(l.mac).or_default().push(*ip);
        }
        out
    }

    /// The machine that owns `mac`.
    pub fn by_mac(&self, mac: Mac) -> Option<&Brief> {
        self.by_mac.get(&mac).and_then(|id| self.machines.get(id))
    }

    /// The machine id holding a reservation for `ip`.
    pub fn reserved_owner(&self, ip: Ipv4Addr) -> Option<u64> {
        self.by_ip.get(&ip).copied()
    }

    /// The machine id with hostname `h` (case-insensitive).
    pub fn by_hostname(&self, h: &str) -> Option<u64> {
        self.by_hostname.get(&h.to_ascii_lowercase()).copied()
    }

    /// Machines per state and pool.
    pub fn count_by_state_and_pool(&self) -> HashMap<(MachineState, String), usize> {
        let mut out = HashMap::new();
        for b in self.machines.values() {
            *out.entry((b.state, b.facet.pool.clone())).or_insert(0) += 1;
        }
        out
    }

    /// Machines per state.
    pub fn count_by_state(&self) -> HashMap<MachineState, usize> {
        let mut out = HashMap::new();
        for b in self.machines.values() {
            *out.entry(b.state).or_insert(0) += 1;
        }
        out
    }

    /// How many machines are unclaimed.
    pub fn unclaimed_count(&self) -> usize {
        self.unclaimed.len()
    }

    /// Unclaimed machine ids from `from` on, oldest first.
    pub fn unclaimed_from(&self, from: u64) -> impl Iterator<Item = u64> + '_ {
        self.unclaimed.range(from..).copied()
    }

    /// The MAC holding an unexpired lease on `ip` at `now`.
    pub fn active_lease_to(&self, ip: Ipv4Addr, now: u64) -> Option<Mac> {
        self.leased.get(&ip).filter(|l| l.expires_at > now).map(|l| l.mac)
    }

    /// The MAC holding a lease on `ip` (TFTP and HTTP know clients only by address).
    pub fn leased_to(&self, ip: Ipv4Addr) -> Option<Mac> {
        self.leased.get(&ip).map(|l| l.mac)
    }

    /// Hostname/address pairs for DNS at time `now`: every machine's hostname with its
    /// reservation, and each MAC's newest unexpired lease (a client that moved keeps its old lease
    /// until it runs out, but only the new address is published) under its machine's hostname or,
    /// for machines the operator has not named, the hostname the client sent (a CMDB name always
    /// wins a clash; a name in `held`, which a rack keeps for a slot, is never a client's).
    pub fn dns_hosts(&self, now: u64, held: &std::collections::HashSet<String>) -> DnsHosts {
        let mut hosts = Vec::new();
        let mut next_expiry: Option<u64> = None;
        for b in self.machines.values() {
            if let (Some(h), Some(ip)) = (&b.hostname, b.reserved_ip) {
                hosts.push((h.to_ascii_lowercase(), ip));
            }
        }
        let mut newest: HashMap<Mac, (Ipv4Addr, &LeaseBrief)> = HashMap::new();
        for (ip, l) in &self.leased {
            if l.expires_at <= now {
                continue;
            }
            let slot = newest.entry(l.mac).or_insert((*ip, l));
            if (l.expires_at, *ip) > (slot.1.expires_at, slot.0) {
                *slot = (*ip, l);
            }
        }
        // A client-sent name held by several leases goes to the one renewed last.
        let mut by_client_name: HashMap<String, (u64, Ipv4Addr)> = HashMap::new();
        for (mac, (ip, l)) in newest {
            let name = match self.by_mac(mac).and_then(|b| b.hostname.as_ref()) {
                Some(h) => h.to_ascii_lowercase(),
                None => match &l.hostname {
                    Some(h)
                        if super::model::publishable_client_name(h)
                            && self.by_hostname(h).is_none()
                            && !held.contains(&h.to_ascii_lowercase()) =>
                    {
                        let slot = by_client_name.entry(h.to_ascii_lowercase()).or_insert((l.expires_at, ip));
                        if (l.expires_at, ip) > *slot {
                            *slot = (l.expires_at, ip);
                        }
                        continue;
                    }
                    _ => continue,
                },
            };
            next_expiry = Some(next_expiry.map_or(l.expires_at, |n| n.min(l.expires_at)));
            hosts.push((name, ip));
        }
        for (name, (expires_at, ip)) in by_client_name {
            next_expiry = Some(next_expiry.map_or(expires_at, |n| n.min(expires_at)));
            hosts.push((name, ip));
        }
        hosts.sort();
        hosts.dedup();
        let hosts6 = self.dns_hosts6(now, &mut next_expiry);
        DnsHosts { hosts, hosts6, next_expiry }
    }

    /// `whole` (every machine and held address in the store) plus the removals that make this
    /// index hold nothing else: what takes a follower that missed changes back to the store.
    pub fn replace_with(&self, mut whole: Vec<Delta>) -> Vec<Delta> {
        let mut machines: std::collections::HashSet<u64> = std::collections::HashSet::new();
        let mut addresses: std::collections::HashSet<Ipv4Addr> = std::collections::HashSet::new();
        let mut addresses6: std::collections::HashSet<Ipv6Addr> = std::collections::HashSet::new();
        for d in &whole {
            match d {
                Delta::Upsert(b) => machines.insert(b.id),
                Delta::Lease(ip, Some(_)) => addresses.insert(*ip),
                Delta::Lease6(ip, Some(_)) => addresses6.insert(*ip),
                Delta::Remove(_) | Delta::Lease(_, None) | Delta::Lease6(_, None) => false,
            };
        }
        whole.extend(self.machines.keys().filter(|id| !machines.contains(id)).map(|id| Delta::Remove(*id)));
        whole.extend(self.leased.keys().filter(|ip| !addresses.contains(ip)).map(|ip| Delta::Lease(*ip, None)));
        whole.extend(self.leased6.keys().filter(|ip| !addresses6.contains(ip)).map(|ip| Delta::Lease6(*ip, None)));
        whole
    }

    /// Applies deltas read at change-log sequence `seq` (a shared store): each one only if
    /// nothing newer was applied for its machine or address. The writer (its own batch, at that
    /// batch's sequence) and the follower (another appliance's, read from the store) may get
    /// here in either order; the newer wins.
    pub fn apply_at(&mut self, delta: Vec<Delta>, seq: u64) {
        let newer: Vec<Delta> = delta
            .into_iter()
            .filter(|d| {
                let v = self.versions.entry(d.key()).or_insert(0);
                if *v > seq {
                    return false;
                }
                *v = seq;
                true
            })
            .collect();
        self.apply(newer);
    }

    /// Applies committed changes in order.
    pub fn apply(&mut self, delta: Vec<Delta>) {
        for d in delta {
            match d {
                Delta::Upsert(b) => {
                    self.remove(b.id);
                    for m in &b.macs {
                        self.by_mac.insert(*m, b.id);
                    }
                    if let Some(ip) = b.reserved_ip {
                        self.by_ip.insert(ip, b.id);
                    }
                    if let Some(h) = &b.hostname {
                        self.by_hostname.insert(h.to_ascii_lowercase(), b.id);
                    }
                    if b.unclaimed {
                        self.unclaimed.insert(b.id);
                    }
                    self.sets.insert(&b);
                    self.machines.insert(b.id, b);
                }
                Delta::Remove(id) => self.remove(id),
                Delta::Lease(ip, Some(lease)) => {
                    self.leased.insert(ip, lease);
                }
                Delta::Lease(ip, None) => {
                    self.leased.remove(&ip);
                }
                Delta::Lease6(ip, Some(lease)) => {
                    self.leased6.insert(ip, lease);
                }
                Delta::Lease6(ip, None) => {
                    self.leased6.remove(&ip);
                }
            }
        }
    }

    fn remove(&mut self, id: u64) {
        self.unclaimed.remove(&id);
        if let Some(old) = self.machines.remove(&id) {
            self.sets.remove(&old);
            for m in &old.macs {
                self.by_mac.remove(m);
            }
            if let Some(ip) = old.reserved_ip {
                self.by_ip.remove(&ip);
            }
            if let Some(h) = &old.hostname {
                self.by_hostname.remove(&h.to_ascii_lowercase());
            }
        }
    }
}

#[cfg(test)]
mod tests;
