//! Machine and lease writes and queries on the CMDB handle.

use serde_json::json;

use super::events::{append_event, push_event, state_of, EventKind};
use super::index::{Brief, Delta, LeaseBrief};
use super::model::{valid_hostname, Lease, Machine, MachinePatch, MachineState, NewMachine, Sighting};
use super::store::{self, decode, encode, Def, Record, WriteCtx, MACHINES};
use super::{now_secs, Cmdb, CmdbError};
use rackboot_model::mac::Mac;

/// Which machines a listing wants, and where its page starts.
#[derive(Debug, Clone, Default)]
pub struct MachineFilter {
    /// Case-insensitive substring of a MAC, the hostname, serial, vendor, model, a tag, the
    /// reserved address or an address leased to one of its MACs.
    pub q: Option<String>,
    pub state: Option<MachineState>,
    pub tag: Option<String>,
    /// The boot profile the machine is pinned to.
    pub profile: Option<String>,
    /// Case-insensitive substring of the vendor the inventory reported.
    pub vendor: Option<String>,
    /// The resource pool.
    pub pool: Option<String>,
    /// Only machines of these pools (a pool-scoped caller's).
    pub pools: Option<Vec<String>>,
    /// Only machines with an id above this (the page cursor).
    pub after: Option<u64>,
    pub limit: Option<usize>,
}

