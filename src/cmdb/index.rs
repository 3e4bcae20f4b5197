//! In-memory index of the hot subset of the CMDB (MAC -> machine, reservations, hostnames), kept
//! in step with redb by the writer thread so the DHCP path never waits on storage for a lookup.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use super::model::Machine;
use crate::mac::Mac;

/// What the DHCP path needs to know about a machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Brief {
    pub id: u64,
    pub macs: Vec<Mac>,
    pub hostname: Option<String>,
    pub reserved_ip: Option<Ipv4Addr>,
}

impl From<&Machine> for Brief {
    fn from(m: &Machine) -> Self {
        Brief { id: m.id, macs: m.macs.clone(), hostname: m.hostname.clone(), reserved_ip: m.reserved_ip }
    }
}

/// A change to apply once the transaction that made it has committed.
#[derive(Debug)]
pub enum Delta {
    Upsert(Brief),
    Remove(u64),
    /// An address now leased to a MAC (`Some`) or no longer (`None`).
    Lease(Ipv4Addr, Option<Mac>),
}

/// The index itself.
#[derive(Debug, Default)]
pub struct Index {
    machines: HashMap<u64, Brief>,
    by_mac: HashMap<Mac, u64>,
    by_ip: HashMap<Ipv4Addr, u64>,
    by_hostname: HashMap<String, u64>,
    leased: HashMap<Ipv4Addr, Mac>,
}

impl Index {
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

    /// The MAC holding a lease on `ip` (TFTP and HTTP know clients only by address).
    pub fn leased_to(&self, ip: Ipv4Addr) -> Option<Mac> {
        self.leased.get(&ip).copied()
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
                    self.machines.insert(b.id, b);
                }
                Delta::Remove(id) => self.remove(id),
                Delta::Lease(ip, Some(mac)) => {
                    self.leased.insert(ip, mac);
                }
                Delta::Lease(ip, None) => {
                    self.leased.remove(&ip);
                }
            }
        }
    }

    fn remove(&mut self, id: u64) {
        if let Some(old) = self.machines.remove(&id) {
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
