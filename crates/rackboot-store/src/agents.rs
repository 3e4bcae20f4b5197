//! Node agents on the CMDB handle: enrollment and credentials, the operator's approval, the
//! inventory an agent reports onto its machine, and its periodic stats.

use std::net::IpAddr;

use rackboot_agent::wire::{EnrollRequest, Inventory, Stats};
use serde_json::json;

use super::events::{push_event, EventKind};
use super::machines::take_id;
use super::model::{AgentRecord, Machine, MachineState};
use super::nonces::{self, NonceCheck};
use super::{now_secs, Cmdb, CmdbError};
use rackboot_model::mac::Mac;

/// What an enrollment decided.
#[derive(Debug, Clone)]
pub struct Enrolled {
    pub machine_id: u64,
    pub approved: bool,
    pub created: bool,
}

/// An enrollment's outcome: enrolled (approved or waiting for the operator), or refused because
/// the machine's agent holds a live credential and the caller proved neither that boot nor
/// that credential.
#[derive(Debug, Clone)]
pub enum EnrollOutcome {
    Enrolled(Enrolled),
    /// Nothing was written but an `agent.enroll_conflict` event on the machine (when the
    /// enrollment matched one).
    Conflict {
        machine_id: Option<u64>,
        /// What the presented nonce turned out to be (its `reason()` says why it admitted nothing).
        nonce: NonceCheck,
    },
    /// Nothing was written but an `agent.enroll_conflict` event: the machine would have more
    /// than [`MAX_MACHINE_MACS`] MACs.
    TooManyMacs {
        machine_id: u64,
        would_have: usize,
    },
    /// Nothing was written: the machine's proven enrollments are over their bound a minute.
    TooOften {
        machine_id: u64,
    },
}

/// What may let an enrollment in. Everything is judged inside the enrollment's own
/// transaction, against the machine the enrollment matches.
#[derive(Debug, Clone, Default)]
pub struct Admission {
    /// Policy accepts a proven boot without the operator (`enroll = "auto"` and the caller on
    /// a provisioning network).
    pub auto: bool,
    /// The credential the caller presented: (machine id, hex SHA-256 of its secret). It admits
    /// the enrollment only if it is, at the moment of the write, that machine's current and
    /// approved credential (an installed node renewing), not one superseded since it was sent.
    pub presented: Option<(u64, String)>,
    /// Hex SHA-256 of the boot nonce presented (`rackboot.nonce=` of the boot being enrolled):
    /// proof that the caller is the boot rackboot served to the boot MAC's address.
    pub nonce: Option<String>,
    /// The caller is a rescue's BootOS: the installed system's credential it replaces is kept
    /// (`AgentRecord::kept_sha256`) for the system's return.
    pub keep_installed: bool,
    /// The machine is being returned from a rescue to its disk: the kept credential of its
    /// installed system admits that system's agent.
    pub returning: bool,
    /// Counts a proven enrollment of a known machine against its budget a minute; false: over
    /// it (`agent.enrollments_per_minute`). None: not bounded.
    pub per_machine: Option<PerMachine>,
}

/// See [`Admission::per_machine`].
#[derive(Clone)]
pub struct PerMachine(pub std::sync::Arc<dyn Fn(u64) -> bool + Send + Sync>);

impl std::fmt::Debug for PerMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PerMachine")
    }
}

/// MACs one enrollment may carry (a big server has a dozen NICs).
const MAX_ENROLL_MACS: usize = 64;

/// MACs one machine may have in all, however many enrollments bring them: a node cannot claim
/// the MACs of machines still to boot by the hundred.
pub const MAX_MACHINE_MACS: usize = 64;

