//! A machine's installed network as it will be written: its own spec or its rack's default,
//! resolved against the config's named networks, its inventory's ports and its rack's plan.

use rackboot_model::network::{resolve, NetSpec, Network, Resolved, Slot};
use serde::Serialize;
use utoipa::ToSchema;

use crate::cmdb::{Cmdb, CmdbError, Machine};
use crate::render::NetFile;

/// Where a machine's spec comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Its own (`PUT /machines/{id}/network`).
    Machine,
    /// Its rack's default.
    Rack,
    /// None: DHCP on every Ethernet port.
    Default,
}

/// A machine's network: the spec, where it comes from, and what it resolves to (or why not).
#[derive(Debug, Clone)]
pub struct Effective {
    pub source: Source,
    pub spec: Option<NetSpec>,
    pub resolved: Result<Option<Resolved>, String>,
}

impl Effective {
    /// The systemd-networkd files the identity step writes (none: DHCP everywhere); the reason
    /// when the spec cannot be resolved.
    pub fn files(&self) -> Result<Vec<NetFile>, String> {
        let r = self.resolved.as_ref().map_err(|e| format!("the machine's network: {e}"))?;
        let files = r.as_ref().map(crate::netcfg::networkd).unwrap_or_default();
        Ok(files.into_iter().map(|(name, text)| NetFile { name, text }).collect())
    }
}

/// The physical ports' MACs in the inventory's order (else the machine's MACs).
pub fn ports(m: &Machine) -> Vec<crate::mac::Mac> {
    let from_inventory: Vec<_> =
        m.inventory.iter().flat_map(|i| i.nics.iter()).filter_map(|n| n.mac.parse().ok()).collect();
    if from_inventory.is_empty() {
        m.macs.clone()
    } else {
        from_inventory
    }
}

/// Machine `m`'s effective network.
pub async fn effective(cmdb: &Cmdb, networks: &[Network], m: &Machine) -> Result<Effective, CmdbError> {
    let rack = match &m.rack {
        Some(name) => match cmdb.rack(name.clone()).await {
            Ok(r) => Some(r),
            Err(CmdbError::NotFound(_)) => None,
            Err(e) => return Err(e),
        },
        None => None,
    };
    let (source, spec) = match (&m.network, rack.as_ref().and_then(|r| r.network.clone())) {
        (Some(s), _) => (Source::Machine, Some(s.clone())),
        (None, Some(s)) => (Source::Rack, Some(s)),
        (None, None) => (Source::Default, None),
    };
    let slot = match (&rack, m.slot) {
        (Some(r), Some(slot)) => Some(Slot { plans: &r.network_plans, slot }),
        _ => None,
    };
    let resolved = spec.as_ref().map(|s| resolve(s, networks, &ports(m), slot)).transpose();
    Ok(Effective { source, spec, resolved })
}

/// Compares what machine `id`'s installed agent reported (its inventory's links) with its
/// network spec and records the outcome (`Cmdb::set_network_problems`). Nothing for a machine
/// without a spec, a spec that cannot be resolved, or an agent that reports no links.
pub async fn check_came_up(cmdb: &Cmdb, networks: &[Network], id: u64) -> Result<(), CmdbError> {
    let m = cmdb.machine(id).await?;
    let links = m.inventory.as_ref().map(|i| i.links.clone()).unwrap_or_default();
    if links.is_empty() {
        return Ok(());
    }
    let Ok(Some(r)) = effective(cmdb, networks, &m).await?.resolved else { return Ok(()) };
    let problems = rackboot_model::network::differences(&r, &links);
    cmdb.set_network_problems(id, problems, r.devices.len()).await
}
