//! Racks in the CMDB: the `racks` table (and an in-memory copy the DHCP path reads); placement
//! applied inside write transactions is `placing`. Flags (`racks::flags`) are computed from a
//! read and their events recorded once in a write.

use std::sync::{Arc, RwLock};

use serde_json::json;

use super::events::push_event;
use super::model::Machine;
use super::store::WriteCtx;
use super::store::{decode, encode, scan, EVENTS, MACHINES, RACKS};
use super::{now_secs, Cmdb, CmdbError};
use rackboot_model::network;
use rackboot_model::racks::flags::{self, Flag, MachineSummary, RackView};
use rackboot_model::racks::{check_against, CsvMachine, Rack, MAX_RACKS};

mod placing;
use placing::{place_all, RackNeedle};
pub(super) use placing::{place_machine, place_sighted};

/// The racks as last committed, for the DHCP and inventory paths (read without storage).
pub(super) type RackCache = Arc<RwLock<Arc<Vec<Rack>>>>;

/// Reads every rack in a write batch.
fn all_in(ctx: &WriteCtx<'_>) -> Result<Vec<Rack>, CmdbError> {
    scan(&ctx.t.tx.open_table(RACKS)?)
}

/// Loads the cache from the file (at open).
pub(super) fn load(db: &super::kv::Db) -> Result<RackCache, CmdbError> {
    let rtx = db.begin_read()?;
    let racks: Vec<Rack> = scan(&rtx.open_table(RACKS)?)?;
    Ok(Arc::new(RwLock::new(Arc::new(racks))))
}

/// The current racks from the cache.
pub(super) fn cached(cache: &RackCache) -> Arc<Vec<Rack>> {
    cache.read().expect("rack cache lock").clone()
}

impl Cmdb {
    /// The address a machine asking through this switch port (option 82 circuit and remote id)
    /// gets once it is placed: its slot's planned address, when a rack claims the port and nobody
    /// holds that address yet. DHCP offers it on the very first DISCOVER, before the placement is
    /// written, so a client is never offered a pool address it is then refused (iPXE ignores a
    /// NAK and gives up its DHCP).
    pub fn planned_address(&self, circuit: Option<&str>, remote: Option<&str>) -> Option<std::net::Ipv4Addr> {
        circuit?;
        let racks = cached(&self.inner.racks);
        let claim = rackboot_model::racks::place::by_option82(&racks, circuit, remote)?;
        let ip = racks.iter().find(|r| r.name == claim.rack)?.address(claim.slot)?;
        self.reserved_owner(ip).is_none().then_some(ip)
    }

    /// The provisioning networks rack address plans must lie in (the DHCP subnets, set by the
    /// DHCP service at start; empty: not known).
    pub fn set_provisioning_networks(&self, nets: Vec<ipnet::Ipv4Net>) {
        *self.inner.networks.write().expect("networks lock") = nets;
    }

    /// See [`Cmdb::set_provisioning_networks`].
    pub fn provisioning_networks(&self) -> Vec<ipnet::Ipv4Net> {
        self.inner.networks.read().expect("networks lock").clone()
    }

    /// The UEFI loader rack `name` chooses for its machines, from the in-memory rack list.
    pub fn rack_uefi_loader(&self, name: &str) -> Option<rackboot_model::boot::UefiLoader> {
        let racks = self.inner.racks.read().expect("rack cache lock").clone();
        racks.iter().find(|r| r.name == name)?.uefi_loader
    }

    /// Whether any rack is defined (a sighting may place a machine), from memory.
    pub fn has_racks(&self) -> bool {
        !self.inner.racks.read().expect("rack cache lock").is_empty()
    }

    /// Every rack, by name.
    pub async fn racks(&self) -> Result<Vec<Rack>, CmdbError> {
        self.read(|rtx| scan(&rtx.open_table(RACKS)?)).await
    }

    /// One rack.
    pub async fn rack(&self, name: String) -> Result<Rack, CmdbError> {
        self.read(move |rtx| match rtx.open_table(RACKS)?.get(name.as_str())? {
            Some(v) => decode(v.value()),
            None => Err(CmdbError::NotFound(format!("rack {name}"))),
        })
        .await
    }

