//! `GET /api/v1/inventory/ansible`: the CMDB as Ansible's dynamic inventory (what a script
//! prints for `ansible-inventory -i script --list`): every machine a host, grouped by rack, state,
//! tag and pinned boot profile, with its addresses, MACs, place and hardware as host variables.
//! `rackboot inventory --ansible` is that script.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::Ipv4Addr;

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiState};
use crate::cmdb::{now_secs, Lease, LeaseState, Machine, MachineFilter};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(ansible))
}

/// Ansible's dynamic-inventory JSON: `_meta.hostvars` and one entry per group.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnsibleInventory {
    #[serde(rename = "_meta")]
    pub meta: Meta,
    /// `all` (its children: every group below), then `rack_<name>`, `state_<state>`,
    /// `tag_<tag>` and `profile_<boot profile>`; in a name, anything but letters, digits and
    /// `_` becomes `_` (what Ansible accepts in a group name).
    #[serde(flatten)]
    pub groups: BTreeMap<String, Group>,
}

/// Every host's variables, so Ansible needs no `--host` call per host.
#[derive(Debug, Serialize, ToSchema)]
pub struct Meta {
    pub hostvars: BTreeMap<String, HostVars>,
}

/// A group: its hosts, or (`all`) its child groups.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct Group {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<String>,
}

/// One machine. A host is named by its hostname, else `machine-<id>`.
#[derive(Debug, Serialize, ToSchema)]
pub struct HostVars {
    /// Where Ansible connects: the reserved address, else the newest active lease of its MACs;
    /// absent when neither is known (`rackboot_addresses` may still list a static one).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Ipv4)]
    pub ansible_host: Option<Ipv4Addr>,
    pub rackboot_id: u64,
    pub rackboot_state: String,
    #[schema(value_type = Vec<String>)]
    pub rackboot_macs: Vec<String>,
    /// Every address known for it: reserved, leased, and static ones of its network spec.
    #[schema(value_type = Vec<String>)]
    pub rackboot_addresses: Vec<Ipv4Addr>,
    pub rackboot_tags: Vec<String>,
    pub rackboot_rack: Option<String>,
    pub rackboot_slot: Option<u32>,
    /// Serial, vendor and model come from what the node reported (DMI): marked unsafe.
    pub rackboot_serial: Option<Unsafe>,
    pub rackboot_vendor: Option<Unsafe>,
    pub rackboot_model: Option<Unsafe>,
    pub rackboot_boot_profile: Option<String>,
}

/// Text a node reported about itself, marked for Ansible as unsafe (`{"__ansible_unsafe":
/// "..."}`, which its inventory loader wraps as never-templated text): template syntax in a DMI
/// string is shown as it is, never evaluated on the operator's controller.
#[derive(Debug, Serialize, ToSchema)]
pub struct Unsafe {
    #[serde(rename = "__ansible_unsafe")]
    pub text: String,
}

fn unsafe_text(v: &Option<String>) -> Option<Unsafe> {
    v.as_ref().map(|text| Unsafe { text: text.clone() })
}

/// Every machine (a pool-scoped caller's: their pools') as an Ansible dynamic inventory (`rackboot inventory --ansible`; the book has
/// the two-line inventory script).
#[utoipa::path(get, path = "/inventory/ansible", tag = "machines",
    responses((status = 200, description = "The inventory", body = AnsibleInventory)))]
async fn ansible(State(s): State<ApiState>) -> Result<Json<AnsibleInventory>, ApiError> {
    let mut machines = Vec::new();
    let mut after = None;
    // A pool-scoped caller's inventory holds their pools' machines only.
    let pools = super::scope::pools_for_call();
    loop {
        let f = MachineFilter { after, limit: Some(1000), pools: pools.clone(), ..Default::default() };
        let page = s.cmdb.list_machines(f).await?;
        machines.extend(page.machines);
        match page.next_after {
            Some(id) => after = Some(id),
            None => break,
        }
    }
    Ok(Json(build(&machines, &s.cmdb.leases().await?, now_secs())))
}

/// The inventory of `machines`, their addresses from `leases` as of `now` (Unix seconds).
pub fn build(machines: &[Machine], leases: &[Lease], now: u64) -> AnsibleInventory {
    // Each MAC's newest active lease.
    let mut leased: HashMap<_, &Lease> = HashMap::new();
    for l in leases.iter().filter(|l| l.state == LeaseState::Active && l.expires_at > now) {
        let newer = leased.get(&l.mac).is_none_or(|o| o.expires_at < l.expires_at);
        if newer {
            leased.insert(l.mac, l);
        }
    }
    let names: BTreeSet<&str> = machines.iter().filter_map(|m| m.hostname.as_deref()).collect();
    let mut inv = AnsibleInventory { meta: Meta { hostvars: BTreeMap::new() }, groups: BTreeMap::new() };
    for m in machines {
        let name = match &m.hostname {
            Some(h) => h.clone(),
            None if names.contains(format!("machine-{}", m.id).as_str()) => format!("machine-{}-unnamed", m.id),
            None => format!("machine-{}", m.id),
        };
        let lease = m.macs.iter().filter_map(|mac| leased.get(mac)).max_by_key(|l| l.expires_at).map(|l| l.ip);
        let mut addresses: Vec<Ipv4Addr> = m.reserved_ip.into_iter().chain(lease).collect();
        if let Some(spec) = &m.network {
            let statics = spec.ethernets.iter().map(|e| e.address);
            let statics =
                statics.chain(spec.bonds.iter().map(|b| b.address)).chain(spec.vlans.iter().map(|v| v.address));
            addresses.extend(statics.flatten());
        }
        let mut seen = BTreeSet::new();
        addresses.retain(|a| seen.insert(*a));
        let state = serde_json::to_value(m.state).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        let mut groups = vec![format!("state_{state}")];
        groups.extend(m.rack.iter().map(|r| format!("rack_{r}")));
        groups.extend(m.tags.iter().map(|t| format!("tag_{t}")));
        groups.extend(m.boot_profile.iter().map(|p| format!("profile_{p}")));
        for g in groups {
            inv.groups.entry(group_name(&g)).or_default().hosts.push(name.clone());
        }
        let vars = HostVars {
            ansible_host: m.reserved_ip.or(lease),
            rackboot_id: m.id,
            rackboot_state: state,
            rackboot_macs: m.macs.iter().map(ToString::to_string).collect(),
            rackboot_addresses: addresses,
            rackboot_tags: m.tags.clone(),
            rackboot_rack: m.rack.clone(),
            rackboot_slot: m.slot,
            rackboot_serial: unsafe_text(&m.serial),
            rackboot_vendor: unsafe_text(&m.vendor),
            rackboot_model: unsafe_text(&m.model),
            rackboot_boot_profile: m.boot_profile.clone(),
        };
        inv.meta.hostvars.insert(name, vars);
    }
    for g in inv.groups.values_mut() {
        g.hosts.dedup();
    }
    let children = inv.groups.keys().cloned().collect();
    inv.groups.insert("all".into(), Group { hosts: vec![], children });
    inv
}

/// What Ansible accepts as a group name: letters, digits and `_`.
fn group_name(raw: &str) -> String {
    raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests;