impl Cmdb {
    /// Matches the enrolling node to a machine (boot MAC first, then any of its MACs; a new
    /// machine when none is known), records any MACs the machine did not have yet, and stores
    /// the new credential's hash.
    ///
    /// A valid boot nonce (used up here) or the machine's current credential proves the caller;
    /// with `admission.auto` a proven boot's credential replaces the machine's at once. A machine
    /// whose agent holds an approved credential is never taken over without proof: the call is
    /// refused and recorded (`agent.enroll_conflict`). Otherwise the new credential waits for
    /// the operator (beside the approved one, or alone). The match, the checks and the writes are
    /// one transaction.
    pub async fn enroll_agent(
        &self,
        req: EnrollRequest,
        secret_sha256: String,
        admission: Admission,
        from: Option<IpAddr>,
    ) -> Result<EnrollOutcome, CmdbError> {
        let (boot_mac, macs) = enroll_macs(&req)?;
        let growth = self.inner.growth.clone();
        self.write(move |ctx| {
            // Everything is read (and decoded) before anything is written.
            let mut found = None;
            for mac in boot_mac.iter().chain(macs.iter()) {
                if let Some(id) = ctx.t.macs.get(mac.to_u64())?.map(|v| v.value()) {
                    found = Some(id);
                    break;
                }
            }
            let first = boot_mac.or(macs.first().copied()).expect("checked by enroll_macs");
            let (existing, old) = match found {
                Some(id) => (Some(ctx.get::<Machine>(id)?), ctx.find::<AgentRecord>(id)?),
                None => (None, None),
            };
            // The MACs the machine has (a new machine: its boot MAC).
            let known: Vec<Mac> = existing.as_ref().map_or_else(|| vec![first], |m| m.macs.clone());
            let mut new_macs = Vec::new();
            for mac in boot_mac.iter().chain(macs.iter()) {
                if ctx.t.macs.get(mac.to_u64())?.is_none() && !known.contains(mac) && !new_macs.contains(mac) {
                    new_macs.push(*mac);
                }
            }
            let holds_current = match (&admission.presented, &old) {
                (Some((id, hash)), Some(rec)) => {
                    let current = rec.approved && rackboot_base::secret::same_secret(&rec.secret_sha256, hash);
                    let kept = admission.returning
                        && req.mode == rackboot_agent::wire::AgentMode::Installed
                        && rec.kept_sha256.as_deref().is_some_and(|k| rackboot_base::secret::same_secret(k, hash));
                    Some(*id) == found && (current || kept)
                }
                _ => false,
            };
            // A nonce proves only a boot of this machine: one issued for a MAC it already has
            // (a new machine: its boot MAC), never one of another MAC listed beside it.
            let all_macs: Vec<Mac> = boot_mac.iter().chain(macs.iter()).copied().collect();
            let (nonce, nonce_mac) =
                nonces::check(ctx, &all_macs, admission.nonce.as_deref(), |mac| known.contains(&mac))?;
            let live = old.as_ref().is_some_and(|r| r.approved);
            let from_text = from.map(|ip| ip.to_string());
            if nonce == NonceCheck::Foreign || (live && !holds_current && nonce != NonceCheck::Valid) {
                let reason = nonce.reason();
                let machine_id = found.map(|id| {
                    let detail = json!({"from": from_text, "reason": reason, "boot_mac": boot_mac, "macs": req.macs.len()});
                    push_event(ctx, id, EventKind::AgentEnrollConflict, detail).map(|()| id)
                });
                return Ok(EnrollOutcome::Conflict { machine_id: machine_id.transpose()?, nonce });
            }
            let proven = holds_current || nonce == NonceCheck::Valid;
            // A known machine's proven enrollments are counted (unproven ones spend nobody's
            // budget); past the bound nothing is written, so its nonce stays valid for later.
            if let (Some(id), true, Some(admit)) = (found, proven, &admission.per_machine) {
                if !(admit.0)(id) {
                    return Ok(EnrollOutcome::TooOften { machine_id: id });
                }
            }
            nonces::spend(ctx, nonce_mac)?;
            let accepted = holds_current || (admission.auto && nonce == NonceCheck::Valid);
            // MACs join the machine only with a proven enrollment; otherwise they wait on the
            // agent record for the operator's approval.
            let pending_macs = if proven { Vec::new() } else { std::mem::take(&mut new_macs) };
            let would_have = known.len() + new_macs.len().max(pending_macs.len());
            if let (Some(id), true) = (found, would_have > MAX_MACHINE_MACS) {
                let detail = json!({"from": from_text, "reason": format!("the machine would have {would_have} MACs, more than {MAX_MACHINE_MACS}"), "boot_mac": boot_mac, "macs": req.macs.len()});
                push_event(ctx, id, EventKind::AgentEnrollConflict, detail)?;
                return Ok(EnrollOutcome::TooManyMacs { machine_id: id, would_have });
            }
            let mut m = match existing {
                Some(m) => m,
                None => {
                    super::unclaimed::make_room(ctx, &growth)?;
                    Machine::new(take_id(ctx), vec![first], now_secs())
                }
            };

            let now = now_secs();
            let created = found.is_none();
            m.macs.extend(new_macs);
            // What the node says of itself names the machine only when it proved who it is.
            if proven && m.serial.is_none() {
                m.serial = req.serial.clone().filter(|s| !s.trim().is_empty());
            }
            m.last_seen_at = Some(now);
            m.updated_at = now;
            ctx.put(&m)?;
            let fresh = AgentRecord {
                v: 1,
                machine_id: m.id,
                secret_sha256: secret_sha256.clone(),
                pending_sha256: None,
                mode: req.mode,
                approved: accepted,
                enrolled_at: now,
                enrolled_from: from_text.clone(),
                boot_mac,
                system_uuid: req.system_uuid.clone(),
                version: req.version.clone(),
                stats: None,
                stats_at: None,
                pending_macs: pending_macs.clone(),
                // A rescue's BootOS keeps the installed system's credential it replaces (or the
                // one kept already, across a second BootOS boot of the same rescue).
                kept_sha256: match &old {
                    Some(o) if admission.keep_installed && o.approved && o.mode == rackboot_agent::wire::AgentMode::Installed => {
                        Some(o.secret_sha256.clone())
                    }
                    Some(o) if admission.keep_installed => o.kept_sha256.clone(),
                    _ => None,
                },
            };
            // A proven boot under manual approval: the new credential waits beside the live one.
            let rec = match old {
                Some(old) if !accepted && old.approved => {
                    AgentRecord { pending_sha256: Some(secret_sha256), pending_macs, ..old }
                }
                _ => fresh,
            };
            ctx.put(&rec)?;
            if created {
                push_event(ctx, m.id, EventKind::MachineDiscovered, json!({"by": "agent", "macs": m.macs}))?;
            }
            let detail = json!({"mode": req.mode, "boot_mac": boot_mac, "approved": accepted, "nonce": nonce.label(), "from": from_text, "version": req.version});
            push_event(ctx, m.id, EventKind::AgentEnrolled, detail)?;
            Ok(EnrollOutcome::Enrolled(Enrolled { machine_id: m.id, approved: accepted, created }))
        })
        .await
    }

