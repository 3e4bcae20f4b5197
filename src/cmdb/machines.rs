//! Machine and lease writes and queries on the CMDB handle.

use redb::ReadableTable;
use serde_json::json;

use super::index::{Brief, Delta, LeaseBrief};
use super::model::{valid_hostname, Event, Lease, Machine, MachinePatch, MachineState, NewMachine, Sighting};
use super::store::{self, decode, encode, MACHINES};
use super::writer::WriteCtx;
use super::{now_ms, now_secs, Cmdb, CmdbError};
use crate::mac::Mac;

/// Search and filters for listing machines.
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct MachineFilter {
    /// Substring matched against hostname, MACs, serial, reserved IP, vendor, model and tags.
    pub q: Option<String>,
    pub state: Option<MachineState>,
    pub tag: Option<String>,
    pub limit: Option<usize>,
    pub offset: Option<usize>,
}

impl MachineFilter {
    fn matches(&self, m: &Machine) -> bool {
        if self.state.is_some_and(|s| s != m.state) {
            return false;
        }
        if let Some(t) = &self.tag {
            if !m.tags.iter().any(|x| x == t) {
                return false;
            }
        }
        let Some(q) = self.q.as_deref().map(str::to_ascii_lowercase) else { return true };
        let mut fields: Vec<String> = m.macs.iter().map(Mac::to_string).collect();
        fields.extend(m.hostname.clone());
        fields.extend(m.serial.clone());
        fields.extend(m.vendor.clone());
        fields.extend(m.model.clone());
        fields.extend(m.reserved_ip.map(|ip| ip.to_string()));
        fields.extend(m.tags.iter().cloned());
        fields.iter().any(|f| f.to_ascii_lowercase().contains(&q))
    }
}

impl Cmdb {
    /// Registers a machine; its MACs, hostname and reserved IP must not belong to another.
    pub async fn create_machine(&self, new: NewMachine) -> Result<Machine, CmdbError> {
        validate(&new.macs, new.hostname.as_deref(), &new.tags)?;
        self.write(move |ctx| {
            check_unique(ctx, None, &new.macs, new.hostname.as_deref(), new.reserved_ip)?;
            let now = now_secs();
            let mut m = Machine::new(take_id(ctx), new.macs, now);
            m.hostname = new.hostname;
            m.reserved_ip = new.reserved_ip;
            m.serial = new.serial;
            m.tags = new.tags;
            put_machine(ctx, &m)?;
            push_event(ctx, m.id, "machine.registered", json!({"macs": m.macs}))?;
            Ok(m)
        })
        .await
    }

    /// Applies a partial update.
    pub async fn update_machine(&self, id: u64, patch: MachinePatch) -> Result<Machine, CmdbError> {
        validate(
            patch.macs.as_deref().unwrap_or(&[]),
            patch.hostname.as_ref().and_then(|h| h.as_deref()),
            patch.tags.as_deref().unwrap_or(&[]),
        )?;
        self.write(move |ctx| {
            let mut m = ctx.get::<Machine>(id)?;
            let old_macs = m.macs.clone();
            patch.apply_to(&mut m);
            check_unique(ctx, Some(id), &m.macs, m.hostname.as_deref(), m.reserved_ip)?;
            m.updated_at = now_secs();
            for gone in old_macs.iter().filter(|o| !m.macs.contains(o)) {
                ctx.t.macs.remove(gone.to_u64())?;
            }
            put_machine(ctx, &m)?;
            push_event(
                ctx,
                id,
                "machine.updated",
                json!({"hostname": m.hostname, "reserved_ip": m.reserved_ip, "state": m.state}),
            )?;
            Ok(m)
        })
        .await
    }

    /// Deletes a machine and everything that hangs off it (see `cascade`), in one transaction.
    pub async fn delete_machine(&self, id: u64) -> Result<(), CmdbError> {
        self.write(move |ctx| super::cascade::delete_machine_rows(ctx, id)).await
    }

