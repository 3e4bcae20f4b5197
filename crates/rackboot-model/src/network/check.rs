//! Refusing a bad network spec or rack plan, naming the field at fault.

use std::collections::{BTreeMap, BTreeSet};

use super::{AddressPlan, Addressing, NetPlans, NetSpec, Network, MAX_DEVICES, MAX_IFNAME, MAX_MEMBERS, MAX_PLAN};

/// A refused spec: the field (`bonds[0].members[1]`, relative to the spec) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct NetError {
    pub field: String,
    pub message: String,
}

fn err<T>(field: impl Into<String>, message: impl Into<String>) -> Result<T, NetError> {
    Err(NetError { field: field.into(), message: message.into() })
}

/// A kernel interface name: 1-15 of letters, digits, `_`, `-`, `.`; `glob` also allows `*`, `?`.
fn ifname(field: &str, name: &str, glob: bool) -> Result<(), NetError> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "_-.".contains(c) || (glob && "*?".contains(c));
    if name.is_empty() || name.len() > MAX_IFNAME || !name.chars().all(ok) || name == "." || name == ".." {
        return err(
            field,
            format!("{name:?} is not an interface name (1-{MAX_IFNAME} letters, digits, '_', '-', '.')"),
        );
    }
    Ok(())
}

/// Checks a spec against the config's named networks. `rack_default`: the spec is a rack's
/// default for its slots, so it may not name MACs or addresses (each server has its own).
pub fn check(spec: &NetSpec, networks: &[Network], rack_default: bool) -> Result<(), NetError> {
    for (what, n) in [("ethernets", spec.ethernets.len()), ("bonds", spec.bonds.len()), ("vlans", spec.vlans.len())] {
        if n > MAX_DEVICES {
            return err(what, format!("at most {MAX_DEVICES}"));
        }
    }
    let mut names = BTreeSet::new();
    let mut macs = BTreeSet::new();
    let mut ports = BTreeSet::new();
    for (i, e) in spec.ethernets.iter().enumerate() {
        let f = format!("ethernets[{i}]");
        ifname(&format!("{f}.name"), &e.name, false)?;
        let ways = e.mac.is_some() as u8 + e.match_name.is_some() as u8 + e.port.is_some() as u8;
        if ways != 1 {
            return err(&f, "exactly one of mac, match_name and port says which port it is");
        }
        if let Some(m) = e.mac {
            if rack_default {
                return err(
                    format!("{f}.mac"),
                    "a rack's default cannot name a MAC (each server has its own): use port or match_name",
                );
            }
            if !macs.insert(m) {
                return err(format!("{f}.mac"), format!("{m} is named twice"));
            }
        }
        if let Some(g) = &e.match_name {
            ifname(&format!("{f}.match_name"), g, true)?;
        }
        if let Some(p) = e.port {
            if p > 31 || !ports.insert(p) {
                return err(format!("{f}.port"), format!("port {p} is named twice or is past 31"));
            }
        }
        if !names.insert(e.name.clone()) {
            return err(format!("{f}.name"), format!("{} is named twice", e.name));
        }
    }
    let ethernets: BTreeSet<&str> = spec.ethernets.iter().map(|e| e.name.as_str()).collect();
    let mut members: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, b) in spec.bonds.iter().enumerate() {
        let f = format!("bonds[{i}]");
        ifname(&format!("{f}.name"), &b.name, false)?;
        if !names.insert(b.name.clone()) {
            return err(format!("{f}.name"), format!("{} is named twice", b.name));
        }
        if b.members.is_empty() || b.members.len() > MAX_MEMBERS {
            return err(format!("{f}.members"), format!("a bond has 1 to {MAX_MEMBERS} members"));
        }
        if b.miimon > 60_000 {
            return err(format!("{f}.miimon"), "at most 60000 ms");
        }
        for (j, m) in b.members.iter().enumerate() {
            let mf = format!("{f}.members[{j}]");
            if !ethernets.contains(m.as_str()) {
                return err(mf, format!("{m} is not one of the ethernets"));
            }
            if let Some(other) = members.insert(m, i) {
                let whose = if other == i { "this bond".to_string() } else { format!("bonds[{other}] too") };
                return err(mf, format!("{m} is a member of {whose}"));
            }
        }
    }
    for (i, e) in spec.ethernets.iter().enumerate() {
        let ip = e.ip();
        if members.contains_key(e.name.as_str()) && (ip.dhcp || ip.network.is_some()) {
            return err(format!("ethernets[{i}]"), format!("{} is a bond member: its bond gets the address", e.name));
        }
    }
    let bonds: BTreeSet<&str> = spec.bonds.iter().map(|b| b.name.as_str()).collect();
    let mut tags = BTreeSet::new();
    for (i, v) in spec.vlans.iter().enumerate() {
        let f = format!("vlans[{i}]");
        if !(1..=4094).contains(&v.id) {
            return err(format!("{f}.id"), format!("VLAN id {} is outside 1-4094", v.id));
        }
        if members.contains_key(v.link.as_str()) {
            return err(format!("{f}.link"), format!("{} is a bond member: put the VLAN on its bond", v.link));
        }
        if !ethernets.contains(v.link.as_str()) && !bonds.contains(v.link.as_str()) {
            return err(format!("{f}.link"), format!("{} is neither one of the ethernets nor a bond", v.link));
        }
        if !tags.insert((v.link.clone(), v.id)) {
            return err(format!("{f}.id"), format!("VLAN {} is on {} twice", v.id, v.link));
        }
        let name = v.device();
        ifname(&format!("{f}.name"), &name, false)?;
        if !names.insert(name.clone()) {
            return err(format!("{f}.name"), format!("{name} is named twice"));
        }
        if let Some(n) = v.network.as_deref().and_then(|n| networks.iter().find(|x| x.name == n)) {
            if n.vlan.is_some_and(|id| id != v.id) {
                return err(
                    format!("{f}.id"),
                    format!("network {} is VLAN {}, not {}", n.name, n.vlan.unwrap_or(0), v.id),
                );
            }
        }
    }
    let fields = |kind: &str, i: usize| format!("{kind}[{i}]");
    let all: Vec<(String, Addressing)> =
        (spec.ethernets.iter().enumerate().map(|(i, e)| (fields("ethernets", i), e.ip())))
            .chain(spec.bonds.iter().enumerate().map(|(i, b)| (fields("bonds", i), b.ip())))
            .chain(spec.vlans.iter().enumerate().map(|(i, v)| (fields("vlans", i), v.ip())))
            .collect();
    let mut used = BTreeSet::new();
    for (f, ip) in &all {
        addressing(f, ip, networks, rack_default)?;
        if let Some(n) = &ip.network {
            if !used.insert(n.clone()) {
                return err(format!("{f}.network"), format!("{n} is on two devices (one address per network)"));
            }
        }
    }
    if let Some(g) = &spec.gateway_network {
        let Some(n) = networks.iter().find(|n| &n.name == g) else {
            return err("gateway_network", format!("no network {g:?} in [[provision.networks]]"));
        };
        if !used.contains(g) {
            return err("gateway_network", format!("no device has an address in {g}"));
        }
        if n.gateway.is_none() {
            return err("gateway_network", format!("network {g} has no gateway"));
        }
    }
    if let Some(a) = &spec.agent_via {
        let devices = spec.devices();
        match devices.iter().find(|(n, _)| n == a) {
            None => return err("agent_via", format!("{a} is not one of the devices")),
            Some((_, ip)) if !ip.dhcp && ip.network.is_none() => {
                return err("agent_via", format!("{a} has no address (dhcp or network)"))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn addressing(f: &str, ip: &Addressing, networks: &[Network], rack_default: bool) -> Result<(), NetError> {
    if let Some(m) = ip.mtu {
        if !(576..=9216).contains(&m) {
            return err(format!("{f}.mtu"), format!("MTU {m} is outside 576-9216"));
        }
    }
    match (&ip.network, ip.address) {
        (Some(_), _) if ip.dhcp => err(f, "dhcp or a network, not both"),
        (None, Some(_)) => err(format!("{f}.address"), "an address needs its network"),
        (Some(_), Some(_)) if rack_default => err(
            format!("{f}.address"),
            "a rack's default cannot name an address: the rack's plan for the network gives each slot its own",
        ),
        (Some(n), address) => {
            let Some(net) = networks.iter().find(|x| &x.name == n) else {
                let known: Vec<&str> = networks.iter().map(|n| n.name.as_str()).collect();
                return err(
                    format!("{f}.network"),
                    format!("no network {n:?} in [[provision.networks]] (known: {})", known.join(", ")),
                );
            };
            match address {
                Some(a) if !net.assignable(a) => err(
                    format!("{f}.address"),
                    format!(
                        "{a} is outside network {n}'s static range (or is its network, broadcast or gateway address)"
                    ),
                ),
                _ => Ok(()),
            }
        }
        (None, None) => Ok(()),
    }
}

/// Checks a rack's plans (`network name -> FIRST-LAST`) against the named networks.
pub fn check_plans(wire: &BTreeMap<String, String>, networks: &[Network]) -> Result<NetPlans, NetError> {
    let mut plans = NetPlans::new();
    for (name, text) in wire {
        let f = format!("network_plans.{name}");
        let Some(net) = networks.iter().find(|n| &n.name == name) else {
            return err(f, format!("no network {name:?} in [[provision.networks]]"));
        };
        let parse = |s: &str| {
            s.trim()
                .parse()
                .map_err(|_| NetError { field: f.clone(), message: format!("{s:?} is not an IPv4 address") })
        };
        let (a, b) =
            text.split_once('-').ok_or_else(|| NetError { field: f.clone(), message: "expected FIRST-LAST".into() })?;
        let plan = AddressPlan { first: parse(a)?, last: parse(b)? };
        if plan.first > plan.last || u32::from(plan.last) - u32::from(plan.first) >= MAX_PLAN {
            return err(f, format!("FIRST must not be after LAST, and a plan has at most {MAX_PLAN} addresses"));
        }
        let gateway_inside = net.gateway.is_some_and(|g| (plan.first..=plan.last).contains(&g));
        if !net.assignable(plan.first) || !net.assignable(plan.last) || gateway_inside {
            return err(f, format!("{text} is not inside network {name}'s static range (or holds its gateway)"));
        }
        plans.insert(name.clone(), plan);
    }
    Ok(plans)
}

/// An address held twice: a machine's reservation (`mine`, machine `me`) that another machine
/// reserves too, or that a rack's plan for the network holds. `others`: every machine's
/// reservations, `(machine, network, address)`; `racks`: every rack's plans, by rack name.
pub fn clash(
    me: u64,
    mine: &[(String, std::net::Ipv4Addr)],
    others: &[(u64, String, std::net::Ipv4Addr)],
    racks: &[(&str, &NetPlans)],
) -> Option<String> {
    for (net, ip) in mine {
        if let Some((o, _, _)) = others.iter().find(|(o, n, a)| *o != me && n == net && a == ip) {
            return Some(format!("{ip} in network {net} is reserved for machine {o}"));
        }
        if let Some((rack, _)) = racks.iter().find(|(_, plans)| plans.get(net).is_some_and(|p| p.contains(*ip))) {
            return Some(format!("{ip} in network {net} is in rack {rack}'s plan for it"));
        }
    }
    None
}

/// Rack `name`'s network plans against the other racks' (no overlap in one network) and the
/// machines' own reservations (none inside a plan).
pub fn plans_clash(
    name: &str,
    plans: &NetPlans,
    racks: &[(&str, &NetPlans)],
    reservations: &[(u64, String, std::net::Ipv4Addr)],
) -> Option<String> {
    for (net, p) in plans {
        for (other, theirs) in racks.iter().filter(|(o, _)| *o != name) {
            if let Some(q) = theirs.get(net).filter(|q| p.overlaps(q)) {
                return Some(format!("network_plans.{net} overlaps rack {other}'s ({}-{})", q.first, q.last));
            }
        }
        if let Some((m, _, ip)) = reservations.iter().find(|(_, n, ip)| n == net && p.contains(*ip)) {
            return Some(format!("network_plans.{net} holds {ip}, which machine {m} reserves"));
        }
    }
    None
}
