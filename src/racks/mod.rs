//! Racks: what an operator tells rackboot about a rack (its switch, the port -> slot map, a
//! hostname pattern, an address plan, profiles, or a CSV of its machines), checked here into a
//! stored [`Rack`]. Placement (`place`) and the flags a person must look at (`flags`) are pure
//! functions over racks and machines; the CMDB applies them in its write transactions.

pub mod csv;
pub mod flags;
pub mod place;
pub mod ports;
pub mod provision;

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::cmdb::model::valid_hostname;
pub use csv::CsvMachine;
pub use ports::PortSlot;

/// Racks the CMDB holds at most.
pub const MAX_RACKS: usize = 256;
/// Slots (rack units) per rack: slots are numbered 1..=MAX_SLOTS.
pub const MAX_SLOTS: u32 = 64;
/// Ports a rack's map may list (a machine may be cabled to two).
pub const MAX_PORTS: usize = 128;
/// Longest rack name (leaves room for the slot in a 63-character hostname).
pub const MAX_NAME: usize = 32;
/// Longest location, switch identity or profile name.
pub const MAX_TEXT: usize = 128;
/// Longest address plan, in addresses.
pub const MAX_PLAN: u32 = 1024;
/// Minutes an expected slot may stay silent by default before it is flagged.
pub const DEFAULT_SILENT_MINUTES: u32 = 15;
/// The default hostname pattern.
pub const DEFAULT_PATTERN: &str = "{rack}-u{slot:02}";

/// The switch a rack hangs off, as LLDP and the DHCP relay name it. Any one identity is enough.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchId {
    /// LLDP system name of the switch (matched case-insensitively).
    #[serde(default)]
    #[schema(max_length = 128)]
    pub lldp_chassis_name: Option<String>,
    /// LLDP chassis id (usually the switch's MAC; `:`/`-` and case do not matter).
    #[serde(default)]
    #[schema(max_length = 128)]
    pub lldp_chassis_id: Option<String>,
    /// DHCP option 82 remote id the relay adds: text, or hex as the relay sends it.
    #[serde(default)]
    #[schema(max_length = 128)]
    pub remote_id: Option<String>,
}

/// A rack as an operator describes it (create, or replace with `PUT`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RackSpec {
    /// Lowercase DNS label, at most 32 characters; unique.
    #[schema(pattern = r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")]
    pub name: String,
    #[serde(default)]
    #[schema(max_length = 128)]
    pub location: Option<String>,
    #[serde(default)]
    pub switch: SwitchId,
    /// Port -> slot lines: `Ethernet1-42 -> U1-U42` (equal lengths), `Ethernet43 -> U43`.
    #[serde(default)]
    #[schema(max_items = 128)]
    pub ports: Vec<String>,
    /// The same map as CSV rows `port,slot`.
    #[serde(default)]
    pub ports_csv: Option<String>,
    /// Placeholders `{rack}`, `{slot}` and `{slot:0N}` (zero-padded to N digits).
    #[serde(default = "default_pattern")]
    #[schema(max_length = 63)]
    pub hostname_pattern: String,
    /// `FIRST-LAST`: slot U<n> is reserved address FIRST + n - 1.
    #[serde(default)]
    pub address_plan: Option<String>,
    /// A hardware profile from `[[provision.hardware_profiles]]`.
    #[serde(default)]
    pub hardware_profile: Option<String>,
    /// What a machine is installed with: a boot profile with an answer file (an installer) or
    /// an image file in the images directory.
    #[serde(default)]
    pub os_profile: Option<String>,
    /// Provision a placed machine with `os_profile` once its inventory is in.
    #[serde(default)]
    pub auto_provision: bool,
    /// Minutes after the rack's creation before a mapped slot nobody answered from is flagged
    /// (0: at once).
    #[serde(default = "default_silent")]
    #[schema(maximum = 10080)]
    pub silent_after_minutes: u32,
    /// The machine list as CSV rows `mac-or-serial,hostname,ip,slot` (racks without managed
    /// switches); also `POST /racks/{name}/csv`.
    #[serde(default)]
    pub machines_csv: Option<String>,
}

