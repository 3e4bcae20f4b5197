//! The per-machine job queue on the CMDB handle: submit, claim, output, finish, cancel, lease
//! expiry, and job output. The job's own state machine is `rackboot_model::jobs`; this is its storage.

use rackboot_agent::wire::{JobResult, OutputChunk, Stream};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::events::{push_event, EventKind};
use super::model::Machine;
use super::store::WriteCtx;
use super::store::{decode, encode, ACTIVE_JOBS, JOBS, JOB_OUTPUT, KEY_NEXT_JOB, MACHINES, MACHINE_JOBS, META};
use super::{now_ms, Cmdb, CmdbError};
use rackboot_model::jobs::{Job, JobState, NewJob};

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
    /// Only jobs of machines now in these pools (a pool-scoped caller's).
    pub pools: Option<Vec<String>>,
}

/// Output kept per job (every attempt's together); beyond it nothing is stored.
pub const MAX_OUTPUT_BYTES: u64 = 16 << 20;

fn output_key(attempt: u32, seq: u32) -> u64 {
    (u64::from(attempt) << 32) | u64::from(seq)
}

impl Cmdb {
    /// Queues one job per machine; all machines must exist.
    pub async fn submit_jobs(&self, machine_ids: Vec<u64>, new: NewJob) -> Result<Vec<Job>, CmdbError> {
        self.write(move |ctx| {
            for id in &machine_ids {
                ctx.get::<Machine>(*id)?;
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
            let any = range.next().is_some();
            Ok(any)
        })
        .await
    }

    /// Hands the machine's oldest queued job to its agent (expiring leases first). Also
    /// returns the jobs the expiry finished (timed out, attempts used up), for their followers.
    pub async fn claim_job(&self, machine_id: u64, lease_ms: u64) -> Result<(Option<Job>, Vec<Job>), CmdbError> {
        self.write(move |ctx| {
            let now = now_ms();
            // Every job is read before any is written: an unreadable one fails the claim whole.
            let jobs: Vec<Job> =
                active_job_ids(ctx, machine_id)?.into_iter().map(|id| ctx.get(id)).collect::<Result<_, _>>()?;
            let mut finished = Vec::new();
            for mut job in jobs {
                if job.expire(now, lease_ms) {
                    let kind =
                        if job.state.is_terminal() { EventKind::JobFinished } else { EventKind::JobLeaseExpired };
                    save_job(ctx, &job, kind)?;
                    if job.state.is_terminal() {
                        finished.push(job.clone());
                    }
                }
                if job.claim(now, lease_ms) {
                    save_job(ctx, &job, EventKind::JobStarted)?;
                    return Ok((Some(job), finished));
                }
            }
            Ok((None, finished))
        })
        .await
    }

    /// Stores a chunk of output (or a heartbeat) from the machine's agent and extends the job's
    /// lease. Returns the job, whether the agent should stop it, and the chunk as stored (cut at
    /// the cap; none: not stored): a chunk sent again keeps what was stored first, output of a finished job is not
    /// stored, and a job's output stops at [`MAX_OUTPUT_BYTES`] (the chunk that reaches it is
    /// cut there, and `job.output_capped` goes on the timeline once).
    pub async fn job_output(
        &self,
        machine_id: u64,
        job_id: u64,
        chunk: OutputChunk,
        lease_ms: u64,
    ) -> Result<(Job, bool, Option<StoredChunk>), CmdbError> {
        self.write(move |ctx| {
            let now = now_ms();
            let mut job = machine_job(ctx, machine_id, job_id)?;
            let before = job.clone();
            let stop = job.heard_from(chunk.attempt, now, lease_ms);
            let room = MAX_OUTPUT_BYTES.saturating_sub(job.output_bytes);
            let mut stored = None;
            if !chunk.data.is_empty() && !before.state.is_terminal() && room > 0 {
                let mut data = chunk.data;
                let capped = data.len() as u64 >= room;
                if capped {
                    let mut end = room as usize;
                    while !data.is_char_boundary(end) {
                        end -= 1;
                    }
                    data.truncate(end);
                }
                let len = data.len() as u64;
                let piece =
                    StoredChunk { attempt: chunk.attempt, seq: chunk.seq, stream: chunk.stream, data, at_ms: now };
                if put_chunk(ctx, job_id, &piece)? {
                    stored = Some(piece);
                    job.output_bytes += len;
                    if capped {
                        // Nothing more will be stored: the cap counts as reached.
                        job.output_bytes = MAX_OUTPUT_BYTES;
                        push_event(
                            ctx,
                            machine_id,
                            EventKind::JobOutputCapped,
                            json!({"job": job_id, "stored_bytes": job.output_bytes}),
                        )?;
                    }
                }
            }
            if job != before {
                ctx.put(&job)?;
            }
            Ok((job, stop, stored))
        })
        .await
    }

    /// Records a job's result from the machine's agent. Returns the job and whether this result
    /// was the one that finished it (false: it was already finished; nothing changed).
    pub async fn finish_job(&self, machine_id: u64, job_id: u64, r: JobResult) -> Result<(Job, bool), CmdbError> {
        self.write(move |ctx| {
            let mut job = machine_job(ctx, machine_id, job_id)?;
            let won = job.finish(&r, now_ms());
            if won {
                save_job(ctx, &job, EventKind::JobFinished)?;
                if let Some(detail) = rackboot_model::plugins::refs::result_event(&job, &r) {
                    push_event(ctx, machine_id, EventKind::PluginResult, detail)?;
                }
            }
            Ok((job, won))
        })
        .await
    }

    /// The operator cancels a job.
    pub async fn cancel_job(&self, job_id: u64) -> Result<Job, CmdbError> {
        self.write(move |ctx| {
            let mut job: Job = ctx.get(job_id)?;
            job.cancel(now_ms()).map_err(CmdbError::Conflict)?;
            save_job(ctx, &job, EventKind::JobFinished)?;
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
                let mut job: Job = match ctx.get(id) {
                    Ok(j) => j,
                    Err(error) => {
                        tracing::warn!(job = id, %error, "skipping an unreadable job");
                        continue;
                    }
                };
                if job.expire(now, lease_ms) {
                    let kind =
                        if job.state.is_terminal() { EventKind::JobFinished } else { EventKind::JobLeaseExpired };
                    save_job(ctx, &job, kind)?;
                    changed.push(job);
                }
            }
            Ok(changed)
        })
        .await
    }

