//! A resolved network in each OS installer's own terms: Anaconda's kickstart `network` lines,
//! debian-installer's `netcfg` answers and Ubuntu autoinstall's `network:` key.

use rackboot_model::network::{BondMode, Device, Kind, Resolved, MAX_IFNAME};
use serde::Serialize;

/// The network variables of an installer answer file; all empty for a machine without a spec,
/// whose answer files keep DHCP on any interface.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct InstallerNetwork {
    /// Kickstart `network` lines ([`kickstart`]); the template adds `--hostname=` to the first.
    pub network_lines: Vec<String>,
    /// Preseed lines for the installer's own network ([`preseed`]).
    pub netcfg_lines: Vec<String>,
    /// The autoinstall `network:` value: network-config v2 as indented JSON.
    pub network_v2: String,
}

/// The network variables of answer file `kind` (kickstart, preseed, autoinstall) for `net`
/// (`None`: the machine has no spec); the reason when the spec cannot go into that file.
pub fn render(kind: &str, net: Option<&Resolved>) -> Result<InstallerNetwork, String> {
    let Some(net) = net else { return Ok(InstallerNetwork::default()) };
    check_names(net)?;
    let mut out = InstallerNetwork::default();
    match kind {
        "kickstart" => out.network_lines = kickstart(net)?,
        "preseed" => out.netcfg_lines = preseed(net),
        _ => out.network_v2 = serde_json::to_string_pretty(&super::netplan_v2(net)).map_err(|e| e.to_string())?,
    }
    Ok(out)
}

/// Refuses any name that could end a kickstart option, a debconf value or a shell word in
/// `%pre`: the model's check allows only letters, digits, `_`, `-`, `.` (and `*`, `?` in a
/// `match_name`), but a `Resolved` can be built by hand.
fn check_names(net: &Resolved) -> Result<(), String> {
    let word = |n: &str, glob: bool| {
        let ok = |c: char| c.is_ascii_alphanumeric() || "_-.".contains(c) || (glob && "*?".contains(c));
        if n.is_empty() || n.len() > MAX_IFNAME || !n.chars().all(ok) {
            return Err(format!("{n:?} is not an interface name: refused in an installer answer file"));
        }
        Ok(())
    };
    for d in &net.devices {
        word(&d.name, false)?;
        match &d.kind {
            Kind::Ethernet { match_name, bond, .. } => {
                match_name.iter().try_for_each(|m| word(m, true))?;
                bond.iter().try_for_each(|b| word(b, false))?;
            }
            Kind::Bond { members, .. } => members.iter().try_for_each(|m| word(m, false))?,
            Kind::Vlan { link, .. } => word(link, false)?,
        }
    }
    net.agent_via.iter().chain(net.gateway.iter().map(|(d, _)| d)).try_for_each(|n| word(n, false))
}

/// Kickstart (RHEL 9) `network` lines: one per device with an address of its own, bonds with
/// `--bondslaves`/`--bondopts`, VLANs with `--vlanid`/`--interfacename` on their parent's
/// `--device`. A parent that only carries one VLAN is defined on that VLAN's line, Anaconda's
/// own way of writing a VLAN over a bond. Ports are named by MAC where `--device` allows it;
/// a bond's members (names only) and name patterns read `$(port …)`, which the kickstart's
/// `%pre` step answers with this kernel's name for that port.
pub fn kickstart(net: &Resolved) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for d in &net.devices {
        let mut line = match &d.kind {
            Kind::Ethernet { bond: Some(_), .. } => continue,
            _ if folded(d) => continue,
            Kind::Ethernet { .. } => format!("network --device={}", ethernet(d, Place::Device)),
            Kind::Bond { .. } => format!("network --device={}{}", d.name, bond_options(net, d)),
            Kind::Vlan { id, link } => {
                let parent = net.device(link).ok_or_else(|| format!("{}: no device {link}", d.name))?;
                let defined_here = if folded(parent) { bond_options(net, parent) } else { String::new() };
                let parent = match parent.kind {
                    Kind::Ethernet { .. } => ethernet(parent, Place::Device),
                    _ => parent.name.clone(),
                };
                vlan_name(&d.name)?;
                format!("network --device={parent}{defined_here} --vlanid={id} --interfacename={}", d.name)
            }
        };
        match (d.address, d.dhcp) {
            (Some(a), _) => {
                line += &format!(" --bootproto=static --ip={} --netmask={}", a.addr(), a.netmask());
                if let Some((_, gw)) = net.gateway.as_ref().filter(|(dev, _)| *dev == d.name) {
                    line += &format!(" --gateway={gw}");
                }
                if !net.dns.is_empty() {
                    let dns: Vec<String> = net.dns.iter().map(|s| s.to_string()).collect();
                    line += &format!(" --nameserver={}", dns.join(","));
                }
            }
            (None, true) => {
                line += " --bootproto=dhcp";
                if net.gateway.as_ref().is_some_and(|(dev, _)| *dev != d.name) {
                    // The static network's gateway is the default route; DHCP's must not compete.
                    line += " --nodefroute";
                }
            }
            (None, false) => line += " --noipv4 --noipv6",
        }
        if let Some(mtu) = d.mtu {
            line += &format!(" --mtu={mtu}");
        }
        lines.push(line + " --onboot=yes --activate");
    }
    Ok(lines)
}

/// Whether `d` only carries one VLAN and is defined on that VLAN's line (which gives it no
/// address): kickstart allows one `network` line per `--device`.
fn folded(d: &Device) -> bool {
    matches!(d.kind, Kind::Ethernet { bond: None, .. } | Kind::Bond { .. })
        && !d.dhcp
        && d.address.is_none()
        && d.mtu.is_none()
        && d.vlans.len() == 1
}

