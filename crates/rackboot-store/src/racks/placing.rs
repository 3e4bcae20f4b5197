//! Placement applied inside write transactions: a machine's evidence (`racks::place`) puts it
//! in a slot, names it and reserves its address, with a `rack.placed` event; a node's own claim
//! places it only in a rack that trusts LLDP, and never in a slot another machine holds; an
//! operator's confirmation places it over everything.

use serde_json::json;

use super::{cached, RackCache};
use crate::events::{push_event, EventKind};
use crate::machines::{check_unique, put_machine};
use crate::model::Machine;
use crate::store::WriteCtx;
use crate::store::{decode, scan};
use crate::{now_secs, Cmdb, CmdbError};
use rackboot_model::racks::place::{self, Placement};
use rackboot_model::racks::Rack;

/// Places machine `id` from its record's evidence; nothing happens when its placement already
/// says what the evidence says. Returns the rack it is now placed in (or its claim names), if
/// that changed.
pub(crate) fn place_machine(ctx: &mut WriteCtx<'_>, racks: &[Rack], id: u64) -> Result<Option<String>, CmdbError> {
    if racks.is_empty() {
        return Ok(None);
    }
    let Some(m) = ctx.find::<Machine>(id)? else { return Ok(None) };
    apply(ctx, racks, m, false)
}