    pub async fn job(&self, job_id: u64) -> Result<Job, CmdbError> {
        self.read(move |rtx| super::store::get(&rtx.open_table(JOBS)?, job_id)).await
    }

    /// Jobs, newest first.
    pub async fn jobs(&self, f: JobFilter) -> Result<(Vec<Job>, Option<u64>), CmdbError> {
        let limit = f.limit.unwrap_or(100).min(10_000);
        let before = f.before.unwrap_or(u64::MAX);
        let allowed = f.pools.as_deref().map(|p| self.machines_in(p));
        self.read(move |rtx| {
            let jobs = rtx.open_table(JOBS)?;
            let machine_jobs = rtx.open_table(MACHINE_JOBS)?;
            let ids: Box<dyn Iterator<Item = Result<u64, CmdbError>>> = match f.machine {
                Some(m) => {
                    Box::new(machine_jobs.range((m, 0)..(m, before))?.rev().map(|r| r.map(|(k, _)| k.value().1)))
                }
                None => Box::new(jobs.range(..before)?.rev().map(|r| r.map(|(k, _)| k.value()))),
            };
            let (mut out, mut next) = (Vec::new(), None);
            for id in ids {
                let id = id?;
                let Some(v) = jobs.get(id)? else { continue };
                let job: Job = decode(v.value())?;
                if f.state.is_some_and(|s| s != job.state)
                    || allowed.as_ref().is_some_and(|a| !a.contains(&job.machine_id))
                {
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
        self.read(|rtx| rtx.open_table(ACTIVE_JOBS)?.len()).await
    }

    /// Machines carrying `tag` (where a job submitted by tag goes).
    pub async fn machines_with_tag(&self, tag: String) -> Result<Vec<u64>, CmdbError> {
        self.read(move |rtx| {
            let all: Vec<Machine> = super::store::scan(&rtx.open_table(MACHINES)?)?;
            Ok(all.into_iter().filter(|m| m.tags.contains(&tag)).map(|m| m.id).collect())
        })
        .await
    }
}

/// Queues one job in the caller's batch (the machine must exist).
pub(super) fn insert_job(ctx: &mut WriteCtx<'_>, machine_id: u64, new: NewJob) -> Result<Job, CmdbError> {
    // Job ids only go up, also past jobs deleted with their machine (files written before the
    // counter existed start after their newest job).
    let newest = ctx.t.tx.open_table(JOBS)?.last()?.map_or(0, |(k, _)| k.value());
    let mut meta = ctx.t.tx.open_table(META)?;
    let id = meta.get(KEY_NEXT_JOB)?.map_or(1, |v| v.value()).max(newest + 1);
    meta.insert(KEY_NEXT_JOB, id + 1)?;
    drop(meta);
    let job = Job::new(id, machine_id, new, now_ms());
    ctx.put(&job)?;
    ctx.t.tx.open_table(MACHINE_JOBS)?.insert((machine_id, job.id), ())?;
    ctx.t.tx.open_table(ACTIVE_JOBS)?.insert((machine_id, job.id), ())?;
    push_event(ctx, machine_id, EventKind::JobQueued, json!({"job": job.id, "action": job.action}))?;
    Ok(job)
}

/// Cancels a job in the caller's batch; `None` when it had finished already.
pub(super) fn cancel_job_in(ctx: &mut WriteCtx<'_>, job: Option<Job>) -> Result<Option<Job>, CmdbError> {
    let Some(mut job) = job else { return Ok(None) };
    if job.cancel(now_ms()).is_err() {
        return Ok(None);
    }
    save_job(ctx, &job, EventKind::JobFinished)?;
    Ok(Some(job))
}

/// The machine's unfinished jobs, oldest first.
pub(super) fn active_job_ids(ctx: &WriteCtx<'_>, machine_id: u64) -> Result<Vec<u64>, CmdbError> {
    let active = ctx.t.tx.open_table(ACTIVE_JOBS)?;
    let ids = active
        .range((machine_id, 0)..=(machine_id, u64::MAX))?
        .map(|r| r.map(|(k, _)| k.value().1))
        .collect::<Result<_, _>>()?;
    Ok(ids)
}

/// A job of `machine_id`; another machine's job is `NotFound` to it.
fn machine_job(ctx: &WriteCtx<'_>, machine_id: u64, job_id: u64) -> Result<Job, CmdbError> {
    match ctx.find::<Job>(job_id)? {
        Some(job) if job.machine_id == machine_id => Ok(job),
        _ => Err(CmdbError::NotFound(format!("job {job_id}"))),
    }
}

/// Stores a chunk of output unless one with its (attempt, seq) is stored already (a re-sent
/// chunk keeps the first, so sending a key again cannot grow a job past its cap); whether it was.
fn put_chunk(ctx: &mut WriteCtx<'_>, job_id: u64, c: &StoredChunk) -> Result<bool, CmdbError> {
    let mut out = ctx.t.tx.open_table(JOB_OUTPUT)?;
    let key = (job_id, output_key(c.attempt, c.seq));
    if out.get(key)?.is_some() {
        return Ok(false);
    }
    out.insert(key, encode(c).as_slice())?;
    Ok(true)
}

/// Stores a changed job, keeps the active set in step, and puts `kind` on the timeline.
fn save_job(ctx: &mut WriteCtx<'_>, job: &Job, kind: EventKind) -> Result<(), CmdbError> {
    ctx.put(job)?;
    if job.state.is_terminal() {
        ctx.t.tx.open_table(ACTIVE_JOBS)?.remove((job.machine_id, job.id))?;
    }
    let detail = json!({
        "job": job.id, "state": job.state, "attempt": job.attempt, "exit_code": job.exit_code,
        "duration_ms": job.duration_ms, "error": job.error,
    });
    push_event(ctx, job.machine_id, kind, detail)
}

#[cfg(test)]
mod tests;