/// `--bondslaves`, `--bondopts` and `--bindto=mac` of bond `d` (nothing for another device).
fn bond_options(net: &Resolved, d: &Device) -> String {
    let Kind::Bond { mode, miimon, members, .. } = &d.kind else { return String::new() };
    let members: Vec<String> =
        members.iter().map(|m| net.device(m).map_or_else(|| m.clone(), |e| ethernet(e, Place::Member))).collect();
    let mut opts = format!("mode={},miimon={miimon}", mode.as_str());
    if *mode == BondMode::Lacp {
        // As the networkd files have it.
        opts += ",lacp_rate=fast,xmit_hash_policy=layer3+4";
    }
    // --bindto=mac: the members' connections follow their MACs, not this boot's names.
    format!(" --bondslaves={} --bondopts={opts} --bindto=mac", members.join(","))
}

/// Where kickstart names an Ethernet port.
#[derive(Clone, Copy)]
enum Place {
    /// `--device=`: a MAC or a name.
    Device,
    /// `--bondslaves=`: names only.
    Member,
}

/// How kickstart names Ethernet port `e` at `place`.
fn ethernet(e: &Device, place: Place) -> String {
    let Kind::Ethernet { mac, match_name, .. } = &e.kind else { return e.name.clone() };
    let pattern = match_name.as_deref().filter(|m| m.contains(['*', '?']));
    match (mac, match_name, place) {
        (_, Some(n), _) if pattern.is_none() => n.clone(),
        (Some(m), _, Place::Device) => m.to_string(),
        (Some(m), _, Place::Member) => format!("$(port {m})"),
        (None, Some(p), _) => format!("$(port '{p}')"),
        (None, None, _) => e.name.clone(),
    }
}

/// Refuses a VLAN name pykickstart refuses: with a dot it must be `NAME.ID`, and one starting
/// with `vlan` must be `vlanID`.
fn vlan_name(name: &str) -> Result<(), String> {
    let numeric = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    let bad = match (name.split_once('.'), name.strip_prefix("vlan")) {
        (Some((_, id)), _) if !numeric(id) => true,
        (_, Some(id)) if !numeric(id) => true,
        _ => false,
    };
    if bad {
        return Err(format!("{name}: kickstart takes a VLAN's name only as NAME.ID or vlanID"));
    }
    Ok(())
}

/// debian-installer's answers for its own network, on the device the agent calls in through
/// (else the default route's): the port (by MAC where known), the VLAN, and a static address.
/// d-i cannot build a bond: it uses the bond's first member, and says so in a comment. The
/// installed system's network comes from the identity script, not from these answers.
pub fn preseed(net: &Resolved) -> Vec<String> {
    let via = net.agent_via.as_deref().or(net.gateway.as_ref().map(|(d, _)| d.as_str()));
    let Some(d) = via.and_then(|v| net.device(v)) else { return Vec::new() };
    let mut lines = Vec::new();
    let (port, vlan) = match &d.kind {
        Kind::Vlan { id, link } => (net.device(link), Some(*id)),
        _ => (Some(d), None),
    };
    let port = match port.map(|p| (p, &p.kind)) {
        Some((b, Kind::Bond { members, .. })) => {
            let first = members.first().and_then(|m| net.device(m));
            lines.push(format!(
                "# debian-installer cannot build a bond: it installs over {}'s first member, {}.",
                b.name,
                first.map_or("(none)", |f| f.name.as_str())
            ));
            first
        }
        other => other.map(|(p, _)| p),
    };
    let choice = match port.map(|p| &p.kind) {
        Some(Kind::Ethernet { mac: Some(m), .. }) => m.to_string(),
        Some(Kind::Ethernet { match_name: Some(n), .. }) if !n.contains(['*', '?']) => n.clone(),
        Some(_) => {
            let name = port.map_or("", |p| p.name.as_str());
            lines.push(format!("# {name} is found by a name pattern, which d-i does not take: it picks the port."));
            "auto".to_string()
        }
        None => "auto".to_string(),
    };
    lines.push(format!("d-i netcfg/choose_interface select {choice}"));
    if let Some(id) = vlan {
        lines.push("d-i netcfg/use_vlan boolean true".into());
        lines.push(format!("d-i netcfg/vlan_id string {id}"));
    }
    if let Some(a) = d.address {
        let gateway = net.gateway.as_ref().filter(|(dev, _)| *dev == d.name).map(|(_, g)| g.to_string());
        let dns: Vec<String> = net.dns.iter().map(|s| s.to_string()).collect();
        lines.push("d-i netcfg/disable_autoconfig boolean true".into());
        lines.push(format!("d-i netcfg/get_ipaddress string {}", a.addr()));
        lines.push(format!("d-i netcfg/get_netmask string {}", a.netmask()));
        lines.push(format!("d-i netcfg/get_gateway string {}", gateway.unwrap_or_default()).trim_end().into());
        lines.push(format!("d-i netcfg/get_nameservers string {}", dns.join(" ")).trim_end().into());
        lines.push("d-i netcfg/confirm_static boolean true".into());
    }
    if d.address.is_some() || vlan.is_some() {
        // d-i configured its network (DHCP) before it could fetch this file, so the answers
        // above count only once netcfg runs again (the commands Debian's guide gives for it).
        lines.push("d-i preseed/early_command string kill-all-dhcp; netcfg".into());
    }
    lines
}

#[cfg(test)]
mod tests;