/// Applies what the evidence says to `m`. With `again` (its rack's pattern, plan or CSV
/// changed; an operator said where it is) it is named and addressed again even where it stays
/// (without: nothing happens when its placement already says what the evidence says). A node's
/// own claim (trusted by its rack) never takes a slot another machine holds.
fn apply(ctx: &mut WriteCtx<'_>, racks: &[Rack], mut m: Machine, again: bool) -> Result<Option<String>, CmdbError> {
    let found = place::find(racks, &m);
    if found.same_as(racks, m.placement.as_ref()) && !again {
        return Ok(None);
    }
    let now = now_secs();
    let prev = m.placement.take();
    let was_confirmed = prev.as_ref().is_some_and(|p| p.option82.is_some() && p.option82 == p.lldp);
    let mut chosen = found.chosen(racks);
    let mut held_by = None;
    if let Some((c, by, _)) = &chosen {
        if by.is_claim() {
            held_by = slot_holder(ctx, &c.rack, c.slot, m.id)?;
            if held_by.is_some() {
                chosen = None;
            }
        }
    }
    let mut placement = Placement {
        by: chosen.as_ref().map(|c| c.1),
        option82: found.option82.clone(),
        lldp: found.lldp.clone(),
        csv: found.csv.as_ref().map(|c| c.0.clone()),
        serial: found.serial.as_ref().map(|c| c.0.clone()),
        confirmed: found.confirmed.clone(),
        placed_at: now,
        provision_task: None,
        unmatched: found.unmatched.clone(),
    };
    let mut events = Vec::new();
    if let Some(u) = found.unmatched.as_ref().filter(|u| prev.as_ref().and_then(|p| p.unmatched.as_ref()) != Some(*u)) {
        let detail = match &u.rack {
            Some(rack) => format!("came in on {}, which rack {rack} maps to no slot", u.describe()),
            None => format!("came in on {}, which no rack maps", u.describe()),
        };
        let mut e = serde_json::to_value(u).unwrap_or_default();
        e["detail"] = json!(detail);
        events.push((EventKind::RackUnmatched, e));
    }
    let Some((claim, by, row)) = chosen else {
        // Nothing places it (its evidence is gone, or only its node's word is left): it leaves
        // its slot and keeps its name and address; its claims wait for an operator.
        if let (Some(rack), Some(slot)) = (m.rack.take(), m.slot.take()) {
            let why = match held_by {
                Some(h) => format!("its claim names a slot machine {h} holds"),
                None if placement.lldp.is_some() || placement.serial.is_some() => {
                    "only its node's own report names a slot".to_string()
                }
                None => "no evidence places it".to_string(),
            };
            events.push((EventKind::RackLeft, json!({"rack": rack, "slot": slot, "why": why})));
        }
        // The rack its claim names gets its flags checked (the claim shows there).
        let claimed = [&placement.lldp, &placement.serial]
            .into_iter()
            .flatten()
            .next()
            .map(|c| c.rack.clone())
            .or_else(|| placement.unmatched.as_ref().and_then(|u| u.rack.clone()));
        let any = [&placement.option82, &placement.lldp, &placement.csv, &placement.serial].iter().any(|c| c.is_some())
            || placement.unmatched.is_some();
        m.placement = any.then_some(placement);
        m.updated_at = now;
        put_machine(ctx, &m)?;
        for (kind, detail) in events {
            push_event(ctx, m.id, kind, detail)?;
        }
        return Ok(claimed);
    };
    let moved = again || m.rack.as_deref() != Some(claim.rack.as_str()) || m.slot != Some(claim.slot);
    let rack = racks.iter().find(|r| r.name == claim.rack).expect("a claim names a known rack");
    if !moved {
        if let Some(p) = prev.as_ref().filter(|p| p.by.is_some()) {
            (placement.placed_at, placement.provision_task) = (p.placed_at, p.provision_task);
        }
    }
    m.placement = Some(placement);
    if moved {
        (m.rack, m.slot) = (Some(claim.rack.clone()), Some(claim.slot));
        // It joins its rack's pool.
        m.pool = rack.pool.clone();
        let hostname = row.and_then(|r| r.hostname.clone()).or_else(|| rack.hostname(claim.slot).ok());
        let ip = row.and_then(|r| r.ip).or_else(|| rack.address(claim.slot));
        let mut detail = json!({"rack": claim.rack, "slot": claim.slot, "by": by, "port": claim.port, "pool": m.pool});
        match check_unique(ctx, Some(m.id), &m.macs, hostname.as_deref(), ip) {
            Ok(()) => {
                m.hostname = hostname.or(m.hostname.take());
                m.reserved_ip = ip.or(m.reserved_ip);
                detail["hostname"] = json!(m.hostname);
                detail["ip"] = json!(m.reserved_ip);
            }
            // Another machine holds the slot's name or address: it claims the slot all the same
            // (the rack's flags show both), but takes neither.
            Err(CmdbError::Conflict(why)) => detail["not_named"] = json!(why),
            Err(e) => return Err(e),
        }
        events.push((EventKind::RackPlaced, detail));
    }
    if let (Some(a), Some(b)) = (&found.option82, &found.lldp) {
        if a == b && !was_confirmed {
            events.push((EventKind::RackConfirmed, json!({"rack": a.rack, "slot": a.slot, "port": a.port})));
        }
    }
    m.updated_at = now;
    put_machine(ctx, &m)?;
    for (kind, detail) in events {
        push_event(ctx, m.id, kind, detail)?;
    }
    Ok(Some(claim.rack))
}

/// `"rack":"<name>"` as a machine's stored JSON holds it, anywhere (its place or a claim): only
/// records that hold it are decoded when a rack's machines are looked for among thousands. (A
/// rack name is a DNS label: no escaping.)
pub(super) struct RackNeedle(Vec<u8>);

impl RackNeedle {
    pub(super) fn of(rack: &str) -> RackNeedle {
        RackNeedle(format!("\"rack\":\"{rack}\"").into_bytes())
    }

    pub(super) fn in_record(&self, bytes: &[u8]) -> bool {
        bytes.windows(self.0.len()).any(|w| w == self.0.as_slice())
    }
}

