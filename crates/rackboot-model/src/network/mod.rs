//! The installed node's network, as the CMDB holds it: Ethernet ports (matched by MAC, by name
//! or by their place in the inventory), bonds over them, VLANs on either, and what each device
//! gets: DHCP, or a static address in a named network of the config (`[[provision.networks]]`:
//! CIDR, gateway, VLAN id, DNS servers, the range static addresses come from).
//!
//! A machine carries a [`NetSpec`]; a rack carries one as the default for its slots, with an
//! address plan per named network. [`check`] refuses a bad spec with the field at fault;
//! [`resolve`] turns a machine's spec, its reservations and its rack's plan into the addresses
//! the renderers (`rackboot-boot`'s `netcfg`) write into the installed system.

mod came_up;
mod check;
mod resolve;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::mac::Mac;

pub use came_up::differences;
pub use check::{check, check_plans, clash, plans_clash, NetError};
pub use resolve::{resolve, Device, Kind, Resolved, Slot};

/// Ethernet ports, bonds and VLANs a spec may hold, each.
pub const MAX_DEVICES: usize = 32;
/// Members a bond may have.
pub const MAX_MEMBERS: usize = 8;
/// Longest device name (the kernel's IFNAMSIZ less the NUL).
pub const MAX_IFNAME: usize = 15;

/// Longest address plan, in addresses.
pub const MAX_PLAN: u32 = 1024;

/// An address range: a rack's plan (slot U<n> is FIRST + n - 1), or a named network's static
/// range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AddressPlan {
    #[schema(value_type = String, format = Ipv4)]
    pub first: Ipv4Addr,
    #[schema(value_type = String, format = Ipv4)]
    pub last: Ipv4Addr,
}

impl AddressPlan {
    /// The address slot `slot` reserves, if the plan reaches it.
    pub fn address(&self, slot: u32) -> Option<Ipv4Addr> {
        let ip = u32::from(self.first).checked_add(slot.checked_sub(1)?)?;
        (ip <= u32::from(self.last)).then(|| Ipv4Addr::from(ip))
    }

    pub(crate) fn overlaps(&self, o: &AddressPlan) -> bool {
        self.first <= o.last && o.first <= self.last
    }

    pub(crate) fn contains(&self, ip: Ipv4Addr) -> bool {
        (self.first..=self.last).contains(&ip)
    }
}

/// A named network of the config: where static addresses come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Network {
    pub name: String,
    #[schema(value_type = String, example = "10.20.0.0/24")]
    pub cidr: Ipv4Net,
    /// The router on it (the default route of a machine whose `gateway_network` it is).
    #[schema(value_type = Option<String>, format = Ipv4)]
    pub gateway: Option<Ipv4Addr>,
    /// The 802.1Q id it is carried on (a VLAN device on it must have this id).
    pub vlan: Option<u16>,
    #[schema(value_type = Vec<String>)]
    pub dns: Vec<Ipv4Addr>,
    /// The static addresses machines and racks' plans may take (`None`: the whole CIDR but
    /// its network, broadcast and gateway addresses).
    pub range: Option<AddressPlan>,
    pub mtu: Option<u16>,
}

impl Network {
    /// Whether `ip` may be a machine's static address here.
    pub fn assignable(&self, ip: Ipv4Addr) -> bool {
        let net = self.cidr;
        let inside = match self.range {
            Some(r) => (r.first..=r.last).contains(&ip),
            None => net.contains(&ip),
        };
        inside
            && net.contains(&ip)
            && ip != net.network()
            && (net.prefix_len() >= 31 || ip != net.broadcast())
            && Some(ip) != self.gateway
    }
}

/// A bond's mode (the kernel's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum BondMode {
    #[serde(rename = "802.3ad")]
    Lacp,
    #[serde(rename = "active-backup")]
    ActiveBackup,
    #[serde(rename = "balance-xor")]
    BalanceXor,
}

impl BondMode {
    pub fn as_str(self) -> &'static str {
        match self {
            BondMode::Lacp => "802.3ad",
            BondMode::ActiveBackup => "active-backup",
            BondMode::BalanceXor => "balance-xor",
        }
    }
}

/// What a device gets: nothing (a bond member, a VLAN's parent only), DHCP, or a static
/// address in a named network. Each device's `dhcp`, `network`, `address` and `mtu` fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Addressing {
    pub dhcp: bool,
    pub network: Option<String>,
    pub address: Option<Ipv4Addr>,
    pub mtu: Option<u16>,
}

macro_rules! addressing {
    ($($t:ty),*) => {$(
        impl $t {
            /// Its addressing fields.
            pub fn ip(&self) -> Addressing {
                Addressing { dhcp: self.dhcp, network: self.network.clone(), address: self.address, mtu: self.mtu }
            }
        }
    )*};
}
addressing!(Ethernet, Bond, Vlan);

