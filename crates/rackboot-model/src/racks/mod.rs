//! Racks: what an operator tells rackboot about a rack (its switch, the port -> slot map, a
//! hostname pattern, an address plan, profiles, or a CSV of its machines), checked here into a
//! stored [`Rack`]. Placement (`place`) and the flags a person must look at (`flags`) are pure
//! functions over racks and machines; the CMDB applies them in its write transactions.

mod check;
pub mod csv;
pub mod flags;
pub mod place;
pub mod ports;
pub mod relay;

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use crate::network::{AddressPlan, MAX_PLAN};
pub use check::{check_against, check_name, validate};
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
    /// Every host on this rack's VLAN is ours: what a node reports about itself (its LLDP
    /// neighbour, its DMI serial in the CSV) places it like option 82 does. Off: such a report
    /// is a claim shown on the rack page until an operator confirms it.
    #[serde(default)]
    pub trust_lldp: bool,
    /// Minutes after the rack's creation before a mapped slot nobody answered from is flagged
    /// (0: at once).
    #[serde(default = "default_silent")]
    #[schema(maximum = 10080)]
    pub silent_after_minutes: u32,
    /// The machine list as CSV rows `mac-or-serial,hostname,ip,slot` (racks without managed
    /// switches); also `POST /racks/{name}/csv`.
    #[serde(default)]
    pub machines_csv: Option<String>,
    /// What this rack's UEFI x64 machines get first (`ipxe`, `shim` or `https`), over their subnet's
    /// and the config's choice; a machine's own choice wins over it. Unset: not the rack's call.
    #[serde(default)]
    pub uefi_loader: Option<crate::boot::UefiLoader>,
    /// The installed network of its machines that have none of their own (ports by `port` or
    /// `match_name`, no MACs or addresses: those come from each machine and the plans below).
    #[serde(default)]
    pub network: Option<crate::network::NetSpec>,
    /// Per named network (`[[provision.networks]]`), `FIRST-LAST`: slot U<n> gets FIRST + n - 1
    /// there.
    #[serde(default)]
    pub network_plans: std::collections::BTreeMap<String, String>,
    /// Which disk its machines install on, by what their inventory says (`auto_provision`).
    #[serde(default)]
    pub root_device: Option<crate::provision::RootDeviceHints>,
    /// How its machines' disks are laid out (an image `os_profile` only).
    #[serde(default)]
    pub layout: Option<crate::provision::Layout>,
    /// The resource pool its machines join when they are placed in it (default `default`).
    #[serde(default = "crate::pools::default_pool")]
    #[schema(pattern = r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")]
    pub pool: String,
}

fn default_pattern() -> String {
    DEFAULT_PATTERN.into()
}
fn default_silent() -> u32 {
    DEFAULT_SILENT_MINUTES
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
    /// A node's own report places it (see [`RackSpec::trust_lldp`]).
    #[serde(default)]
    pub trust_lldp: bool,
    pub silent_after_minutes: u32,
    /// Its machines' UEFI loader (see [`RackSpec::uefi_loader`]).
    #[serde(default)]
    pub uefi_loader: Option<crate::boot::UefiLoader>,
    /// Its machines' installed network (see [`RackSpec::network`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::network::NetSpec>,
    /// Per named network, the addresses its slots take.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub network_plans: crate::network::NetPlans,
    /// Its machines' root-device hints (see [`RackSpec::root_device`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_device: Option<crate::provision::RootDeviceHints>,
    /// Its machines' disk layout (see [`RackSpec::layout`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<crate::provision::Layout>,
    /// The machines its CSV lists (by MAC or serial, with their slots).
    pub machines: Vec<CsvMachine>,
    /// Unix seconds.
    pub created_at: u64,
    pub updated_at: u64,
    /// Keys of the flags whose event has been recorded (so each is recorded once while it lasts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(ignore)]
    pub raised: Vec<String>,
    /// The resource pool its machines join when they are placed in it.
    #[serde(default = "crate::pools::default_pool")]
    pub pool: String,
}

impl Rack {
    /// The rack as the API shows it: without the keys of the flags already recorded.
    pub fn shown(mut self) -> Rack {
        self.raised.clear();
        self
    }

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

    /// Every hostname the rack holds for its machines, booted or not: its pattern's for each
    /// slot, and its CSV's (lowercase). A client's own DHCP name is never published as one.
    pub fn held_names(&self) -> impl Iterator<Item = String> + '_ {
        let by_pattern = (1..=MAX_SLOTS).filter_map(|slot| self.hostname(slot).ok());
        by_pattern.chain(self.machines.iter().filter_map(|m| m.hostname.as_ref().map(|h| h.to_ascii_lowercase())))
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
    /// The named networks installed nodes take static addresses in.
    pub named_networks: Vec<crate::network::Network>,
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

#[cfg(test)]
mod tests;