/// The machine other than `except` placed in `rack`'s `slot`, if any (read only for a trusted
/// node's claim).
fn slot_holder(ctx: &WriteCtx<'_>, rack: &str, slot: u32, except: u64) -> Result<Option<u64>, CmdbError> {
    let needle = RackNeedle::of(rack);
    for row in ctx.t.machines.iter()? {
        let row = row?;
        if row.0.value() == except || !needle.in_record(row.1.value()) {
            continue;
        }
        let m: Machine = decode(row.1.value())?;
        if m.rack.as_deref() == Some(rack) && m.slot == Some(slot) {
            return Ok(Some(m.id));
        }
    }
    Ok(None)
}

/// Places every machine again against `racks` (after the rack list changed from `before`):
/// machines of a rack whose naming (pattern, plan, CSV) changed get their names again.
pub(super) fn place_all(ctx: &mut WriteCtx<'_>, before: &[Rack], racks: &[Rack]) -> Result<(), CmdbError> {
    // Its machines are named, addressed and pooled again when any of these change.
    let naming = |r: &Rack| (r.hostname_pattern.clone(), r.address_plan, r.machines.clone(), r.pool.clone());
    let renamed: Vec<&str> = racks
        .iter()
        .filter(|r| before.iter().any(|b| b.name == r.name && naming(b) != naming(r)))
        .map(|r| r.name.as_str())
        .collect();
    let all: Vec<Machine> = scan(&ctx.t.machines)?;
    for m in all {
        let again = m.rack.as_deref().is_some_and(|r| renamed.contains(&r));
        apply(ctx, racks, m, again)?;
    }
    Ok(())
}

impl Cmdb {
    /// An operator says where machine `id` is (`Some`: that rack's slot, over every other
    /// evidence) or withdraws what they said (`None`: its evidence places it again). The
    /// machine as it is now placed.
    pub async fn confirm_placement(&self, id: u64, at: Option<place::Claim>) -> Result<Machine, CmdbError> {
        let cache = self.inner.racks.clone();
        self.write(move |ctx| {
            let racks = cached(&cache);
            let mut m: Machine = ctx.get(id)?;
            if let Some(c) = &at {
                if !racks.iter().any(|r| r.name == c.rack) {
                    return Err(CmdbError::NotFound(format!("rack {}", c.rack)));
                }
                let max = rackboot_model::racks::MAX_SLOTS;
                if !(1..=max).contains(&c.slot) {
                    return Err(CmdbError::Invalid(format!("slot U{} is not in U1-U{max}", c.slot)));
                }
            }
            let p = m.placement.get_or_insert_with(|| Placement {
                by: None,
                option82: None,
                lldp: None,
                csv: None,
                serial: None,
                confirmed: None,
                placed_at: now_secs(),
                provision_task: None,
                unmatched: None,
            });
            p.confirmed = at.map(|c| place::Claim { port: None, ..c });
            apply(ctx, &racks, m, true)?;
            ctx.get(id)
        })
        .await
    }

    /// Records `task` as the provisioning the rack queued for machine `id`.
    pub async fn set_placement_task(&self, id: u64, task: u64) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            let mut m: Machine = ctx.get(id)?;
            if let Some(p) = &mut m.placement {
                p.provision_task = Some(task);
                put_machine(ctx, &m)?;
            }
            Ok(())
        })
        .await
    }
}

/// Places the machine a DHCP packet came from, when the packet carried option 82 or a rack
/// lists machines by MAC (the DHCP path: no work at all without racks).
pub(crate) fn place_sighted(ctx: &mut WriteCtx<'_>, cache: &RackCache, s: &crate::Sighting) -> Result<(), CmdbError> {
    let racks = cached(cache);
    let Some(mac) = s.mac else { return Ok(()) };
    if racks.is_empty() || (s.circuit_id.is_none() && racks.iter().all(|r| r.machines.is_empty())) {
        return Ok(());
    }
    let Some(id) = ctx.t.macs.get(mac.to_u64())?.map(|v| v.value()) else { return Ok(()) };
    place_machine(ctx, &racks, id).map(drop)
}