    /// Puts an `agent.enroll_conflict` event with `detail` on machine `id`'s timeline: its
    /// enrollments were refused for their rate (the caller says so at most once a minute).
    pub async fn note_enroll_limited(&self, id: u64, detail: serde_json::Value) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            ctx.get::<Machine>(id)?;
            push_event(ctx, id, EventKind::AgentEnrollConflict, detail)
        })
        .await
    }

    /// A machine's agent record, if it ever enrolled.
    pub async fn agent(&self, machine_id: u64) -> Result<Option<AgentRecord>, CmdbError> {
        self.read(move |rtx| super::store::find(&rtx.open_table(super::store::AGENTS)?, machine_id)).await
    }

    /// The operator approves a held machine.
    pub async fn approve_agent(&self, machine_id: u64) -> Result<AgentRecord, CmdbError> {
        self.write(move |ctx| {
            let mut rec = ctx
                .find::<AgentRecord>(machine_id)?
                .ok_or_else(|| CmdbError::NotFound(format!("no agent has enrolled for machine {machine_id}")))?;
            if let Some(pending) = rec.pending_sha256.take() {
                rec.secret_sha256 = pending;
            }
            rec.approved = true;
            // The operator's approval admits the MACs the enrollment brought, where no machine
            // has taken them meanwhile.
            let mut attached = Vec::new();
            if !rec.pending_macs.is_empty() {
                let mut m: Machine = ctx.get(machine_id)?;
                for mac in std::mem::take(&mut rec.pending_macs) {
                    if m.macs.len() >= MAX_MACHINE_MACS {
                        break;
                    }
                    if ctx.t.macs.get(mac.to_u64())?.is_none() && !m.macs.contains(&mac) {
                        m.macs.push(mac);
                        attached.push(mac);
                    }
                }
                if !attached.is_empty() {
                    m.updated_at = now_secs();
                    ctx.put(&m)?;
                }
            }
            ctx.put(&rec)?;
            push_event(ctx, machine_id, EventKind::AgentApproved, json!({"macs_attached": attached}))?;
            Ok(rec)
        })
        .await
    }

    /// Stores the reported hardware on the machine; a `discovered` machine becomes `ready`, and
    /// vendor, model and serial are filled from DMI where the operator left them empty.
    /// The machine is then placed by its LLDP neighbours (see `racks`); a rack it is in gets
    /// its flags checked.
    pub async fn put_inventory(&self, machine_id: u64, inv: Inventory) -> Result<(), CmdbError> {
        let cache = self.inner.racks.clone();
        let rack = self.write(move |ctx| {
            let mut m: Machine = ctx.get(machine_id)?;
            m.vendor = m.vendor.take().or_else(|| inv.dmi.vendor.clone());
            m.model = m.model.take().or_else(|| inv.dmi.model.clone());
            m.serial = m.serial.take().or_else(|| inv.dmi.serial.clone());
            if m.state == MachineState::Discovered {
                m.state = MachineState::Ready;
            }
            let summary = json!({
                "cpu": inv.cpu.model, "threads": inv.cpu.threads, "memory_bytes": inv.memory_bytes,
                "disks": inv.disks.iter().map(|d| json!({"name": d.name, "size_bytes": d.size_bytes})).collect::<Vec<_>>(),
                "nics": inv.nics.len(), "bmc": inv.bmc.as_ref().and_then(|b| b.ip.clone()), "lldp": inv.lldp.len(),
            });
            let bmc = inv.bmc.clone().filter(|b| b.ip.is_some() || b.mac.is_some());
            m.inventory = Some(inv);
            m.updated_at = now_secs();
            ctx.put(&m)?;
            push_event(ctx, machine_id, EventKind::AgentInventory, summary)?;
            if let Some(b) = bmc {
                // A BMC set to DHCP may hold a lease here: matched to its machine by its MAC.
                let lease = match b.mac.as_deref().and_then(|m| m.parse::<Mac>().ok()) {
                    Some(mac) => lease_of(ctx, mac)?,
                    None => None,
                };
                push_event(ctx, machine_id, EventKind::BmcFound, json!({"ip": b.ip, "mac": b.mac, "lease": lease}))?;
            }
            super::racks::place_machine(ctx, &super::racks::cached(&cache), machine_id)
        })
        .await?;
        if let Some(rack) = rack {
            // The placement changed: records the events of flags it raised (mis-cabling, a
            // shared slot).
            if let Err(error) = self.rack_view(rack).await {
                tracing::warn!(machine = machine_id, %error, "rack flags not checked");
            }
        }
        Ok(())
    }

    /// Records an agent's periodic stats without waiting.
    pub fn put_stats(&self, machine_id: u64, stats: Stats) {
        self.write_detached(move |ctx| {
            let Some(mut rec) = ctx.find::<AgentRecord>(machine_id)? else { return Ok(()) };
            rec.stats = Some(stats);
            rec.stats_at = Some(now_secs());
            ctx.put(&rec)
        });
    }
}

