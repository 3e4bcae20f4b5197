//! Where a machine is on the network, as far as rackboot can tell: the address it leases or has
//! reserved, the address its MAC was seen asking for over DHCP (proxy mode, where another server
//! leases), or the address its authenticated agent enrolled from. Boot nonces and installer
//! tokens go only to that address; a request from anywhere else, or for a machine whose address
//! is unknown, gets neither.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use super::model::Machine;
use super::{now_secs, Cmdb};
use rackboot_model::mac::Mac;

/// How long an address seen in a DHCP request counts as the MAC's (an install takes a while,
/// and the installer's own DHCP request refreshes it).
const SEEN_SECS: u64 = 3600;
/// Addresses seen kept at most; a flood of spoofed requests cannot grow memory past this.
const SEEN_MAX: usize = 65_536;

/// Addresses seen in DHCP requests (proxy mode), by address.
#[derive(Debug, Default)]
pub struct Seen {
    by_ip: HashMap<Ipv4Addr, (Mac, u64)>,
}

impl Seen {
    fn insert(&mut self, ip: Ipv4Addr, mac: Mac, now: u64) {
        if self.by_ip.len() >= SEEN_MAX && !self.by_ip.contains_key(&ip) {
            self.by_ip.retain(|_, (_, at)| *at + SEEN_SECS > now);
            if self.by_ip.len() >= SEEN_MAX {
                // Still full of fresh entries: a flood. The oldest half goes.
                let mut ages: Vec<u64> = self.by_ip.values().map(|(_, at)| *at).collect();
                ages.sort_unstable();
                let cut = ages[ages.len() / 2];
                self.by_ip.retain(|_, (_, at)| *at > cut);
            }
        }
        self.by_ip.insert(ip, (mac, now));
    }

    fn mac_at(&self, ip: Ipv4Addr, now: u64) -> Option<Mac> {
        self.by_ip.get(&ip).filter(|(_, at)| *at + SEEN_SECS > now).map(|(mac, _)| *mac)
    }
}

/// The IPv4 address of a peer (IPv4-mapped IPv6 included).
pub fn peer_v4(ip: IpAddr) -> Option<Ipv4Addr> {
    match ip {
        IpAddr::V4(ip) => Some(ip),
        IpAddr::V6(ip) => ip.to_ipv4_mapped(),
    }
}

/// How long an address released over DHCPv6 stays its client's, as far as [`Cmdb::is_address_of`]
/// goes. UEFI firmware releases its PXE lease as it starts the loader it fetched (EDK2 stops
/// its DHCPv6 instance), and the loader goes on with that address: Debian's GRUB fetches its
/// config from it a few seconds later.
pub(crate) const RELEASED6_GRACE_SECS: u64 = 120;

impl Cmdb {
    /// The MAC whose DHCPv6 lease on `ip` was released in the last [`RELEASED6_GRACE_SECS`]
    /// (an address leased to anyone since is active, and answered before this is asked).
    async fn just_released6(&self, ip: std::net::Ipv6Addr) -> Option<Mac> {
        let lease = self.lease6(ip).await.ok()??;
        let recent = lease.updated_at + RELEASED6_GRACE_SECS >= now_secs();
        (lease.state == crate::model::LeaseState::Released && recent).then_some(lease.mac).flatten()
    }

    /// Notes that `mac` asked for `ip` in a DHCP request another server answers (proxy mode).
    pub fn saw_address(&self, mac: Mac, ip: Ipv4Addr) {
        if ip.is_unspecified() || ip.is_broadcast() {
            return;
        }
        self.inner.seen.lock().expect("seen lock").insert(ip, mac, now_secs());
    }

    /// Whether `ip` is machine `m`'s address (or, with no machine yet, `mac`'s): its lease or
    /// reservation, else the address its MAC was seen asking for, else where its approved agent
    /// enrolled from. `false` when rackboot knows no address for it.
    pub async fn is_address_of(&self, ip: IpAddr, mac: Mac, m: Option<&Machine>) -> bool {
        let owns = |id: u64| m.is_some_and(|m| m.id == id);
        let has_mac = |x: Mac| x == mac || m.is_some_and(|m| m.macs.contains(&x));
        let Some(ip) = peer_v4(ip) else {
            // IPv6: a DHCPv6 lease of this machine's MAC on the address, else (no lease on it)
            // an address SLAAC formed from one of its MACs, or one it released moments ago.
            let IpAddr::V6(ip6) = ip else { return false };
            let held = self.inner.index.read().expect("index lock").active_lease6_to(ip6, now_secs());
            return match held {
                Some(holder) => has_mac(holder),
                None if rackboot_model::lease6::mac_from_eui64(ip6).is_some_and(has_mac) => true,
                None => self.just_released6(ip6).await.is_some_and(has_mac),
            };
        };
        let leased_or_reserved = {
            let index = self.inner.index.read().expect("index lock");
            match index.reserved_owner(ip) {
                Some(id) => Some(owns(id)),
                None => index.active_lease_to(ip, now_secs()).map(has_mac),
            }
        };
        if let Some(answer) = leased_or_reserved {
            return answer;
        }
        if let Some(x) = self.inner.seen.lock().expect("seen lock").mac_at(ip, now_secs()) {
            return has_mac(x);
        }
        let Some(m) = m else { return false };
        // Addresses it is known by elsewhere rule the agent's last address out.
        if m.reserved_ip.is_some() {
            return false;
        }
        match self.agent(m.id).await {
            Ok(Some(rec)) => rec.approved && rec.enrolled_from.as_deref() == Some(ip.to_string().as_str()),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_addresses_expire_and_stay_bounded() {
        let mut s = Seen::default();
        let mac: Mac = "52:54:00:00:00:01".parse().unwrap();
        s.insert(Ipv4Addr::new(198, 18, 0, 9), mac, 100);
        assert_eq!(s.mac_at(Ipv4Addr::new(198, 18, 0, 9), 100 + SEEN_SECS - 1), Some(mac));
        assert_eq!(s.mac_at(Ipv4Addr::new(198, 18, 0, 9), 100 + SEEN_SECS), None);
        for i in 0..(SEEN_MAX as u32 + 10) {
            s.insert(Ipv4Addr::from(0x0a00_0000 + i), mac, 1000 + u64::from(i));
        }
        assert!(s.by_ip.len() <= SEEN_MAX, "{}", s.by_ip.len());
        assert_eq!(s.mac_at(Ipv4Addr::from(0x0a00_0000 + SEEN_MAX as u32 + 9), 2000), Some(mac), "the newest stays");
    }
}
