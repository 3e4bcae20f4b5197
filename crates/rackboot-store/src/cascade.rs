//! The one delete cascade: a machine and every row that hangs off it, in the caller's batch.
//!
//! | table | what goes |
//! |---|---|
//! | `machines`, `macs` | the machine and its MAC rows (its reservation and hostname with it, via the index) |
//! | `events`, `event_log` | its timeline |
//! | `agents` | its agent record (the credential dies with the machine) |
//! | `bmcs` | its BMC (address, user, sealed password) |
//! | `jobs`, `machine_jobs`, `active_jobs`, `job_output` | every job it ever had, and their output |
//! | `runs`, `active_runs` | its unfinished run fails ("the machine was deleted") and leaves the active set; the run row stays, as its task's history |
//! | `leases` | lease rows of its MACs that are over (released or expired); a lease still in force stays, because the client still holds the address and the DHCP server must not hand it out again |

use super::index::Delta;
use super::model::{Lease, LeaseState, Machine};
use super::store::WriteCtx;
use super::store::{scan, ACTIVE_JOBS, ACTIVE_RUNS, AGENTS, JOBS, JOB_OUTPUT, MACHINE_JOBS, MACHINE_RUNS, RUNS};
use super::{now_ms, now_secs, CmdbError};
use rackboot_model::provision::{Run, RunState};

/// Deletes machine `id` and everything that hangs off it. Everything is read first, so a
/// missing machine or an unreadable row fails the delete before anything is written.
pub(super) fn delete_machine_rows(ctx: &mut WriteCtx<'_>, id: u64) -> Result<(), CmdbError> {
    let m: Machine = ctx.get(id)?;
    let jobs: Vec<u64> = {
        let t = ctx.t.tx.open_table(MACHINE_JOBS)?;
        let mut ids: Vec<u64> =
            t.range((id, 0)..=(id, u64::MAX))?.map(|r| r.map(|(k, _)| k.value().1)).collect::<Result<_, _>>()?;
        // An active job missing from the history (it cannot be, but then it still goes).
        ids.extend(super::jobs::active_job_ids(ctx, id)?);
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    let runs: Vec<Run> = {
        let active = ctx.t.tx.open_table(ACTIVE_RUNS)?;
        let ids: Vec<u64> = active.iter()?.map(|r| r.map(|(k, _)| k.value())).collect::<Result<_, _>>()?;
        super::store::find_all::<Run>(&ctx.t.tx.open_table(RUNS)?, ids)?
            .into_iter()
            .filter(|r| r.machine_id == Some(id))
            .collect()
    };
    let now = now_secs();
    let mut ended_leases = Vec::new();
    for lease in scan::<u32, Lease>(&ctx.t.leases)? {
        let in_force = lease.state != LeaseState::Released && lease.expires_at > now;
        if m.macs.contains(&lease.mac) && !in_force {
            ended_leases.push(lease.ip);
        }
    }

    super::userdata::remove_in(ctx, &super::userdata::Owner::Machine(id))?;
    for mac in &m.macs {
        ctx.t.macs.remove(mac.to_u64())?;
    }
    ctx.t.machines.remove(id)?;
    ctx.delta.push(Delta::Remove(id));
    super::events::drop_events(ctx, id, u64::MAX)?;
    ctx.t.tx.open_table(AGENTS)?.remove(id)?;
    ctx.t.tx.open_table(super::store::BMCS)?.remove(id)?;
    {
        let mut t = ctx.t.tx.open_table(JOBS)?;
        let mut output = ctx.t.tx.open_table(JOB_OUTPUT)?;
        for job in &jobs {
            t.remove(*job)?;
            output.retain_in((*job, 0)..=(*job, u64::MAX), |_, _| false)?;
        }
    }
    ctx.t.tx.open_table(MACHINE_JOBS)?.retain_in((id, 0)..=(id, u64::MAX), |_, _| false)?;
    ctx.t.tx.open_table(ACTIVE_JOBS)?.retain_in((id, 0)..=(id, u64::MAX), |_, _| false)?;
    ctx.t.tx.open_table(MACHINE_RUNS)?.retain_in((id, 0)..=(id, u64::MAX), |_, _| false)?;
    for mut run in runs {
        // No retries: the run fails (as the engine would fail it on its next pass).
        run.step_failed("the machine was deleted".into(), 0, now_ms());
        debug_assert_eq!(run.state, RunState::Failed);
        run.job = None;
        run.rev += 1;
        ctx.put(&run)?;
        ctx.t.tx.open_table(ACTIVE_RUNS)?.remove(run.id)?;
    }
    for ip in ended_leases {
        ctx.t.leases.remove(u32::from(ip))?;
        ctx.delta.push(Delta::Lease(ip, None));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
