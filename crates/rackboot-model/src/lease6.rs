//! DHCPv6 leases (IA_NA addresses) and how a DHCPv6 client's MAC is found: DHCPv6 names clients
//! by DUID, not by MAC, so a machine's IPv4 and IPv6 identities meet through the link-layer
//! address in its DUID (types LLT and LL), a relay's client link-layer option (RFC 6939), or the
//! EUI-64 of its link-local address.

use std::net::Ipv6Addr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::mac::Mac;
use crate::records::LeaseState;

/// The longest DUID RFC 8415 allows (11.1: at most 128 octets besides the type code).
pub const MAX_DUID: usize = 130;

/// One IA_NA address lease.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Lease6 {
    pub v: u64,
    #[schema(value_type = String, format = Ipv6)]
    pub ip: Ipv6Addr,
    /// The client's DUID, lowercase hex.
    pub duid: String,
    /// The identity association the address is bound to.
    pub iaid: u32,
    /// The client's MAC where it could be told (see the module): its machine's.
    pub mac: Option<Mac>,
    /// Unix seconds; the address is free again after this (the valid lifetime's end).
    pub expires_at: u64,
    pub state: LeaseState,
    pub updated_at: u64,
}

impl Lease6 {
    /// Whether this lease binds `ip` to another client than (`duid`, `iaid`) at `now`.
    pub fn held_by_other(&self, duid: &str, iaid: u32, now: u64) -> bool {
        self.state == LeaseState::Active && self.expires_at > now && (self.duid != duid || self.iaid != iaid)
    }
}

/// The MAC in a DUID of type LLT (1) or LL (3) with hardware type Ethernet (1).
pub fn mac_from_duid(duid: &[u8]) -> Option<Mac> {
    let (kind, hw) = (u16::from_be_bytes([*duid.first()?, *duid.get(1)?]), duid.get(2..4)?);
    let lladdr = match kind {
        1 => duid.get(8..)?,
        3 => duid.get(4..)?,
        _ => return None,
    };
    (hw == [0, 1]).then(|| mac_of(lladdr)).flatten()
}

/// A 6-byte link-layer address as a MAC.
pub fn mac_of(lladdr: &[u8]) -> Option<Mac> {
    let b: [u8; 6] = lladdr.try_into().ok()?;
    Some(Mac(b))
}

/// The MAC a link-local address was formed from (modified EUI-64: ff:fe in the middle, the
/// universal/local bit flipped), if it was.
pub fn mac_from_link_local(ip: Ipv6Addr) -> Option<Mac> {
    ip.is_unicast_link_local().then(|| mac_from_eui64(ip)).flatten()
}

/// The MAC any address's interface identifier was formed from by SLAAC's modified EUI-64 (the
/// kernel's default), if it was.
pub fn mac_from_eui64(ip: Ipv6Addr) -> Option<Mac> {
    let o = ip.octets();
    (o[11] == 0xff && o[12] == 0xfe).then_some(Mac([o[8] ^ 0x02, o[9], o[10], o[13], o[14], o[15]]))
}

/// A DUID-LL for `mac`: what the appliance's server identifier is made of.
pub fn duid_ll(mac: Mac) -> Vec<u8> {
    let mut d = vec![0, 3, 0, 1];
    d.extend_from_slice(&mac.0);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mac_is_found_in_duids_and_link_local_addresses() {
        let mac = Mac([0x52, 0x54, 0, 0x12, 0x34, 0x56]);
        // LLT: type 1, hardware 1, time, then the address.
        let llt = [0, 1, 0, 1, 0x2c, 0, 0, 1, 0x52, 0x54, 0, 0x12, 0x34, 0x56];
        assert_eq!(mac_from_duid(&llt), Some(mac));
        assert_eq!(mac_from_duid(&duid_ll(mac)), Some(mac));
        // EN (2) and UUID (4) carry no MAC; a non-Ethernet LL, a short one, neither.
        assert_eq!(mac_from_duid(&[0, 2, 0, 0, 0, 9, 1, 2, 3]), None);
        assert_eq!(mac_from_duid(&[0, 4, 1, 2, 3, 4]), None);
        assert_eq!(mac_from_duid(&[0, 3, 0, 6, 0x52, 0x54, 0, 0x12, 0x34, 0x56]), None);
        assert_eq!(mac_from_duid(&[0, 3, 0, 1, 0x52]), None);
        assert_eq!(mac_from_duid(&[0]), None);
        let ll: Ipv6Addr = "fe80::5054:ff:fe12:3456".parse().unwrap();
        assert_eq!(mac_from_link_local(ll), Some(mac));
        assert_eq!(mac_from_link_local("fe80::1".parse().unwrap()), None, "not EUI-64");
        assert_eq!(mac_from_link_local("fd00::5054:ff:fe12:3456".parse().unwrap()), None, "not link-local");
        assert_eq!(mac_from_eui64("fd00::5054:ff:fe12:3456".parse().unwrap()), Some(mac), "SLAAC");
        assert_eq!(mac_from_eui64("fd00::1234".parse().unwrap()), None);
    }

    #[test]
    fn only_an_unexpired_active_lease_of_another_client_holds_an_address() {
        let l = Lease6 {
            v: 1,
            ip: "fd18::10".parse().unwrap(),
            duid: "000300015254".into(),
            iaid: 1,
            mac: None,
            expires_at: 100,
            state: LeaseState::Active,
            updated_at: 0,
        };
        assert!(!l.held_by_other("000300015254", 1, 50));
        assert!(l.held_by_other("000300015254", 2, 50), "another IA of the same client");
        assert!(l.held_by_other("00ff", 1, 50));
        assert!(!l.held_by_other("00ff", 1, 100), "expired");
        assert!(!Lease6 { state: LeaseState::Released, ..l }.held_by_other("00ff", 1, 50));
    }
}
