//! Agents and their jobs on the CMDB handle: enrollment, inventory, stats, the per-machine job
//! queue (claim, output, result, cancel, lease expiry) and job output.

use std::net::IpAddr;

use rackboot_agent::wire::{EnrollRequest, Inventory, JobResult, OutputChunk, Stats, Stream};
use redb::{ReadableTable, ReadableTableMetadata};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::events::push_event;
use super::machines::{get_machine, put_machine, take_id};
use super::model::{AgentRecord, Machine, MachineState};
use super::store::{decode, encode, ACTIVE_JOBS, AGENTS, JOBS, JOB_OUTPUT, MACHINES, MACHINE_JOBS};
use super::writer::WriteCtx;
use super::{now_ms, now_secs, Cmdb, CmdbError};
use crate::jobs::{Job, JobState, NewJob};
use crate::mac::Mac;

/// One stored piece of job output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StoredChunk {
    pub attempt: u32,
    pub seq: u32,
    pub stream: Stream,
    pub data: String,
    pub at_ms: u64,
}

/// Filters for listing jobs.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct JobFilter {
    pub machine: Option<u64>,
    pub state: Option<JobState>,
    /// Only jobs with an id below this (newest first; the page cursor).
    pub before: Option<u64>,
    pub limit: Option<usize>,
}

/// What an enrollment decided.
#[derive(Debug, Clone)]
pub struct Enrolled {
    pub machine_id: u64,
    pub approved: bool,
    pub created: bool,
}

/// MACs one enrollment may carry (a big server has a dozen NICs).
const MAX_ENROLL_MACS: usize = 64;
/// Output kept per job; beyond it chunks are counted but not stored.
pub const MAX_OUTPUT_BYTES: u64 = 16 << 20;

fn output_key(attempt: u32, seq: u32) -> u64 {
    (u64::from(attempt) << 32) | u64::from(seq)
}

impl Cmdb {
    /// Matches the enrolling node to a machine (boot MAC first, then any of its MACs; a new
    /// machine when none is known), records any MACs the machine did not have yet, and stores
    /// the new credential's hash. `accept` (policy said yes, or the node proved it holds the
    /// machine's current credential) makes it the machine's credential at once. Otherwise a
    /// machine with an approved credential keeps it and the new one waits for the operator; a
    /// machine without one gets the new credential, unapproved.
    pub async fn enroll_agent(
        &self,
        req: EnrollRequest,
        secret_sha256: String,
        accept: impl Fn(u64) -> bool + Send + 'static,
        from: Option<IpAddr>,
    ) -> Result<Enrolled, CmdbError> {
        if req.macs.len() > MAX_ENROLL_MACS {
            return Err(CmdbError::Invalid(format!("at most {MAX_ENROLL_MACS} MACs per enrollment")));
        }
        let mut macs: Vec<Mac> = Vec::new();
        for m in &req.macs {
            let mac: Mac = m.parse().map_err(|e: crate::mac::ParseMacError| CmdbError::Invalid(e.to_string()))?;
            if !macs.contains(&mac) {
                macs.push(mac);
            }
        }
        let boot_mac: Option<Mac> = match req.boot_mac.as_deref() {
            Some(m) => Some(m.parse().map_err(|e: crate::mac::ParseMacError| CmdbError::Invalid(e.to_string()))?),
            None => None,
        };
        if macs.is_empty() && boot_mac.is_none() {
            return Err(CmdbError::Invalid("enrollment needs at least one valid MAC".into()));
        }
        self.write(move |ctx| {
            let mut found = None;
            for mac in boot_mac.iter().chain(macs.iter()) {
                if let Some(id) = ctx.t.macs.get(mac.to_u64())?.map(|v| v.value()) {
                    found = Some(id);
                    break;
                }
            }
            let now = now_secs();
            let created = found.is_none();
            let mut m = match found {
                Some(id) => get_machine(&ctx.t.machines, id)?,
                None => {
                    let first = boot_mac.or(macs.first().copied()).expect("checked above");
                    Machine::new(take_id(ctx), vec![first], now)
                }
            };
            for mac in boot_mac.iter().chain(macs.iter()) {
                let owner = ctx.t.macs.get(mac.to_u64())?.map(|v| v.value());
                if owner.is_none() && !m.macs.contains(mac) {
                    m.macs.push(*mac);
                }
            }
            if m.serial.is_none() {
                m.serial = req.serial.clone().filter(|s| !s.trim().is_empty());
            }
            m.last_seen_at = Some(now);
            m.updated_at = now;
            put_machine(ctx, &m)?;
            let mut agents = ctx.t.tx.open_table(AGENTS)?;
            let old: Option<AgentRecord> = match agents.get(m.id)? {
                Some(v) => Some(decode(v.value())?),
                None => None,
            };
            let accepted = accept(m.id);
            let mut rec = AgentRecord {
                v: 1,
                machine_id: m.id,
                secret_sha256: secret_sha256.clone(),
                pending_sha256: None,
                mode: req.mode,
                approved: accepted,
                enrolled_at: now,
                enrolled_from: from.map(|ip| ip.to_string()),
                boot_mac,
                system_uuid: req.system_uuid.clone(),
                version: req.version.clone(),
                stats: None,
                stats_at: None,
            };
            if let (false, Some(old)) = (accepted, old) {
                if old.approved {
                    rec = AgentRecord { pending_sha256: Some(secret_sha256), ..old };
                }
            }
            agents.insert(m.id, encode(&rec).as_slice())?;
            drop(agents);
            if created {
                push_event(ctx, m.id, "machine.discovered", json!({"by": "agent", "macs": m.macs}))?;
            }
            let detail = json!({"mode": req.mode, "boot_mac": boot_mac, "approved": accepted, "from": from.map(|ip| ip.to_string()), "version": req.version});
            push_event(ctx, m.id, "agent.enrolled", detail)?;
            Ok(Enrolled { machine_id: m.id, approved: accepted, created })
        })
        .await
    }