    /// One machine by id.
    pub async fn machine(&self, id: u64) -> Result<Machine, CmdbError> {
        self.read(move |rtx| store::get(&rtx.open_table(MACHINES)?, id)).await
    }

    /// One machine by any of its MACs.
    pub async fn machine_by_mac(&self, mac: Mac) -> Result<Machine, CmdbError> {
        let id = self
            .brief_by_mac(mac)
            .map(|b| b.id)
            .ok_or_else(|| CmdbError::NotFound(format!("machine with MAC {mac}")))?;
        self.machine(id).await
    }

    /// Machines matching `filter`, by id, with the total number of matches.
    pub async fn list_machines(&self, filter: MachineFilter) -> Result<(Vec<Machine>, usize), CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(MACHINES)?;
            let (offset, limit) = (filter.offset.unwrap_or(0), filter.limit.unwrap_or(1000));
            let (mut out, mut total) = (Vec::new(), 0);
            for row in t.iter()? {
                let m: Machine = decode(row?.1.value())?;
                if filter.matches(&m) {
                    if total >= offset && out.len() < limit {
                        out.push(m);
                    }
                    total += 1;
                }
            }
            Ok((out, total))
        })
        .await
    }
}

fn validate(macs: &[Mac], hostname: Option<&str>, tags: &[String]) -> Result<(), CmdbError> {
    if let Some(h) = hostname {
        if !valid_hostname(h) {
            return Err(CmdbError::Invalid(format!(
                "hostname {h:?} is not a valid DNS label (letters, digits, '-', at most 63)"
            )));
        }
    }
    let mut seen = std::collections::HashSet::new();
    if macs.iter().any(|m| !seen.insert(*m)) {
        return Err(CmdbError::Invalid("a MAC is listed twice".into()));
    }
    if tags.iter().any(|t| t.is_empty() || t.len() > 64) {
        return Err(CmdbError::Invalid("tags must be 1 to 64 characters".into()));
    }
    Ok(())
}

pub(super) fn check_unique(
    ctx: &WriteCtx<'_>,
    me: Option<u64>,
    macs: &[Mac],
    hostname: Option<&str>,
    ip: Option<std::net::Ipv4Addr>,
) -> Result<(), CmdbError> {
    if macs.is_empty() {
        return Err(CmdbError::Invalid("a machine needs at least one MAC".into()));
    }
    let other = |owner: Option<u64>| owner.is_some_and(|o| Some(o) != me);
    // Pending deltas of this batch are not in the index yet; the table is authoritative for MACs.
    for mac in macs {
        if other(ctx.t.macs.get(mac.to_u64())?.map(|v| v.value())) {
            return Err(CmdbError::Conflict(format!("MAC {mac} belongs to another machine")));
        }
    }
    if let Some(ip) = ip {
        if other(ctx.index.reserved_owner(ip)) || other(pending(ctx, |b| b.reserved_ip == Some(ip))) {
            return Err(CmdbError::Conflict(format!("{ip} is reserved for another machine")));
        }
    }
    if let Some(h) = hostname {
        let same = |b: &Brief| b.hostname.as_deref().is_some_and(|x| x.eq_ignore_ascii_case(h));
        if other(ctx.index.by_hostname(h)) || other(pending(ctx, same)) {
            return Err(CmdbError::Conflict(format!("hostname {h} belongs to another machine")));
        }
    }
    Ok(())
}

fn pending(ctx: &WriteCtx<'_>, pred: impl Fn(&Brief) -> bool) -> Option<u64> {
    ctx.delta.iter().rev().find_map(|d| match d {
        Delta::Upsert(b) if pred(b) => Some(b.id),
        _ => None,
    })
}

pub(super) fn take_id(ctx: &mut WriteCtx<'_>) -> u64 {
    let id = *ctx.next_machine_id;
    *ctx.next_machine_id += 1;
    id
}