/// One page of machines: the machines, how many match in all, and the id the next page starts
/// after (`None` on the last page).
#[derive(Debug, Clone)]
pub struct MachinePage {
    pub machines: Vec<Machine>,
    pub total: usize,
    pub next_after: Option<u64>,
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
            push_event(ctx, m.id, EventKind::MachineRegistered, json!({"macs": m.macs}))?;
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
                EventKind::MachineUpdated,
                json!({"hostname": m.hostname, "reserved_ip": m.reserved_ip, "state": m.state}),
            )?;
            Ok(m)
        })
        .await
    }

    /// Moves machine `id` to resource pool `pool` (checked by the caller), with an event.
    pub async fn set_machine_pool(&self, id: u64, pool: String) -> Result<Machine, CmdbError> {
        self.write(move |ctx| {
            let mut m = ctx.get::<Machine>(id)?;
            if m.pool == pool {
                return Ok(m);
            }
            let was = std::mem::replace(&mut m.pool, pool);
            m.updated_at = now_secs();
            put_machine(ctx, &m)?;
            push_event(ctx, id, EventKind::MachineUpdated, json!({"pool": m.pool, "was": was}))?;
            Ok(m)
        })
        .await
    }

    /// Moves a machine to the state `decide` picks from it and its active run (if any), with an
    /// event, in one transaction; `decide` refuses by returning the error.
    pub async fn transition<F>(
        &self,
        machine_id: u64,
        decide: F,
        event: (EventKind, serde_json::Value),
    ) -> Result<Machine, CmdbError>
    where
        F: FnOnce(&Machine, Option<&rackboot_model::provision::Run>) -> Result<MachineState, CmdbError>
            + Send
            + 'static,
    {
        self.write(move |ctx| {
            let mut m: Machine = ctx.get(machine_id)?;
            let active = super::provision::active_runs_in(ctx)?;
            m.state = decide(&m, active.iter().find(|r| r.machine_id == Some(machine_id)))?;
            m.updated_at = now_secs();
            push_event(ctx, machine_id, event.0, event.1)?;
            // A change of state goes on the timeline too (see `put_machine`).
            ctx.put(&m)?;
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

    /// Machines in id order that match `filter`, one page at a time. The page is chosen from
    /// the in-memory index; only its machines are read from storage.
    pub async fn list_machines(&self, filter: MachineFilter) -> Result<MachinePage, CmdbError> {
        // The selection runs on the blocking pool with the read: a search scans every machine
        // (about 29 ms at 100,000, bench/cmdb.sh), too long for an async worker.
        let index = self.inner.index.clone();
        self.read(move |rtx| {
            let sel = index.read().expect("index lock").select(&filter, now_secs());
            let t = rtx.open_table(MACHINES)?;
            let mut machines = Vec::with_capacity(sel.ids.len());
            // One deleted since the page was chosen is left out.
            for row in t.get_many(&sel.ids)?.into_iter().flatten() {
                machines.push(decode::<Machine>(row.value())?);
            }
            Ok(MachinePage { machines, total: sel.total, next_after: sel.next_after })
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
    if tags.iter().any(|t| t.is_empty() || t.chars().count() > 64) {
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

/// Stores a machine with its MAC rows and queues its index update (what `ctx.put` does for one);
/// a change of state goes on its timeline as `machine.state`.
pub(super) fn put_machine(ctx: &mut WriteCtx<'_>, m: &Machine) -> Result<(), CmdbError> {
    let before = state_of(ctx, m.id);
    store::put(&mut ctx.t.machines, m)?;
    for mac in &m.macs {
        ctx.t.macs.insert(mac.to_u64(), m.id)?;
    }
    ctx.delta.push(Delta::Upsert(Brief::from(m)));
    if let Some(from) = before.filter(|s| *s != m.state) {
        push_event(ctx, m.id, EventKind::MachineState, json!({"from": from, "to": m.state}))?;
    }
    Ok(())
}

/// How far an appliance's clock may be from the database's before a lease it thinks expired is
/// one the store still holds.
const CLOCK_MARGIN_SECS: u64 = 5;

/// On a shared store, refuses a lease on an address another client holds (active, unexpired):
/// another appliance may have leased it since this one's memory was brought up to date. The
/// embedded store has one DHCP server, whose own lease map already decides this.
pub(super) fn check_lease_free(ctx: &WriteCtx<'_>, lease: &Lease) -> Result<(), CmdbError> {
    if !ctx.t.tx.shared() {
        return Ok(());
    }
    let Some(held) = ctx.t.leases.get(u32::from(lease.ip))? else { return Ok(()) };
    let held: Lease = decode(held.value())?;
    // Any change (a release or decline from a stale map too), with a few seconds of margin for the
    // appliances' clocks against the database's, which the table's trigger goes by.
    let in_force = held.expires_at + CLOCK_MARGIN_SECS > now_secs();
    if held.state == super::LeaseState::Active && in_force && held.mac != lease.mac {
        return Err(CmdbError::Conflict(format!(
            "{} is leased to {} (through another appliance) until {}",
            lease.ip, held.mac, held.expires_at
        )));
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
    events: Vec<(EventKind, serde_json::Value)>,
    growth: &super::Growth,
) -> Result<(), CmdbError> {
    let Some(mac) = s.mac else { return Ok(()) };
    let existing = ctx.t.macs.get(mac.to_u64())?.map(|v| v.value());
    let now = now_secs();
    let mut m = match existing {
        Some(id) => ctx.get::<Machine>(id)?,
        None => {
            super::unclaimed::make_room(ctx, growth)?;
            let id = take_id(ctx);
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
    // A machine new in this job has no earlier events for these to fold into.
    let fresh = existing.is_none();
    if fresh {
        append_event(ctx, m.id, EventKind::MachineDiscovered, json!({"mac": mac, "arch": s.arch}))?;
    }
    for (kind, detail) in events {
        if fresh {
            append_event(ctx, m.id, kind, detail)?;
        } else {
            push_event(ctx, m.id, kind, detail)?;
        }
    }
    Ok(())
}

/// Machines use the batch's open table, and a write also keeps the MAC rows and the index.
impl Record for Machine {
    const TABLE: Def<u64, &'static [u8]> = MACHINES;
    const NAME: &'static str = "machine";
    fn key(&self) -> u64 {
        self.id
    }
    fn find_in(ctx: &WriteCtx<'_>, id: u64) -> Result<Option<Self>, CmdbError> {
        store::find(&ctx.t.machines, id)
    }
    fn put_in(&self, ctx: &mut WriteCtx<'_>) -> Result<(), CmdbError> {
        put_machine(ctx, self)
    }
}

#[cfg(test)]
mod tests;
