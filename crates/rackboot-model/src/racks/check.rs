//! Checking a rack spec into a [`Rack`]: names, switch, port map, pattern, address plan and
//! profiles on their own ([`validate`]), then against the other racks ([`check_against`]).

use ipnet::Ipv4Net;

use super::{
    csv, place, ports, AddressPlan, Catalog, Rack, RackSpec, SwitchId, MAX_NAME, MAX_PLAN, MAX_PORTS, MAX_SLOTS,
    MAX_TEXT,
};
use crate::records::valid_hostname;

fn bounded(what: &str, v: &Option<String>) -> Result<Option<String>, String> {
    match v.as_deref() {
        Some(t) if t.chars().count() > MAX_TEXT || t.chars().any(char::is_control) => {
            Err(format!("{what} must be at most {MAX_TEXT} printable characters"))
        }
        None => Ok(None),
        Some(t) if t.trim().is_empty() => Ok(None),
        Some(t) => Ok(Some(t.trim().to_string())),
    }
}

/// Checks a spec into a rack (everything but what other racks hold, which the CMDB checks in
/// its write). `now`: Unix seconds.
pub fn validate(spec: RackSpec, catalog: &Catalog, now: u64) -> Result<Rack, String> {
    let RackSpec {
        name,
        location,
        switch,
        ports,
        ports_csv,
        hostname_pattern,
        address_plan,
        hardware_profile,
        os_profile,
        auto_provision,
        trust_lldp,
        silent_after_minutes,
        machines_csv,
        uefi_loader,
        network,
        network_plans,
        root_device,
        layout,
        pool,
    } = spec;
    crate::pools::check(&pool)?;
    if let Some(h) = &root_device {
        h.check()?;
    }
    if let Some(l) = &layout {
        l.check()?;
    }
    let network = network.filter(|n| !n.is_empty());
    if let Some(n) = &network {
        crate::network::check(n, &catalog.named_networks, true).map_err(|e| format!("network.{e}"))?;
    }
    let network_plans =
        crate::network::check_plans(&network_plans, &catalog.named_networks).map_err(|e| e.to_string())?;
    check_name(&name)?;
    if hostname_pattern.chars().count() > 63 {
        return Err("the hostname pattern is longer than 63 characters".into());
    }
    let switch = SwitchId {
        lldp_chassis_name: bounded("switch.lldp_chassis_name", &switch.lldp_chassis_name)?,
        lldp_chassis_id: bounded("switch.lldp_chassis_id", &switch.lldp_chassis_id)?,
        remote_id: bounded("switch.remote_id", &switch.remote_id)?,
    };
    if ports.len() > MAX_PORTS || ports_csv.as_ref().is_some_and(|c| c.len() > 16 * 1024) {
        return Err(format!("at most {MAX_PORTS} port map lines and 16 KiB of port CSV"));
    }
    let ports = ports::parse_map(&ports, ports_csv.as_deref())?;
    if !ports.is_empty() && switch == SwitchId::default() {
        return Err("a port map needs the switch: switch.remote_id, lldp_chassis_name or lldp_chassis_id".into());
    }
    let machines = csv::parse(machines_csv.as_deref().unwrap_or(""), MAX_SLOTS as usize)?;
    let plan = address_plan.as_deref().map(|p| parse_plan(p, &catalog.networks)).transpose()?;
    if silent_after_minutes > 10080 {
        return Err("silent_after_minutes must be at most 10080 (a week)".into());
    }
    let rack = Rack {
        v: 1,
        name,
        location: bounded("location", &location)?,
        switch,
        ports,
        hostname_pattern: hostname_pattern.trim().to_string(),
        address_plan: plan,
        hardware_profile: bounded("hardware_profile", &hardware_profile)?,
        os_profile: bounded("os_profile", &os_profile)?,
        auto_provision,
        trust_lldp,
        silent_after_minutes,
        uefi_loader,
        network,
        network_plans,
        root_device,
        layout,
        machines,
        created_at: now,
        updated_at: now,
        raised: Vec::new(),
        pool,
    };
    check_pattern(&rack)?;
    check_profiles(&rack, catalog)?;
    check_addresses(&rack, &catalog.networks)?;
    Ok(rack)
}

/// A rack name: a lowercase DNS label of at most [`MAX_NAME`] characters.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.len() > MAX_NAME || !valid_hostname(name) || name.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(format!("rack name {name:?} must be a lowercase DNS label (a-z, 0-9, '-', at most {MAX_NAME})"));
    }
    Ok(())
}