    /// A machine's agent record, if it ever enrolled.
    pub async fn agent(&self, machine_id: u64) -> Result<Option<AgentRecord>, CmdbError> {
        self.read(move |rtx| match rtx.open_table(AGENTS)?.get(machine_id)? {
            Some(v) => Ok(Some(decode(v.value())?)),
            None => Ok(None),
        })
        .await
    }

    /// The operator approves a held machine.
    pub async fn approve_agent(&self, machine_id: u64) -> Result<AgentRecord, CmdbError> {
        self.write(move |ctx| {
            let mut agents = ctx.t.tx.open_table(AGENTS)?;
            let mut rec: AgentRecord = match agents.get(machine_id)? {
                Some(v) => decode(v.value())?,
                None => return Err(CmdbError::NotFound(format!("no agent has enrolled for machine {machine_id}"))),
            };
            if let Some(pending) = rec.pending_sha256.take() {
                rec.secret_sha256 = pending;
            }
            rec.approved = true;
            agents.insert(machine_id, encode(&rec).as_slice())?;
            drop(agents);
            push_event(ctx, machine_id, "agent.approved", json!({}))?;
            Ok(rec)
        })
        .await
    }

    /// Stores the reported hardware on the machine; a `discovered` machine becomes `ready`, and
    /// vendor, model and serial are filled from DMI where the operator left them empty.
    pub async fn put_inventory(&self, machine_id: u64, inv: Inventory) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            let mut m = get_machine(&ctx.t.machines, machine_id)?;
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
            m.inventory = Some(inv);
            m.updated_at = now_secs();
            put_machine(ctx, &m)?;
            push_event(ctx, machine_id, "agent.inventory", summary)
        })
        .await
    }

    /// Records an agent's periodic stats without waiting.
    pub fn put_stats(&self, machine_id: u64, stats: Stats) {
        self.write_detached(move |ctx| {
            let mut agents = ctx.t.tx.open_table(AGENTS)?;
            let Some(v) = agents.get(machine_id)? else { return Ok(()) };
            let mut rec: AgentRecord = decode(v.value())?;
            drop(v);
            rec.stats = Some(stats);
            rec.stats_at = Some(now_secs());
            agents.insert(machine_id, encode(&rec).as_slice())?;
            Ok(())
        });
    }

    /// Queues one job per machine; all machines must exist.
    pub async fn submit_jobs(&self, machine_ids: Vec<u64>, new: NewJob) -> Result<Vec<Job>, CmdbError> {
        self.write(move |ctx| {
            for id in &machine_ids {
                if ctx.t.machines.get(*id)?.is_none() {
                    return Err(CmdbError::NotFound(format!("machine {id}")));
                }
            }
            let mut out = Vec::new();
            for id in machine_ids {
                out.push(insert_job(ctx, id, new.clone())?);
            }
            Ok(out)
        })
        .await
    }

    /// Whether the machine has any job not yet finished (a cheap read before a claim).
    pub async fn has_active_jobs(&self, machine_id: u64) -> Result<bool, CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(ACTIVE_JOBS)?;
            let mut range = t.range((machine_id, 0)..=(machine_id, u64::MAX))?;
            Ok(range.next().is_some())
        })
        .await
    }

    /// Hands the machine's oldest queued job to its agent (expiring leases first). Also
    /// returns the jobs the expiry finished (timed out, attempts used up), for their followers.
    pub async fn claim_job(&self, machine_id: u64, lease_ms: u64) -> Result<(Option<Job>, Vec<Job>), CmdbError> {
        self.write(move |ctx| {
            let now = now_ms();
            let ids = active_job_ids(ctx, machine_id)?;
            let mut finished = Vec::new();
            for id in ids {
                let mut job = load_job(ctx, id)?;
                if job.expire(now, lease_ms) {
                    let kind = if job.state.is_terminal() { "job.finished" } else { "job.lease_expired" };
                    save_job(ctx, &job, kind)?;
                    if job.state.is_terminal() {
                        finished.push(job.clone());
                    }
                }
                if job.claim(now, lease_ms) {
                    save_job(ctx, &job, "job.started")?;
                    return Ok((Some(job), finished));
                }
            }
            Ok((None, finished))
        })
        .await
    }

    /// Stores a chunk of output (or a heartbeat) from the machine's agent and extends the job's
    /// lease. Returns the job and whether the agent should stop it.
    pub async fn job_output(
        &self,
        machine_id: u64,
        job_id: u64,
        chunk: OutputChunk,
        lease_ms: u64,
    ) -> Result<(Job, bool), CmdbError> {
        self.write(move |ctx| {
            let now = now_ms();
            let mut job = load_job(ctx, job_id)?;
            if job.machine_id != machine_id {
                return Err(CmdbError::NotFound(format!("job {job_id}")));
            }
            let before = job.clone();
            let stop = job.heard_from(chunk.attempt, now, lease_ms);
            if !chunk.data.is_empty() && job.output_bytes < MAX_OUTPUT_BYTES {
                let key = output_key(chunk.attempt, chunk.seq);
                let mut out = ctx.t.tx.open_table(JOB_OUTPUT)?;
                let stored = StoredChunk {
                    attempt: chunk.attempt,
                    seq: chunk.seq,
                    stream: chunk.stream,
                    data: chunk.data,
                    at_ms: now,
                };
                let dup = out.insert((job_id, key), encode(&stored).as_slice())?.is_some();
                if !dup {
                    job.output_bytes += stored.data.len() as u64;
                }
            }
            if job != before {
                let mut jobs = ctx.t.tx.open_table(JOBS)?;
                jobs.insert(job.id, encode(&job).as_slice())?;
            }
            Ok((job, stop))
        })
        .await
    }

    /// Records a job's result from the machine's agent. Returns the job and whether this result
    /// was the one that finished it (false: it was already finished; nothing changed).
    pub async fn finish_job(&self, machine_id: u64, job_id: u64, r: JobResult) -> Result<(Job, bool), CmdbError> {
        self.write(move |ctx| {
            let mut job = load_job(ctx, job_id)?;
            if job.machine_id != machine_id {
                return Err(CmdbError::NotFound(format!("job {job_id}")));
            }
            let won = job.finish(&r, now_ms());
            if won {
                save_job(ctx, &job, "job.finished")?;
            }
            Ok((job, won))
        })
        .await
    }

    /// The operator cancels a job.
    pub async fn cancel_job(&self, job_id: u64) -> Result<Job, CmdbError> {
        self.write(move |ctx| {
            let mut job = load_job(ctx, job_id)?;
            job.cancel(now_ms()).map_err(CmdbError::Conflict)?;
            save_job(ctx, &job, "job.finished")?;
            Ok(job)
        })
        .await
    }

    /// Applies lease expiry and timeouts to every unfinished job; returns the jobs that changed.
    pub async fn expire_jobs(&self, lease_ms: u64) -> Result<Vec<Job>, CmdbError> {
        self.write(move |ctx| {
            let now = now_ms();
            let ids: Vec<u64> = {
                let active = ctx.t.tx.open_table(ACTIVE_JOBS)?;
                let ids = active.iter()?.map(|r| r.map(|(k, _)| k.value().1)).collect::<Result<_, _>>()?;
                ids
            };
            let mut changed = Vec::new();
            for id in ids {
                // One unreadable row must not stop every other job's expiry.
                let mut job = match load_job(ctx, id) {
                    Ok(j) => j,
                    Err(error) => {
                        tracing::warn!(job = id, %error, "skipping an unreadable job");
                        continue;
                    }
                };
                if job.expire(now, lease_ms) {
                    let kind = if job.state.is_terminal() { "job.finished" } else { "job.lease_expired" };
                    save_job(ctx, &job, kind)?;
                    changed.push(job);
                }
            }
            Ok(changed)
        })
        .await
    }

    pub async fn job(&self, job_id: u64) -> Result<Job, CmdbError> {
        self.read(move |rtx| match rtx.open_table(JOBS)?.get(job_id)? {
            Some(v) => decode(v.value()),
            None => Err(CmdbError::NotFound(format!("job {job_id}"))),
        })
        .await
    }

    /// Jobs, newest first.
    pub async fn jobs(&self, f: JobFilter) -> Result<(Vec<Job>, Option<u64>), CmdbError> {
        let limit = f.limit.unwrap_or(100).min(10_000);
        let before = f.before.unwrap_or(u64::MAX);
        self.read(move |rtx| {
            let jobs = rtx.open_table(JOBS)?;
            let ids: Box<dyn Iterator<Item = Result<u64, redb::StorageError>>> = match f.machine {
                Some(m) => Box::new(
                    rtx.open_table(MACHINE_JOBS)?
                        .range((m, 0)..(m, before))?
                        .rev()
                        .map(|r| r.map(|(k, _)| k.value().1)),
                ),
                None => Box::new(jobs.range(..before)?.rev().map(|r| r.map(|(k, _)| k.value()))),
            };
            let (mut out, mut next) = (Vec::new(), None);
            for id in ids {
                let id = id?;
                let Some(v) = jobs.get(id)? else { continue };
                let job: Job = decode(v.value())?;
                if f.state.is_some_and(|s| s != job.state) {
                    continue;
                }
                if out.len() >= limit {
                    next = out.last().map(|j: &Job| j.id);
                    break;
                }
                out.push(job);
            }
            Ok((out, next))
        })
        .await
    }

    /// A job's stored output in order (attempt, then chunk).
    pub async fn output(&self, job_id: u64) -> Result<Vec<StoredChunk>, CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(JOB_OUTPUT)?;
            let mut out = Vec::new();
            for row in t.range((job_id, 0)..=(job_id, u64::MAX))? {
                out.push(decode(row?.1.value())?);
            }
            Ok(out)
        })
        .await
    }

    /// The newest `n` chunks of a job's output, oldest first (what a progress check needs,
    /// without reading the whole output).
    pub async fn last_output(&self, job_id: u64, n: usize) -> Result<Vec<StoredChunk>, CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(JOB_OUTPUT)?;
            let mut out = Vec::new();
            for row in t.range((job_id, 0)..=(job_id, u64::MAX))?.rev().take(n) {
                out.push(decode(row?.1.value())?);
            }
            out.reverse();
            Ok(out)
        })
        .await
    }

    /// Count of unfinished jobs (a gauge for metrics and tests).
    pub async fn active_job_count(&self) -> Result<u64, CmdbError> {
        self.read(|rtx| Ok(rtx.open_table(ACTIVE_JOBS)?.len()?)).await
    }

    /// Machines carrying `tag`.
    pub async fn machines_with_tag(&self, tag: String) -> Result<Vec<u64>, CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(MACHINES)?;
            let mut out = Vec::new();
            for row in t.iter()? {
                let m: Machine = decode(row?.1.value())?;
                if m.tags.contains(&tag) {
                    out.push(m.id);
                }
            }
            Ok(out)
        })
        .await
    }
}

