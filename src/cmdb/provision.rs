//! Provisioning tasks and runs on the CMDB handle. The engine reads the active runs, decides,
//! and writes each run back together with its machine's state and a timeline event.

use std::net::Ipv4Addr;

use redb::ReadableTable;
use serde_json::json;

use super::agents::{cancel_job_in, insert_job};
use super::events::push_event;
use super::machines::{check_unique, get_machine, put_machine};
use super::model::{AgentRecord, InstallerBoot, MachineState};
use super::store::{decode, encode, ACTIVE_RUNS, AGENTS, RUNS, TASKS};
use super::{now_ms, now_secs, Cmdb, CmdbError};
use crate::jobs::{Job, NewJob};
use crate::provision::{Run, RunState, Step, Task, TaskSpec, TaskState};

/// A run to create: its machine (if known yet), hostname and address.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub machine_id: Option<u64>,
    pub hostname: Option<String>,
    pub ip: Option<Ipv4Addr>,
}

/// What changes on a machine together with a run.
#[derive(Debug, Clone, Default)]
pub struct MachineUpdate {
    pub state: Option<MachineState>,
    pub hostname: Option<String>,
    pub reserved_ip: Option<Ipv4Addr>,
    /// `Some(None)` clears the installer boot.
    pub installer: Option<Option<InstallerBoot>>,
}