/// The enrollment's boot MAC and its other MACs (deduplicated), checked before the write.
fn enroll_macs(req: &EnrollRequest) -> Result<(Option<Mac>, Vec<Mac>), CmdbError> {
    if req.macs.len() > MAX_ENROLL_MACS {
        return Err(CmdbError::Invalid(format!("at most {MAX_ENROLL_MACS} MACs per enrollment")));
    }
    let parse = |m: &str| m.parse::<Mac>().map_err(|e| CmdbError::Invalid(e.to_string()));
    let mut macs: Vec<Mac> = Vec::new();
    for m in &req.macs {
        let mac = parse(m)?;
        if !macs.contains(&mac) {
            macs.push(mac);
        }
    }
    let boot_mac = req.boot_mac.as_deref().map(parse).transpose()?;
    if macs.is_empty() && boot_mac.is_none() {
        return Err(CmdbError::Invalid("enrollment needs at least one valid MAC".into()));
    }
    Ok((boot_mac, macs))
}

/// The address of a live lease `mac` holds, if any (a scan of the lease table: inventories are
/// rare, and only those with a BMC MAC ask).
fn lease_of(ctx: &mut super::store::WriteCtx<'_>, mac: Mac) -> Result<Option<std::net::Ipv4Addr>, CmdbError> {
    let now = now_secs();
    for row in ctx.t.leases.iter()? {
        let lease: super::model::Lease = super::store::decode(row?.1.value())?;
        if lease.mac == mac && lease.state == super::model::LeaseState::Active && lease.expires_at > now {
            return Ok(Some(lease.ip));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests;