/// An Ethernet port. Exactly one of `mac`, `match_name` and `port` says which.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Ethernet {
    /// The name bonds and VLANs use for it (and the installed system gives it).
    #[schema(max_length = 15, pattern = r"^(?!\.{1,2}$)[A-Za-z0-9_.-]{1,15}$")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "52:54:00:12:34:56", pattern = "^[:-]*([0-9A-Fa-f][:-]*){12}$")]
    pub mac: Option<Mac>,
    /// The kernel's name for it in the installed system; `*` and `?` match any characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 15)]
    pub match_name: Option<String>,
    /// Its place among the machine's physical ports as the inventory lists them (0 first):
    /// what a rack's default uses, where every server has its own MACs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 31)]
    pub port: Option<u8>,
    /// DHCP on this device.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dhcp: bool,
    /// A static address in this named network (`[[provision.networks]]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The address itself (a machine's spec only: it is the machine's reservation); unset, it
    /// comes from the rack's plan for the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Ipv4)]
    pub address: Option<Ipv4Addr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 576, maximum = 9216)]
    pub mtu: Option<u16>,
}

/// A bond over Ethernet ports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Bond {
    #[schema(max_length = 15, pattern = r"^(?!\.{1,2}$)[A-Za-z0-9_.-]{1,15}$")]
    pub name: String,
    /// Names of `ethernets`, at least one, none in another bond.
    #[schema(max_items = 8)]
    pub members: Vec<String>,
    pub mode: BondMode,
    /// Link monitoring interval in milliseconds.
    #[serde(default = "default_miimon")]
    #[schema(maximum = 60000)]
    pub miimon: u32,
    /// DHCP on this device.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dhcp: bool,
    /// A static address in this named network (`[[provision.networks]]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The address itself (a machine's spec only: it is the machine's reservation); unset, it
    /// comes from the rack's plan for the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Ipv4)]
    pub address: Option<Ipv4Addr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 576, maximum = 9216)]
    pub mtu: Option<u16>,
}

fn default_miimon() -> u32 {
    100
}

/// An 802.1Q VLAN on an Ethernet port or a bond.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Vlan {
    #[schema(minimum = 1, maximum = 4094)]
    pub id: u16,
    /// An Ethernet port's or a bond's name.
    pub link: String,
    /// Default `<link>.<id>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 15, pattern = r"^(?!\.{1,2}$)[A-Za-z0-9_.-]{1,15}$")]
    pub name: Option<String>,
    /// DHCP on this device.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dhcp: bool,
    /// A static address in this named network (`[[provision.networks]]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The address itself (a machine's spec only: it is the machine's reservation); unset, it
    /// comes from the rack's plan for the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Ipv4)]
    pub address: Option<Ipv4Addr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 576, maximum = 9216)]
    pub mtu: Option<u16>,
}

impl Vlan {
    pub fn device(&self) -> String {
        self.name.clone().unwrap_or_else(|| format!("{}.{}", self.link, self.id))
    }
}

/// The installed node's network. An empty spec (the default) keeps rackboot's behaviour: DHCP on
/// every Ethernet port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NetSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 32)]
    pub ethernets: Vec<Ethernet>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 32)]
    pub bonds: Vec<Bond>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 32)]
    pub vlans: Vec<Vlan>,
    /// The named network whose gateway is the default route (default: the first static
    /// network with a gateway, in ethernets, bonds, vlans order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_network: Option<String>,
    /// The device the agent calls the appliance in through (default: the first with DHCP, else
    /// the first with an address). Informational for the renderers: the agent uses routes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_via: Option<String>,
}

impl NetSpec {
    pub fn is_empty(&self) -> bool {
        self.ethernets.is_empty() && self.bonds.is_empty() && self.vlans.is_empty()
    }

    /// Every device with its addressing, in ethernets, bonds, vlans order.
    pub fn devices(&self) -> Vec<(String, Addressing)> {
        let e = self.ethernets.iter().map(|e| (e.name.clone(), e.ip()));
        let b = self.bonds.iter().map(|b| (b.name.clone(), b.ip()));
        e.chain(b).chain(self.vlans.iter().map(|v| (v.device(), v.ip()))).collect()
    }

    /// The static addresses this spec names itself, by network.
    pub fn reservations(&self) -> Vec<(String, Ipv4Addr)> {
        self.devices().into_iter().filter_map(|(_, ip)| Some((ip.network?, ip.address?))).collect()
    }
}

/// The plans of a rack: per named network, the address range its slots take (slot U<n> gets
/// FIRST + n - 1), as `FIRST-LAST`.
pub type NetPlans = BTreeMap<String, AddressPlan>;

#[cfg(test)]
mod tests;