    /// Stores a checked rack: a new one (`replace` false; 409 if the name is taken), or in place
    /// of the one with its name (`replace`; its creation time and raised flags are kept). It
    /// must not overlap another rack (addresses, switch ports, machines). Every machine is
    /// placed again against the new racks in the same transaction.
    pub async fn put_rack(&self, rack: Rack, replace: bool) -> Result<Rack, CmdbError> {
        self.write_racks(move |racks| {
            let old = racks.iter().position(|r| r.name == rack.name);
            let mut rack = rack;
            match (old, replace) {
                (Some(_), false) => return Err(CmdbError::Conflict(format!("rack {} exists", rack.name))),
                (None, true) => return Err(CmdbError::NotFound(format!("rack {}", rack.name))),
                (None, false) if racks.len() >= MAX_RACKS => {
                    return Err(CmdbError::Conflict(format!("at most {MAX_RACKS} racks")))
                }
                (Some(i), true) => {
                    rack.created_at = racks[i].created_at;
                    rack.raised = racks[i].raised.clone();
                }
                (None, false) => {}
            }
            check_against(&rack, racks).map_err(CmdbError::Conflict)?;
            match old {
                Some(i) => racks[i] = rack.clone(),
                None => racks.push(rack.clone()),
            }
            Ok(rack)
        })
        .await
    }

    /// Replaces a rack's CSV machine list (checked against the rack and the other racks).
    pub async fn set_rack_machines(&self, name: String, rows: Vec<CsvMachine>) -> Result<Rack, CmdbError> {
        self.write_racks(move |racks| {
            let i =
                racks.iter().position(|r| r.name == name).ok_or_else(|| CmdbError::NotFound(format!("rack {name}")))?;
            let mut rack = racks[i].clone();
            rack.machines = rows;
            rack.updated_at = now_secs();
            if let Some(m) = rack
                .machines
                .iter()
                .find(|m| m.ip.is_none() && rack.address_plan.is_some() && rack.address(m.slot).is_none())
            {
                return Err(CmdbError::Invalid(format!("address_plan has too few addresses for U{}", m.slot)));
            }
            check_against(&rack, racks).map_err(CmdbError::Conflict)?;
            racks[i] = rack.clone();
            Ok(rack)
        })
        .await
    }

    /// Deletes a rack; its machines leave it (they keep their names and reservations).
    pub async fn delete_rack(&self, name: String) -> Result<(), CmdbError> {
        self.write_racks(move |racks| {
            let i =
                racks.iter().position(|r| r.name == name).ok_or_else(|| CmdbError::NotFound(format!("rack {name}")))?;
            racks.remove(i);
            Ok(())
        })
        .await
    }