/// Queues one job in the caller's batch (the machine must exist).
pub(super) fn insert_job(ctx: &mut WriteCtx<'_>, machine_id: u64, new: NewJob) -> Result<Job, CmdbError> {
    let mut jobs = ctx.t.tx.open_table(JOBS)?;
    let id = jobs.last()?.map_or(1, |(k, _)| k.value() + 1);
    let job = Job::new(id, machine_id, new, now_ms());
    jobs.insert(job.id, encode(&job).as_slice())?;
    ctx.t.tx.open_table(MACHINE_JOBS)?.insert((machine_id, job.id), ())?;
    ctx.t.tx.open_table(ACTIVE_JOBS)?.insert((machine_id, job.id), ())?;
    drop(jobs);
    push_event(ctx, machine_id, "job.queued", json!({"job": job.id, "action": job.action}))?;
    Ok(job)
}

/// Cancels a job in the caller's batch; `None` when it had finished already.
pub(super) fn cancel_job_in(ctx: &mut WriteCtx<'_>, job_id: u64) -> Result<Option<Job>, CmdbError> {
    let mut job = load_job(ctx, job_id)?;
    if job.cancel(now_ms()).is_err() {
        return Ok(None);
    }
    save_job(ctx, &job, "job.finished")?;
    Ok(Some(job))
}

