//! What an installed node's agent reports against what its spec says should have come up.

use rackboot_agent::wire::Link;

use super::{Kind, Resolved};

/// The differences between a machine's resolved network and the links its installed agent
/// reports, one sentence each; empty: it came up as planned. Ports are found by MAC (their
/// names in the spec are rackboot's own), bonds and VLANs by name.
pub fn differences(r: &Resolved, links: &[Link]) -> Vec<String> {
    let mut out = Vec::new();
    for d in &r.devices {
        let link = match &d.kind {
            Kind::Ethernet { bond: Some(_), .. } => continue,
            Kind::Ethernet { mac, .. } => {
                mac.and_then(|m| links.iter().find(|l| l.kind == "ether" && l.mac.eq_ignore_ascii_case(&m.to_string())))
            }
            Kind::Bond { .. } | Kind::Vlan { .. } => links.iter().find(|l| l.name == d.name),
        };
        let Some(link) = link else {
            if !matches!(d.kind, Kind::Ethernet { mac: None, .. }) {
                out.push(format!("{} is missing", d.name));
            }
            continue;
        };
        match &d.kind {
            Kind::Bond { mode, members, .. } => {
                if link.kind != "bond" {
                    out.push(format!("{} is a {} device, not a bond", d.name, link.kind));
                }
                if link.bond_mode.as_deref() != Some(mode.as_str()) {
                    let is = link.bond_mode.as_deref().unwrap_or("no mode");
                    out.push(format!("{} is {is}, not {}", d.name, mode.as_str()));
                }
                if link.members.len() != members.len() {
                    out.push(format!("{} has {} of its {} members", d.name, link.members.len(), members.len()));
                }
            }
            Kind::Vlan { id, .. } if link.vlan_id != Some(*id) => {
                out.push(format!("{} is not VLAN {id}", d.name));
            }
            _ => {}
        }
        if !link.up {
            out.push(format!("{} ({}) is down", d.name, link.name));
        }
        if let Some(a) = d.address {
            if !link.addresses.iter().any(|x| *x == a.to_string()) {
                out.push(format!("{} ({}) lacks {a}", d.name, link.name));
            }
        } else if d.dhcp && link.addresses.is_empty() {
            out.push(format!("{} ({}) has no address from DHCP", d.name, link.name));
        }
    }
    out
}