    /// Runs a change of the rack list in one write: `f` edits the list (checking first), then
    /// the table is rewritten, every machine placed again and the cache swapped.
    async fn write_racks<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Vec<Rack>) -> Result<T, CmdbError> + Send + 'static,
    ) -> Result<T, CmdbError> {
        let cache = self.inner.racks.clone();
        let out = self
            .write(move |ctx| {
                let before = all_in(ctx)?;
                let mut racks = before.clone();
                let out = f(&mut racks)?;
                // A changed rack's network plans must not overlap another rack's nor hold a
                // machine's own address.
                let changed: Vec<&Rack> =
                    racks.iter().filter(|r| !r.network_plans.is_empty() && !before.contains(r)).collect();
                if !changed.is_empty() {
                    let held = super::network::reservations(ctx)?;
                    let plans: Vec<(&str, &network::NetPlans)> =
                        racks.iter().map(|r| (r.name.as_str(), &r.network_plans)).collect();
                    let clash = |r: &&Rack| network::plans_clash(&r.name, &r.network_plans, &plans, &held);
                    if let Some(why) = changed.iter().find_map(clash) {
                        return Err(CmdbError::Conflict(why));
                    }
                }
                let mut t = ctx.t.tx.open_table(RACKS)?;
                for gone in before.iter().filter(|b| !racks.iter().any(|r| r.name == b.name)) {
                    t.remove(gone.name.as_str())?;
                }
                for r in &racks {
                    t.insert(r.name.as_str(), encode(r).as_slice())?;
                }
                drop(t);
                place_all(ctx, &before, &racks)?;
                *cache.write().expect("rack cache lock") = Arc::new(racks);
                ctx.racks_changed = true;
                Ok(out)
            })
            .await;
        if matches!(out, Err(CmdbError::Storage(_))) {
            // The batch did not commit: the cache may hold what it did not write.
            let racks = self.racks().await.unwrap_or_default();
            *self.inner.racks.write().expect("rack cache lock") = Arc::new(racks);
        }
        out
    }

    /// A rack with its elevation and flags; flags not yet recorded get their events now (once
    /// while they last).
    pub async fn rack_view(&self, name: String) -> Result<RackView, CmdbError> {
        let (rack, members, last) = self
            .read(move |rtx| {
                let rack: Rack = match rtx.open_table(RACKS)?.get(name.as_str())? {
                    Some(v) => decode(v.value())?,
                    None => return Err(CmdbError::NotFound(format!("rack {name}"))),
                };
                let mut members = Vec::new();
                // Only records that name the rack are decoded: a view stays cheap among
                // thousands of machines.
                let needle = RackNeedle::of(&rack.name);
                for row in rtx.open_table(MACHINES)?.iter()? {
                    let row = row?;
                    if !needle.in_record(row.1.value()) {
                        continue;
                    }
                    let m: Machine = decode(row.1.value())?;
                    if flags::concerns(&rack.name, &m) {
                        members.push(m);
                    }
                }
                let events = rtx.open_table(EVENTS)?;
                let mut last = Vec::new();
                for m in &members {
                    let newest = events.range((m.id, 0)..=(m.id, u64::MAX))?.next_back().transpose()?;
                    let e: Option<super::Event> = newest.map(|(_, v)| decode(v.value())).transpose()?;
                    last.push(e.map(|e| (e.kind, e.at_ms)));
                }
                Ok((rack, members, last))
            })
            .await?;
        let found = flags::compute(&rack, &members, now_secs());
        let keys: Vec<String> = found.iter().map(Flag::key).collect();
        if keys != rack.raised {
            self.raise(rack.name.clone(), found.clone()).await?;
        }
        let placed = members
            .iter()
            .zip(last)
            .filter(|(m, _)| m.rack.as_deref() == Some(rack.name.as_str()))
            .filter_map(|(m, last)| Some((m.slot?, MachineSummary::of(m, last))))
            .collect();
        Ok(flags::elevation(rack, placed, found))
    }

    /// Records the events of flags the rack has not raised yet and remembers which are up.
    async fn raise(&self, name: String, found: Vec<Flag>) -> Result<(), CmdbError> {
        let cache = self.inner.racks.clone();
        self.write(move |ctx| {
            let mut t = ctx.t.tx.open_table(RACKS)?;
            let Some(mut rack) = t.get(name.as_str())?.map(|v| decode::<Rack>(v.value())).transpose()? else {
                return Ok(());
            };
            let new: Vec<Flag> = found.iter().filter(|f| !rack.raised.contains(&f.key())).cloned().collect();
            rack.raised = found.iter().map(Flag::key).collect();
            t.insert(name.as_str(), encode(&rack).as_slice())?;
            drop(t);
            for f in new {
                let detail = json!({"rack": name, "slot": f.slot, "detail": f.detail, "machines": f.machines});
                let on = if f.machines.is_empty() { vec![0] } else { f.machines.clone() };
                for id in on {
                    push_event(ctx, id, f.kind.event(), detail.clone())?;
                }
            }
            let mut racks = cached(&cache).as_ref().clone();
            if let Some(r) = racks.iter_mut().find(|r| r.name == name) {
                r.raised = rack.raised.clone();
            }
            *cache.write().expect("rack cache lock") = Arc::new(racks);
            ctx.racks_changed = true;
            Ok(())
        })
        .await
    }
}