/// The machine's unfinished jobs, oldest first.
fn active_job_ids(ctx: &mut WriteCtx<'_>, machine_id: u64) -> Result<Vec<u64>, CmdbError> {
    let active = ctx.t.tx.open_table(ACTIVE_JOBS)?;
    let ids = active
        .range((machine_id, 0)..=(machine_id, u64::MAX))?
        .map(|r| r.map(|(k, _)| k.value().1))
        .collect::<Result<_, _>>()?;
    Ok(ids)
}

fn load_job(ctx: &mut WriteCtx<'_>, id: u64) -> Result<Job, CmdbError> {
    let jobs = ctx.t.tx.open_table(JOBS)?;
    let v = jobs.get(id)?.ok_or_else(|| CmdbError::NotFound(format!("job {id}")))?;
    decode(v.value())
}

/// Stores a changed job, keeps the active set in step, and puts `kind` on the timeline.
fn save_job(ctx: &mut WriteCtx<'_>, job: &Job, kind: &str) -> Result<(), CmdbError> {
    ctx.t.tx.open_table(JOBS)?.insert(job.id, encode(job).as_slice())?;
    if job.state.is_terminal() {
        ctx.t.tx.open_table(ACTIVE_JOBS)?.remove((job.machine_id, job.id))?;
    }
    let detail = json!({
        "job": job.id, "state": job.state, "attempt": job.attempt, "exit_code": job.exit_code,
        "duration_ms": job.duration_ms, "error": job.error,
    });
    push_event(ctx, job.machine_id, kind, detail)
}