fn check_pattern(rack: &Rack) -> Result<(), String> {
    let p = &rack.hostname_pattern;
    if p.len() > 63 || !p.contains("{slot") {
        return Err(format!("hostname pattern {p:?} must name the slot ({{slot}} or {{slot:02}}), at most 63"));
    }
    // Every slot must render a valid, distinct name: checking the widest and every expected one.
    let mut slots = rack.expected_slots();
    slots.extend([1, 9, 10, MAX_SLOTS]);
    let mut seen = std::collections::HashMap::new();
    for slot in slots {
        let h = rack.hostname(slot)?;
        if !valid_hostname(&h) {
            return Err(format!("hostname pattern {p:?} gives {h:?} for U{slot}: not an RFC 1123 label"));
        }
        if seen.insert(h.clone(), slot).is_some_and(|other| other != slot) {
            return Err(format!("hostname pattern {p:?} gives {h:?} to two slots"));
        }
    }
    Ok(())
}

fn check_profiles(rack: &Rack, catalog: &Catalog) -> Result<(), String> {
    if let Some(hp) = &rack.hardware_profile {
        match &catalog.hardware_profiles {
            Some(known) if known.contains(hp) => {}
            _ => return Err(format!("no hardware profile {hp:?} in [[provision.hardware_profiles]]")),
        }
    }
    if let Some(os) = &rack.os_profile {
        if !catalog.installers.contains(os) && !catalog.images.contains(os) {
            return Err(format!(
                "os_profile {os:?} is neither a boot profile with an answer file nor an image in the images directory"
            ));
        }
    }
    if rack.auto_provision && rack.os_profile.is_none() {
        return Err("auto_provision needs an os_profile".into());
    }
    Ok(())
}

fn parse_plan(text: &str, networks: &[Ipv4Net]) -> Result<AddressPlan, String> {
    let (first, last) = crate::provision::parse_pool(text).map_err(|e| e.replace("ip_pool", "address_plan"))?;
    let plan = AddressPlan { first, last };
    if u32::from(last) - u32::from(first) >= MAX_PLAN {
        return Err(format!("address_plan {text:?} is longer than {MAX_PLAN} addresses"));
    }
    if !networks.is_empty() && !networks.iter().any(|n| n.contains(&first) && n.contains(&last)) {
        return Err(format!("address_plan {text:?} is outside the provisioning networks ({networks:?})"));
    }
    Ok(plan)
}

fn check_addresses(rack: &Rack, networks: &[Ipv4Net]) -> Result<(), String> {
    let plan = rack.address_plan;
    if let (Some(p), Some(max)) = (plan, rack.ports.iter().map(|p| p.slot).max()) {
        if p.address(max).is_none() {
            return Err(format!("address_plan has too few addresses for U{max} (slot U<n> takes FIRST + n - 1)"));
        }
    }
    for m in &rack.machines {
        match m.ip {
            Some(ip) if !networks.is_empty() && !networks.iter().any(|n| n.contains(&ip)) => {
                return Err(format!("{ip} (slot U{}) is outside the provisioning networks", m.slot));
            }
            Some(_) => {}
            None if plan.is_some() && rack.address(m.slot).is_none() => {
                return Err(format!("address_plan has too few addresses for U{}", m.slot));
            }
            None => {}
        }
    }
    Ok(())
}

/// Refuses a rack whose name, switch or addresses another rack already has.
pub fn check_against(rack: &Rack, others: &[Rack]) -> Result<(), String> {
    for o in others.iter().filter(|o| o.name != rack.name) {
        if let (Some(a), Some(b)) = (rack.address_plan, o.address_plan) {
            if a.overlaps(&b) {
                return Err(format!("address_plan overlaps rack {}'s ({}-{})", o.name, b.first, b.last));
            }
        }
        let ips = rack.machines.iter().filter_map(|m| m.ip);
        if let Some(ip) = ips.clone().find(|ip| o.address_plan.is_some_and(|p| p.contains(*ip))) {
            return Err(format!("{ip} is in rack {}'s address plan", o.name));
        }
        if let Some(ip) =
            o.machines.iter().filter_map(|m| m.ip).find(|ip| rack.address_plan.is_some_and(|p| p.contains(*ip)))
        {
            return Err(format!("address_plan holds {ip}, which rack {} lists", o.name));
        }
        let same = |a: &Option<String>, b: &Option<String>| a.is_some() && place::same_id(a.as_deref(), b.as_deref());
        if !rack.ports.is_empty()
            && !o.ports.is_empty()
            && (same(&rack.switch.remote_id, &o.switch.remote_id)
                || same(&rack.switch.lldp_chassis_id, &o.switch.lldp_chassis_id)
                || same(&rack.switch.lldp_chassis_name, &o.switch.lldp_chassis_name))
        {
            let shared = rack.ports.iter().find(|p| o.ports.iter().any(|q| q.port.eq_ignore_ascii_case(&p.port)));
            if let Some(p) = shared {
                return Err(format!("rack {} maps port {} of the same switch", o.name, p.port));
            }
        }
        for m in &rack.machines {
            if o.machines
                .iter()
                .any(|x| (x.mac.is_some() && x.mac == m.mac) || (x.serial.is_some() && x.serial == m.serial))
            {
                return Err(format!("rack {} lists the same machine (slot U{})", o.name, m.slot));
            }
        }
    }
    Ok(())
}
