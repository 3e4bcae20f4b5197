//! A machine's spec made concrete: ports found by their place in the inventory, static
//! addresses from the machine's reservation or its rack's plan, the default route and the name
//! servers. What the renderers write.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::{BondMode, NetPlans, NetSpec, Network};
use crate::mac::Mac;

/// Where a machine stands: its rack's plans and its slot there.
#[derive(Debug, Clone, Copy)]
pub struct Slot<'a> {
    pub plans: &'a NetPlans,
    pub slot: u32,
}

/// One device of the installed system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub name: String,
    pub kind: Kind,
    pub dhcp: bool,
    /// Its static address with the network's prefix.
    pub address: Option<Ipv4Net>,
    /// The named network the address is in.
    pub network: Option<String>,
    pub mtu: Option<u16>,
    /// The VLAN devices on it.
    pub vlans: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Matched by MAC (given, or found by its port's place) or by name.
    Ethernet {
        mac: Option<Mac>,
        match_name: Option<String>,
        bond: Option<String>,
    },
    /// `mac`: its first member's, so DHCP and the appliance know it.
    Bond {
        mode: BondMode,
        miimon: u32,
        members: Vec<String>,
        mac: Option<Mac>,
    },
    Vlan {
        id: u16,
        link: String,
    },
}

/// The network of an installed node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub devices: Vec<Device>,
    /// The default route: the device and the gateway.
    pub gateway: Option<(String, Ipv4Addr)>,
    pub dns: Vec<Ipv4Addr>,
    pub agent_via: Option<String>,
}

impl Resolved {
    pub fn device(&self, name: &str) -> Option<&Device> {
        self.devices.iter().find(|d| d.name == name)
    }
}

/// Resolves a checked spec for one machine. `ports`: the MACs of its physical ports in the
/// inventory's order; `slot`: where it stands, if placed. Fails, saying what is missing, when
/// a port is not there or a static address has no source.
pub fn resolve(spec: &NetSpec, networks: &[Network], ports: &[Mac], slot: Option<Slot>) -> Result<Resolved, String> {
    let net = |n: &str| networks.iter().find(|x| x.name == n).ok_or_else(|| format!("no network {n:?} in the config"));
    let mut devices = Vec::new();
    let mut dns: Vec<Ipv4Addr> = Vec::new();
    let mut first_gateway = None;
    let mut address = |device: &str, network: &Option<String>, explicit: Option<Ipv4Addr>| -> Result<_, String> {
        let Some(n) = network else { return Ok((None, None)) };
        let n = net(n)?;
        let ip = match explicit {
            Some(ip) => ip,
            None => slot
                .and_then(|s| s.plans.get(&n.name)?.address(s.slot))
                .ok_or_else(|| format!("{device}: no address in network {}: the machine reserves none and its rack's plan gives its slot none", n.name))?,
        };
        for d in &n.dns {
            if !dns.contains(d) {
                dns.push(*d);
            }
        }
        if let (None, Some(g)) = (&first_gateway, n.gateway) {
            first_gateway = Some((device.to_string(), g));
        }
        let prefixed = Ipv4Net::new(ip, n.cidr.prefix_len()).map_err(|e| e.to_string())?;
        Ok((Some(prefixed), n.mtu))
    };
    let bond_of = |e: &str| spec.bonds.iter().find(|b| b.members.iter().any(|m| m == e)).map(|b| b.name.clone());
    let mut macs = std::collections::BTreeMap::new();
    for e in &spec.ethernets {
        let mac = match (e.mac, e.port) {
            (Some(m), _) => Some(m),
            (None, Some(p)) => Some(*ports.get(p as usize).ok_or_else(|| {
                format!("{}: port {p}: the inventory lists {} physical port(s)", e.name, ports.len())
            })?),
            (None, None) => None,
        };
        macs.insert(e.name.clone(), mac);
        let (addr, mtu) = address(&e.name, &e.network, e.address)?;
        let kind = Kind::Ethernet { mac, match_name: e.match_name.clone(), bond: bond_of(&e.name) };
        devices.push(Device {
            name: e.name.clone(),
            kind,
            dhcp: e.dhcp,
            address: addr,
            network: e.network.clone(),
            mtu: e.mtu.or(mtu),
            vlans: vec![],
        });
    }
    for b in &spec.bonds {
        let (addr, mtu) = address(&b.name, &b.network, b.address)?;
        let mac = b.members.first().and_then(|m| macs.get(m).copied().flatten());
        let kind = Kind::Bond { mode: b.mode, miimon: b.miimon, members: b.members.clone(), mac };
        devices.push(Device {
            name: b.name.clone(),
            kind,
            dhcp: b.dhcp,
            address: addr,
            network: b.network.clone(),
            mtu: b.mtu.or(mtu),
            vlans: vec![],
        });
    }
    for v in &spec.vlans {
        let name = v.device();
        let (addr, mtu) = address(&name, &v.network, v.address)?;
        if let Some(parent) = devices.iter_mut().find(|d| d.name == v.link) {
            parent.vlans.push(name.clone());
        }
        let kind = Kind::Vlan { id: v.id, link: v.link.clone() };
        devices.push(Device {
            name,
            kind,
            dhcp: v.dhcp,
            address: addr,
            network: v.network.clone(),
            mtu: v.mtu.or(mtu),
            vlans: vec![],
        });
    }
    let gateway = match &spec.gateway_network {
        Some(g) => {
            let gw = net(g)?.gateway.ok_or_else(|| format!("network {g} has no gateway"))?;
            devices.iter().find(|d| d.network.as_deref() == Some(g.as_str())).map(|d| (d.name.clone(), gw))
        }
        None => first_gateway,
    };
    let agent_via = spec.agent_via.clone().or_else(|| {
        let first = |f: &dyn Fn(&Device) -> bool| devices.iter().find(|d| f(d)).map(|d| d.name.clone());
        first(&|d| d.dhcp).or_else(|| first(&|d| d.address.is_some()))
    });
    Ok(Resolved { devices, gateway, dns, agent_via })
}