/// Removes a deleted machine's agent and cancels its unfinished jobs (in the delete's batch).
pub(super) fn forget_machine(ctx: &mut WriteCtx<'_>, machine_id: u64) -> Result<(), CmdbError> {
    ctx.t.tx.open_table(AGENTS)?.remove(machine_id)?;
    let ids = active_job_ids(ctx, machine_id)?;
    let now = now_ms();
    let mut jobs = ctx.t.tx.open_table(JOBS)?;
    let mut active = ctx.t.tx.open_table(ACTIVE_JOBS)?;
    for id in ids {
        let job: Option<Job> = match jobs.get(id)? {
            Some(v) => Some(decode(v.value())?),
            None => None,
        };
        if let Some(mut job) = job {
            if job.cancel(now).is_ok() {
                jobs.insert(id, encode(&job).as_slice())?;
            }
        }
        active.remove((machine_id, id))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rackboot_agent::wire::Action;

    #[tokio::test]
    async fn last_output_is_the_newest_chunks_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let db = Cmdb::open(&dir.path().join("c.redb"), 64).unwrap();
        let m = db
            .create_machine(super::super::NewMachine {
                macs: vec!["52:54:00:00:00:01".parse().unwrap()],
                ..Default::default()
            })
            .await
            .unwrap();
        let new = NewJob { action: Action::RefreshInventory, timeout_secs: 60, max_attempts: 1 };
        let job = db.submit_jobs(vec![m.id], new).await.unwrap().remove(0);
        let (claimed, _) = db.claim_job(m.id, 60_000).await.unwrap();
        assert_eq!(claimed.map(|j| j.id), Some(job.id));
        for seq in 0..5 {
            let chunk = OutputChunk { attempt: 1, seq, stream: Stream::Stdout, data: format!("line {seq}\n") };
            db.job_output(m.id, job.id, chunk, 60_000).await.unwrap();
        }
        let last: Vec<String> = db.last_output(job.id, 2).await.unwrap().into_iter().map(|c| c.data).collect();
        assert_eq!(last, ["line 3\n", "line 4\n"]);
        assert_eq!(db.last_output(job.id, 10).await.unwrap().len(), 5);
        assert!(db.last_output(job.id + 1, 2).await.unwrap().is_empty(), "another job's output is not mixed in");
    }
}