fn default_pattern() -> String {
    DEFAULT_PATTERN.into()
}
fn default_silent() -> u32 {
    DEFAULT_SILENT_MINUTES
}

/// An address range of a rack's plan.
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

    fn overlaps(&self, o: &AddressPlan) -> bool {
        self.first <= o.last && o.first <= self.last
    }

    fn contains(&self, ip: Ipv4Addr) -> bool {
        (self.first..=self.last).contains(&ip)
    }
}

/// A rack as stored and shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Rack {
    pub v: u64,
    pub name: String,
    pub location: Option<String>,
    pub switch: SwitchId,
    pub ports: Vec<PortSlot>,
    pub hostname_pattern: String,
    pub address_plan: Option<AddressPlan>,
    pub hardware_profile: Option<String>,
    pub os_profile: Option<String>,
    pub auto_provision: bool,
    pub silent_after_minutes: u32,
    pub machines: Vec<CsvMachine>,
    pub created_at: u64,
    pub updated_at: u64,
    /// Keys of the flags whose event has been recorded (so each is recorded once while it lasts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(ignore)]
    pub raised: Vec<String>,
}

impl Rack {
    /// The slots the rack expects a machine in: mapped ports and CSV rows, in order.
    pub fn expected_slots(&self) -> Vec<u32> {
        let mut s: Vec<u32> = self.ports.iter().map(|p| p.slot).chain(self.machines.iter().map(|m| m.slot)).collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// The hostname of slot `slot`.
    pub fn hostname(&self, slot: u32) -> Result<String, String> {
        render_pattern(&self.hostname_pattern, &self.name, slot)
    }

    /// The address slot `slot` gets: its CSV row's, else the plan's.
    pub fn address(&self, slot: u32) -> Option<Ipv4Addr> {
        self.address_plan.and_then(|p| p.address(slot))
    }
}

/// What the config and the CMDB know that a rack's names must match.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The provisioning networks (DHCP subnets); empty: not known, not checked.
    pub networks: Vec<Ipv4Net>,
    /// Hardware profile names; `None`: provisioning is off, none may be named.
    pub hardware_profiles: Option<Vec<String>>,
    /// Boot profiles with an answer file (installers).
    pub installers: Vec<String>,
    /// Image files in the images directory.
    pub images: Vec<String>,
}

/// Renders a hostname pattern for `slot`; unknown placeholders are refused.
pub fn render_pattern(pattern: &str, rack: &str, slot: u32) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').ok_or_else(|| format!("pattern {pattern:?} has an unclosed '{{'"))? + open;
        match &rest[open + 1..close] {
            "rack" => out.push_str(rack),
            "slot" => out.push_str(&slot.to_string()),
            p if p.starts_with("slot:0") && p.len() == 7 && p.as_bytes()[6].is_ascii_digit() => {
                let width = (p.as_bytes()[6] - b'0') as usize;
                out.push_str(&format!("{slot:0width$}"));
            }
            other => return Err(format!("unknown placeholder {{{other}}} (use {{rack}}, {{slot}}, {{slot:02}})")),
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(out.to_ascii_lowercase())
}

fn bounded(what: &str, v: &Option<String>) -> Result<Option<String>, String> {
    match v.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(t) if t.len() > MAX_TEXT || t.chars().any(char::is_control) => {
            Err(format!("{what} must be at most {MAX_TEXT} printable characters"))
        }
        Some(t) => Ok(Some(t.to_string())),
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
        silent_after_minutes,
        machines_csv,
    } = spec;
    check_name(&name)?;
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
        silent_after_minutes,
        machines,
        created_at: now,
        updated_at: now,
        raised: Vec::new(),
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

#[cfg(test)]
mod tests;