impl Cmdb {
    /// Creates a task and its runs; the machines named get their hostname, reservation and the
    /// `queued` state. A machine already in an active run is refused.
    pub async fn create_task(&self, spec: TaskSpec, runs: Vec<NewRun>) -> Result<(Task, Vec<Run>), CmdbError> {
        self.write(move |ctx| {
            let busy: Vec<u64> = {
                let active = ctx.t.tx.open_table(ACTIVE_RUNS)?;
                let all = ctx.t.tx.open_table(RUNS)?;
                let mut v = Vec::new();
                for row in active.iter()? {
                    let id = row?.0.value();
                    if let Some(r) = all.get(id)? {
                        v.extend(decode::<Run>(r.value())?.machine_id);
                    }
                }
                v
            };
            let held_ips = active_run_ips(ctx)?;
            for r in &runs {
                if let Some(m) = r.machine_id {
                    if busy.contains(&m) {
                        return Err(CmdbError::Conflict(format!("machine {m} is already being provisioned")));
                    }
                    let machine = get_machine(&ctx.t.machines, m)?;
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
            let mut tasks = ctx.t.tx.open_table(TASKS)?;
            let task_id = tasks.last()?.map_or(1, |(k, _)| k.value() + 1);
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
            tasks.insert(task_id, encode(&task).as_slice())?;
            drop(tasks);
            for run in &out {
                let update = MachineUpdate {
                    state: Some(MachineState::Queued),
                    hostname: run.hostname.clone(),
                    reserved_ip: run.ip,
                    installer: None,
                };
                store_run(
                    ctx,
                    run.clone(),
                    &update,
                    Some(("provision.queued", json!({"task": task_id, "run": run.id}))),
                )?;
            }
            Ok((task, out))
        })
        .await
    }

    /// Queues the job for a run's step and records it on the run (with `update` to its machine),
    /// in one transaction, so a crash can never leave a job that no run knows about (and submit
    /// it twice).
    pub async fn start_step_job(
        &self,
        mut run: Run,
        new: NewJob,
        event: (&'static str, serde_json::Value),
        update: MachineUpdate,
    ) -> Result<(Run, Job), CmdbError> {
        self.write(move |ctx| {
            let mid = run.machine_id.ok_or_else(|| CmdbError::Invalid("the run has no machine".into()))?;
            let job = insert_job(ctx, mid, new)?;
            run.job = Some(job.id);
            let (kind, mut detail) = event;
            detail["job"] = json!(job.id);
            let run = store_run(ctx, run, &update, Some((kind, detail)))?;
            Ok((run, job))
        })
        .await
    }

    /// Cancels a task: every unfinished run (and the job it is at) in one transaction, then the
    /// task. Machines the run had not installed yet go back to `ready`. Returns the cancelled jobs.
    pub async fn cancel_task(&self, task_id: u64) -> Result<Vec<Job>, CmdbError> {
        self.write(move |ctx| {
            let mut task: Task = match ctx.t.tx.open_table(TASKS)?.get(task_id)? {
                Some(v) => decode(v.value())?,
                None => return Err(CmdbError::NotFound(format!("task {task_id}"))),
            };
            if task.state != TaskState::Active {
                return Err(CmdbError::Conflict(format!("task {task_id} is already {:?}", task.state).to_lowercase()));
            }
            let mut jobs = Vec::new();
            for id in task.runs.clone() {
                let run: Run = match ctx.t.tx.open_table(RUNS)?.get(id)? {
                    Some(v) => decode(v.value())?,
                    None => continue,
                };
                let mut run = run;
                if !run.cancel(now_ms()) {
                    continue;
                }
                if let Some(j) = run.job.take() {
                    jobs.extend(cancel_job_in(ctx, j)?);
                }
                let state = if run.step.installed() { MachineState::Installed } else { MachineState::Ready };
                let update = MachineUpdate { state: Some(state), installer: Some(None), ..Default::default() };
                let detail = json!({"task": task_id, "run": run.id});
                store_run(ctx, run, &update, Some(("provision.cancelled", detail)))?;
            }
            task.state = TaskState::Cancelled;
            ctx.t.tx.open_table(TASKS)?.insert(task_id, encode(&task).as_slice())?;
            Ok(jobs)
        })
        .await
    }

    /// Stores a run (and, for a bound run, its machine's changes and an event). Refused with
    /// `Conflict` when the run changed since `run` was read.
    pub async fn save_run(
        &self,
        run: Run,
        update: MachineUpdate,
        event: Option<(&'static str, serde_json::Value)>,
    ) -> Result<(), CmdbError> {
        self.write(move |ctx| store_run(ctx, run, &update, event).map(|_| ())).await
    }

    /// An installer reported back (`/boot/installed`) with the token of its machine's installer
    /// boot. In one transaction: the machine's agent credential becomes `secret_sha256` (handed
    /// to the installed system, whose agent renews with it); the first time, the machine also
    /// boots its disk from now on (`installed`) and the run moves to `wait_installed`. A
    /// repeated report (the installer retried after a lost answer) only replaces the credential;
    /// the token is good until the installed agent checks in.
    pub async fn installer_finished(
        &self,
        machine_id: u64,
        token: String,
        secret_sha256: String,
    ) -> Result<Run, CmdbError> {
        self.write(move |ctx| {
            let m = get_machine(&ctx.t.machines, machine_id)?;
            let boot = m.installer.clone().ok_or_else(|| {
                CmdbError::Conflict(format!("machine {machine_id} is not being installed by an installer"))
            })?;
            if !crate::controller::same_secret(&boot.token, &token) {
                return Err(CmdbError::Forbidden("wrong installer token".into()));
            }
            let run: Run = match ctx.t.tx.open_table(RUNS)?.get(boot.run)? {
                Some(v) => decode(v.value())?,
                None => return Err(CmdbError::NotFound(format!("run {}", boot.run))),
            };
            let first = run.step == Step::Install && !boot.reported;
            let again = run.step == Step::WaitInstalled && boot.reported;
            if run.state != RunState::Active || !(first || again) {
                return Err(CmdbError::Conflict(format!("run {} is not installing", run.id)));
            }
            let mut agents = ctx.t.tx.open_table(AGENTS)?;
            let mut rec: AgentRecord = match agents.get(machine_id)? {
                Some(v) => decode(v.value())?,
                None => return Err(CmdbError::Conflict(format!("machine {machine_id} has no agent record"))),
            };
            rec.secret_sha256 = secret_sha256;
            rec.pending_sha256 = None;
            rec.approved = true;
            agents.insert(machine_id, encode(&rec).as_slice())?;
            drop(agents);
            if again {
                push_event(ctx, machine_id, "provision.installer_reported_again", json!({"run": run.id}))?;
                return Ok(run);
            }
            let mut run = run;
            let now = now_ms();
            if let Some(j) = run.job.take() {
                cancel_job_in(ctx, j)?;
            }
            run.enter(Step::WaitInstalled, now);
            run.error = None;
            run.installed_after_ms = Some(now);
            let reported = InstallerBoot { reported: true, ..boot.clone() };
            let update = MachineUpdate {
                state: Some(MachineState::Installed),
                installer: Some(Some(reported)),
                ..Default::default()
            };
            let detail = json!({"task": run.task_id, "run": run.id, "step": "wait_installed", "progress": run.progress, "installer": boot.profile});
            store_run(ctx, run, &update, Some(("provision.installer_finished", detail)))
        })
        .await
    }

    pub async fn set_task_state(&self, task_id: u64, state: TaskState) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            let mut tasks = ctx.t.tx.open_table(TASKS)?;
            let mut t: Task = match tasks.get(task_id)? {
                Some(v) => decode(v.value())?,
                None => return Err(CmdbError::NotFound(format!("task {task_id}"))),
            };
            t.state = state;
            tasks.insert(task_id, encode(&t).as_slice())?;
            Ok(())
        })
        .await
    }

    pub async fn task(&self, id: u64) -> Result<Task, CmdbError> {
        self.read(move |rtx| match rtx.open_table(TASKS)?.get(id)? {
            Some(v) => decode(v.value()),
            None => Err(CmdbError::NotFound(format!("task {id}"))),
        })
        .await
    }

    /// Tasks, newest first.
    /// Tasks newest first, below id `before`, with the id the next page starts below.
    pub async fn tasks(&self, before: Option<u64>, limit: usize) -> Result<(Vec<Task>, Option<u64>), CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(TASKS)?;
            let (mut out, mut last, mut next) = (Vec::new(), None, None);
            for row in t.range(..before.unwrap_or(u64::MAX))?.rev() {
                let (k, v) = row?;
                if out.len() >= limit {
                    next = last;
                    break;
                }
                out.push(decode(v.value())?);
                last = Some(k.value());
            }
            Ok((out, next))
        })
        .await
    }

    pub async fn runs(&self, ids: Vec<u64>) -> Result<Vec<Run>, CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(RUNS)?;
            let mut out = Vec::new();
            for id in ids {
                if let Some(v) = t.get(id)? {
                    out.push(decode(v.value())?);
                }
            }
            Ok(out)
        })
        .await
    }

    /// Every run not yet finished, oldest first.
    pub async fn active_runs(&self) -> Result<Vec<Run>, CmdbError> {
        self.read(|rtx| {
            let active = rtx.open_table(ACTIVE_RUNS)?;
            let runs = rtx.open_table(RUNS)?;
            let mut out = Vec::new();
            for row in active.iter()? {
                let id = row?.0.value();
                if let Some(v) = runs.get(id)? {
                    out.push(decode(v.value())?);
                }
            }
            Ok(out)
        })
        .await
    }
}

