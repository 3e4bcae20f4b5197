//! A machine's installed network in the CMDB: stored on its record, its static addresses
//! checked in the write against every other machine's and every rack's plan (the rule is the
//! model's `network::clash`).

use std::net::Ipv4Addr;

use serde_json::json;

use super::events::{push_event, EventKind};
use super::machines::put_machine;
use super::model::Machine;
use super::store::WriteCtx;
use super::store::{decode, scan, RACKS};
use super::{now_secs, Cmdb, CmdbError};
use rackboot_model::network::{clash, NetPlans, NetSpec};
use rackboot_model::racks::Rack;

/// Every machine's own static addresses, `(machine, network, address)`. Only records that
/// hold a network spec are decoded.
pub(super) fn reservations(ctx: &WriteCtx<'_>) -> Result<Vec<(u64, String, Ipv4Addr)>, CmdbError> {
    let needle = b"\"network\":{";
    let mut out = Vec::new();
    for row in ctx.t.machines.iter()? {
        let row = row?;
        if !row.1.value().windows(needle.len()).any(|w| w == needle) {
            continue;
        }
        let m: Machine = decode(row.1.value())?;
        for (net, ip) in m.network.iter().flat_map(NetSpec::reservations) {
            out.push((m.id, net, ip));
        }
    }
    Ok(out)
}

impl Cmdb {
    /// Sets a machine's installed network (`None` or an empty spec: back to its rack's default).
    /// The spec was checked against the config's networks; here its addresses are checked
    /// against the other machines' and the racks' plans (409 naming the holder).
    pub async fn set_machine_network(&self, id: u64, spec: Option<NetSpec>) -> Result<Machine, CmdbError> {
        let spec = spec.filter(|s| !s.is_empty());
        self.write(move |ctx| {
            let mut m = ctx.get::<Machine>(id)?;
            let mine = spec.as_ref().map(NetSpec::reservations).unwrap_or_default();
            if !mine.is_empty() {
                let others = reservations(ctx)?;
                let racks: Vec<Rack> = scan(&ctx.t.tx.open_table(RACKS)?)?;
                let plans: Vec<(&str, &NetPlans)> = racks.iter().map(|r| (r.name.as_str(), &r.network_plans)).collect();
                if let Some(why) = clash(id, &mine, &others, &plans) {
                    return Err(CmdbError::Conflict(why));
                }
            }
            m.network = spec;
            // Checked again against the new spec when its installed agent reports next.
            m.network_problems = None;
            m.updated_at = now_secs();
            put_machine(ctx, &m)?;
            let addresses: Vec<String> = mine.iter().map(|(n, ip)| format!("{n}:{ip}")).collect();
            push_event(
                ctx,
                id,
                EventKind::MachineUpdated,
                json!({"network": m.network.is_some(), "addresses": addresses}),
            )?;
            Ok(m)
        })
        .await
    }
}

impl Cmdb {
    /// Records how a machine's installed network compares with its spec: a `network.mismatch`
    /// event when the differences change to some, `network.matched` when there are none (first
    /// seen, or after a mismatch); nothing when nothing changed.
    pub async fn set_network_problems(&self, id: u64, problems: Vec<String>, devices: usize) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            let mut m = ctx.get::<Machine>(id)?;
            if m.network_problems.as_ref() == Some(&problems) {
                return Ok(());
            }
            let (kind, detail) = match problems.is_empty() {
                true => (EventKind::NetworkMatched, json!({"devices": devices})),
                false => (EventKind::NetworkMismatch, json!({"problems": problems})),
            };
            m.network_problems = Some(problems);
            m.updated_at = now_secs();
            put_machine(ctx, &m)?;
            push_event(ctx, id, kind, detail)
        })
        .await
    }
}