/// Stores a machine with its MAC rows and queues its index update (what `ctx.put` does for one).
pub(super) fn put_machine(ctx: &mut WriteCtx<'_>, m: &Machine) -> Result<(), CmdbError> {
    store::put(&mut ctx.t.machines, m)?;
    for mac in &m.macs {
        ctx.t.macs.insert(mac.to_u64(), m.id)?;
    }
    ctx.delta.push(Delta::Upsert(Brief::from(m)));
    Ok(())
}

pub(super) fn push_event(
    ctx: &mut WriteCtx<'_>,
    machine_id: u64,
    kind: &str,
    detail: serde_json::Value,
) -> Result<(), CmdbError> {
    let seq = *ctx.next_event_seq;
    *ctx.next_event_seq += 1;
    let e = Event { seq, machine_id, at_ms: now_ms(), kind: kind.to_string(), detail };
    ctx.t.events.insert((machine_id, seq), encode(&e).as_slice())?;
    // Amortized retention: every 256th event trims the machine it was written for, so a chatty
    // machine (a boot loop, a DHCP storm) cannot grow the file without bound.
    if seq % 256 == 0 {
        prune_events(ctx, machine_id, EVENTS_KEPT_PER_MACHINE)?;
    }
    Ok(())
}

/// Newest events kept per machine; older ones are dropped.
pub const EVENTS_KEPT_PER_MACHINE: usize = 1000;

/// Drops all but the newest `keep` events of a machine.
fn prune_events(ctx: &mut WriteCtx<'_>, machine_id: u64, keep: usize) -> Result<(), CmdbError> {
    let cutoff = match ctx.t.events.range((machine_id, 0)..=(machine_id, u64::MAX))?.rev().nth(keep) {
        Some(row) => Some(row?.0.value().1),
        None => None,
    };
    if let Some(seq) = cutoff {
        ctx.t.events.retain_in((machine_id, 0)..=(machine_id, seq), |_, _| false)?;
    }
    Ok(())
}

/// Stores a lease record.
pub(super) fn put_lease(ctx: &mut WriteCtx<'_>, lease: &Lease) -> Result<(), CmdbError> {
    ctx.t.leases.insert(u32::from(lease.ip), encode(lease).as_slice())?;
    let holder = (lease.state == super::LeaseState::Active).then(|| LeaseBrief::from(lease));
    ctx.delta.push(Delta::Lease(lease.ip, holder));
    Ok(())
}

/// Makes sure the sighted MAC has a machine (creating a `discovered` one), refreshes what the
/// packet told us, and appends the events to its timeline.
pub(super) fn observe(
    ctx: &mut WriteCtx<'_>,
    s: &Sighting,
    events: Vec<(String, serde_json::Value)>,
) -> Result<(), CmdbError> {
    let Some(mac) = s.mac else { return Ok(()) };
    let existing = ctx.t.macs.get(mac.to_u64())?.map(|v| v.value());
    let now = now_secs();
    let mut m = match existing {
        Some(id) => ctx.get::<Machine>(id)?,
        None => {
            let id = take_id(ctx);
            push_event(ctx, id, "machine.discovered", json!({"mac": mac, "arch": s.arch}))?;
            Machine::new(id, vec![mac], now)
        }
    };
    let before = (m.last_arch.clone(), m.circuit_id.clone(), m.remote_id.clone(), m.last_seen_at);
    if s.arch.is_some() {
        m.last_arch = s.arch.clone();
    }
    if s.circuit_id.is_some() {
        m.circuit_id = s.circuit_id.clone();
    }
    if s.remote_id.is_some() {
        m.remote_id = s.remote_id.clone();
    }
    // last_seen is refreshed at most every 10 s so a chatty client does not rewrite its record.
    if m.last_seen_at.is_none_or(|t| now >= t + 10) {
        m.last_seen_at = Some(now);
    }
    if existing.is_none() || before != (m.last_arch.clone(), m.circuit_id.clone(), m.remote_id.clone(), m.last_seen_at)
    {
        put_machine(ctx, &m)?;
    }
    for (kind, detail) in events {
        push_event(ctx, m.id, &kind, detail)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