/// Addresses held by unfinished runs (reserved on their machine or not bound yet).
fn active_run_ips(ctx: &mut super::writer::WriteCtx<'_>) -> Result<Vec<Ipv4Addr>, CmdbError> {
    let active = ctx.t.tx.open_table(ACTIVE_RUNS)?;
    let runs = ctx.t.tx.open_table(RUNS)?;
    let mut out = Vec::new();
    for row in active.iter()? {
        if let Some(v) = runs.get(row?.0.value())? {
            out.extend(decode::<Run>(v.value())?.ip);
        }
    }
    Ok(out)
}

fn store_run(
    ctx: &mut super::writer::WriteCtx<'_>,
    mut run: Run,
    update: &MachineUpdate,
    event: Option<(&'static str, serde_json::Value)>,
) -> Result<Run, CmdbError> {
    let stored: Option<Run> = match ctx.t.tx.open_table(RUNS)?.get(run.id)? {
        Some(v) => Some(decode(v.value())?),
        None => None,
    };
    if let Some(s) = &stored {
        if s.rev != run.rev {
            return Err(CmdbError::Conflict(format!("run {} changed meanwhile", run.id)));
        }
        // Binding a machine: nobody else may hold it by now.
        if s.machine_id.is_none() && run.machine_id.is_some() {
            let mid = run.machine_id;
            let active = ctx.t.tx.open_table(ACTIVE_RUNS)?;
            let runs = ctx.t.tx.open_table(RUNS)?;
            for row in active.iter()? {
                let id = row?.0.value();
                if id == run.id {
                    continue;
                }
                if let Some(v) = runs.get(id)? {
                    if decode::<Run>(v.value())?.machine_id == mid {
                        return Err(CmdbError::Conflict(format!("machine {mid:?} is held by run {id}")));
                    }
                }
            }
        }
    }
    run.rev += 1;
    if let Some(mid) = run.machine_id {
        // A machine deleted meanwhile: the run is still stored (it fails on its next pass).
        if let Ok(mut m) = get_machine(&ctx.t.machines, mid) {
            if update.hostname.is_some() || update.reserved_ip.is_some() {
                check_unique(ctx, Some(mid), &m.macs, update.hostname.as_deref(), update.reserved_ip)?;
            }
            let before = (m.state, m.hostname.clone(), m.reserved_ip, m.installer.clone());
            if let Some(i) = &update.installer {
                m.installer = i.clone();
            }
            if let Some(s) = update.state {
                m.state = s;
            }
            if update.hostname.is_some() {
                m.hostname = update.hostname.clone();
            }
            if update.reserved_ip.is_some() {
                m.reserved_ip = update.reserved_ip;
            }
            if before != (m.state, m.hostname.clone(), m.reserved_ip, m.installer.clone()) {
                m.updated_at = now_secs();
                put_machine(ctx, &m)?;
            }
            if let Some((kind, detail)) = event {
                push_event(ctx, mid, kind, detail)?;
            }
        }
    }
    ctx.t.tx.open_table(RUNS)?.insert(run.id, encode(&run).as_slice())?;
    let mut active = ctx.t.tx.open_table(ACTIVE_RUNS)?;
    if run.state == RunState::Active {
        active.insert(run.id, ())?;
    } else {
        active.remove(run.id)?;
    }
    Ok(run)
}
