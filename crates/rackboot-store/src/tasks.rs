//! Creating and cancelling provisioning tasks on the CMDB handle, each in one write: a task and
//! its runs (their machines queued), a task cancelled with every unfinished run and its job, or
//! both at once (a release from rescue ends the rescue and starts the release together).

use serde_json::json;

use super::events::EventKind;
use super::jobs::cancel_job_in;
use super::machines::check_unique;
use super::model::Machine;
use super::provision::{active_runs_in, check_run, store_run, write_run, MachineUpdate, NewRun};
use super::store::WriteCtx;
use super::store::{find_all, RUNS, TASKS};
use super::{now_ms, Cmdb, CmdbError};
use rackboot_model::jobs::Job;
use rackboot_model::provision::{Run, Step, Task, TaskSpec, TaskState};
use std::net::Ipv4Addr;

impl Cmdb {
    /// Creates a task and its runs; the machines named get their hostname, reservation and the
    /// `queued` state. A machine already in an active run is refused.
    pub async fn create_task(&self, mut spec: TaskSpec, runs: Vec<NewRun>) -> Result<(Task, Vec<Run>), CmdbError> {
        // Its user-data is kept apart from the task (`userdata`), in the same write.
        let user_data = spec.user_data.take();
        self.write(move |ctx| create_in(ctx, spec, runs, user_data)).await
    }

    /// Cancels a task: every unfinished run (and the job it is at) in one transaction, then the
    /// task. Machines the run had not installed yet go back to `ready`. Returns the cancelled jobs.
    pub async fn cancel_task(&self, task_id: u64) -> Result<Vec<Job>, CmdbError> {
        self.write(move |ctx| cancel_in(ctx, task_id)).await
    }

    /// Cancels task `cancel` and creates a new one, in one write: a crash leaves either both
    /// done or neither.
    pub async fn replace_task(
        &self,
        cancel: u64,
        mut spec: TaskSpec,
        runs: Vec<NewRun>,
    ) -> Result<(Task, Vec<Run>), CmdbError> {
        let user_data = spec.user_data.take();
        self.write(move |ctx| {
            cancel_in(ctx, cancel)?;
            create_in(ctx, spec, runs, user_data)
        })
        .await
    }
}

fn create_in(
    ctx: &mut WriteCtx<'_>,
    spec: TaskSpec,
    runs: Vec<NewRun>,
    user_data: Option<String>,
) -> Result<(Task, Vec<Run>), CmdbError> {
    let active = active_runs_in(ctx)?;
    let busy: Vec<u64> = active.iter().filter_map(|r| r.machine_id).collect();
    let held_ips: Vec<Ipv4Addr> = active.iter().filter_map(|r| r.ip).collect();
    distinct_runs(&runs)?;
    for r in &runs {
        if let Some(m) = r.machine_id {
            if busy.contains(&m) {
                return Err(CmdbError::Conflict(format!("machine {m} is already being provisioned")));
            }
            let machine: Machine = ctx.get(m)?;
            check_unique(ctx, Some(m), &machine.macs, r.hostname.as_deref(), r.ip)?;
        } else if let Some(h) = r.hostname.as_deref() {
            if ctx.index.by_hostname(h).is_some() {
                return Err(CmdbError::Conflict(format!("hostname {h} belongs to another machine")));
            }
        }
        if let Some(ip) = r.ip {
            if held_ips.contains(&ip) || (r.machine_id.is_none() && ctx.index.reserved_owner(ip).is_some()) {
                return Err(CmdbError::Conflict(format!("{ip} is held by another machine or run")));
            }
        }
    }
    let now = now_ms();
    let task_id = ctx.t.tx.open_table(TASKS)?.last()?.map_or(1, |(k, _)| k.value() + 1);
    let first_run = ctx.t.tx.open_table(RUNS)?.last()?.map_or(1, |(k, _)| k.value() + 1);
    let mut out = Vec::new();
    for (i, nr) in runs.iter().enumerate() {
        let mut run = Run::new(first_run + i as u64, task_id, i as u32 + 1, nr.machine_id, now);
        run.hostname = nr.hostname.clone();
        run.ip = nr.ip;
        out.push(run);
    }
    let task = Task {
        v: 1,
        id: task_id,
        spec,
        state: TaskState::Active,
        created_at_ms: now,
        runs: out.iter().map(|r| r.id).collect(),
    };
    ctx.put(&task)?;
    if let Some(text) = user_data {
        super::userdata::put_in(ctx, &super::userdata::Owner::Task(task_id), text)?;
    }
    let first_state = Step::WaitAgent.machine_state(&task.spec.purpose);
    for run in &out {
        let update = MachineUpdate {
            state: Some(first_state),
            hostname: run.hostname.clone(),
            reserved_ip: run.ip,
            ..Default::default()
        };
        store_run(
            ctx,
            run.clone(),
            &update,
            Some((EventKind::ProvisionQueued, json!({"task": task_id, "run": run.id}))),
        )?;
    }
    Ok((task, out))
}

fn cancel_in(ctx: &mut WriteCtx<'_>, task_id: u64) -> Result<Vec<Job>, CmdbError> {
    let mut task: Task = ctx.get(task_id)?;
    if task.state != TaskState::Active {
        return Err(CmdbError::Conflict(format!("task {task_id} is already {:?}", task.state).to_lowercase()));
    }
    // Read every run and its job first; then write.
    let runs: Vec<Run> = find_all(&ctx.t.tx.open_table(RUNS)?, task.runs.clone())?;
    let mut plan = Vec::new();
    for mut run in runs {
        if !run.cancel(now_ms()) {
            continue;
        }
        let job = match run.job.take() {
            Some(j) => ctx.find::<Job>(j)?,
            None => None,
        };
        let state = run.step.cancelled_state(&task.spec.purpose);
        let update = MachineUpdate { state: Some(state), installer: Some(None), ..Default::default() };
        let machine = check_run(ctx, &run, &update)?;
        plan.push((run, job, machine, update));
    }
    let mut jobs = Vec::new();
    for (run, job, machine, update) in plan {
        jobs.extend(cancel_job_in(ctx, job)?);
        let detail = json!({"task": task_id, "run": run.id});
        write_run(ctx, run, machine, &update, Some((EventKind::ProvisionCancelled, detail)))?;
    }
    task.state = TaskState::Cancelled;
    ctx.put(&task)?;
    Ok(jobs)
}

/// A task's new runs may not share a machine, a hostname or an address among themselves
/// (checked before anything is written, as the checks against stored rows are).
fn distinct_runs(runs: &[NewRun]) -> Result<(), CmdbError> {
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[..i] {
            if a.machine_id.is_some() && a.machine_id == b.machine_id {
                return Err(CmdbError::Conflict(format!("machine {:?} is named twice", a.machine_id)));
            }
            if let (Some(x), Some(y)) = (&a.hostname, &b.hostname) {
                if x.eq_ignore_ascii_case(y) {
                    return Err(CmdbError::Conflict(format!("hostname {x} is given to two runs")));
                }
            }
            if a.ip.is_some() && a.ip == b.ip {
                return Err(CmdbError::Conflict(format!("{:?} is given to two runs", a.ip)));
            }
        }
    }
    Ok(())
}
