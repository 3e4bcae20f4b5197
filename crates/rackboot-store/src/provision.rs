//! Provisioning tasks and runs on the CMDB handle. The engine reads the active runs, decides,
//! and writes each run back together with its machine's state and a timeline event.

use std::net::Ipv4Addr;

use serde_json::json;

use super::events::{push_event, EventKind};
use super::jobs::{cancel_job_in, insert_job};
use super::machines::check_unique;
use super::model::{AgentRecord, InstallerBoot, Machine, MachineState};
use super::store::WriteCtx;
use super::store::{decode, find_all, ACTIVE_RUNS, MACHINE_RUNS, RUNS, TASKS};
use super::{now_ms, now_secs, Cmdb, CmdbError};
use rackboot_model::jobs::{Job, NewJob};
use rackboot_model::provision::{Run, RunState, Step, Task, TaskState};

/// A run to create: its machine (if known yet), hostname and address.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub machine_id: Option<u64>,
    pub hostname: Option<String>,
    pub ip: Option<Ipv4Addr>,
}

/// What changes on a machine together with a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MachineUpdate {
    pub state: Option<MachineState>,
    pub hostname: Option<String>,
    pub reserved_ip: Option<Ipv4Addr>,
    /// `Some(None)` clears the installer boot.
    pub installer: Option<Option<InstallerBoot>>,
    /// Drops the machine's address reservation (a release that does not keep it).
    pub drop_reservation: bool,
}

impl Cmdb {
    /// Queues the job for a run's step and records it on the run (with `update` to its machine),
    /// in one transaction, so a crash can never leave a job that no run knows about (and submit
    /// it twice).
    pub async fn start_step_job(
        &self,
        mut run: Run,
        new: NewJob,
        event: (EventKind, serde_json::Value),
        update: MachineUpdate,
    ) -> Result<(Run, Job), CmdbError> {
        self.write(move |ctx| {
            let mid = run.machine_id.ok_or_else(|| CmdbError::Invalid("the run has no machine".into()))?;
            // Checked before the job is queued: a refused run write must not leave a job behind.
            let machine = check_run(ctx, &run, &update)?;
            let job = insert_job(ctx, mid, new)?;
            run.job = Some(job.id);
            let (kind, mut detail) = event;
            detail["job"] = json!(job.id);
            let run = write_run(ctx, run, machine, &update, Some((kind, detail)))?;
            Ok((run, job))
        })
        .await
    }

    /// Stores a run (and, for a bound run, its machine's changes and an event). Refused with
    /// `Conflict` when the run changed since `run` was read.
    pub async fn save_run(
        &self,
        run: Run,
        update: MachineUpdate,
        event: Option<(EventKind, serde_json::Value)>,
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
            let m: Machine = ctx.get(machine_id)?;
            let boot = m.installer.clone().ok_or_else(|| {
                CmdbError::Conflict(format!("machine {machine_id} is not being installed by an installer"))
            })?;
            if !rackboot_base::secret::same_secret(&boot.token, &token) {
                return Err(CmdbError::Forbidden("wrong installer token".into()));
            }
            let mut run: Run = ctx.get(boot.run)?;
            let first = run.step == Step::Install && !boot.reported;
            let again = run.step == Step::WaitInstalled && boot.reported;
            if run.state != RunState::Active || !(first || again) {
                return Err(CmdbError::Conflict(format!("run {} is not installing", run.id)));
            }
            let mut rec: AgentRecord = ctx
                .find(machine_id)?
                .ok_or_else(|| CmdbError::Conflict(format!("machine {machine_id} has no agent record")))?;
            rec.secret_sha256 = secret_sha256;
            rec.pending_sha256 = None;
            rec.approved = true;
            if again {
                ctx.put(&rec)?;
                push_event(ctx, machine_id, EventKind::ProvisionInstallerReportedAgain, json!({"run": run.id}))?;
                return Ok(run);
            }
            // Everything the first report changes is read and checked before it is written.
            let now = now_ms();
            let job = match run.job.take() {
                Some(j) => ctx.find::<Job>(j)?,
                None => None,
            };
            run.enter(Step::WaitInstalled, now);
            run.error = None;
            run.installed_after_ms = Some(now);
            let reported = InstallerBoot { reported: true, ..boot.clone() };
            let update = MachineUpdate {
                state: Some(MachineState::Installed),
                installer: Some(Some(reported)),
                ..Default::default()
            };
            let machine = check_run(ctx, &run, &update)?;
            ctx.put(&rec)?;
            cancel_job_in(ctx, job)?;
            let detail = json!({"task": run.task_id, "run": run.id, "step": "wait_installed", "progress": run.progress, "installer": boot.profile});
            write_run(ctx, run, machine, &update, Some((EventKind::ProvisionInstallerFinished, detail)))
        })
        .await
    }

    pub async fn set_task_state(&self, task_id: u64, state: TaskState) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            let mut t: Task = ctx.get(task_id)?;
            t.state = state;
            ctx.put(&t)
        })
        .await
    }

    pub async fn task(&self, id: u64) -> Result<Task, CmdbError> {
        self.read(move |rtx| super::store::get(&rtx.open_table(TASKS)?, id)).await
    }

    /// Tasks below id `before`, newest first, at most `limit`; with `pools`, only those acting
    /// in them. With the cursor of the next page.
    pub async fn tasks(
        &self,
        before: Option<u64>,
        limit: usize,
        pools: Option<Vec<String>>,
    ) -> Result<(Vec<Task>, Option<u64>), CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(TASKS)?;
            let (mut out, mut last, mut next) = (Vec::new(), None, None);
            for row in t.range(..before.unwrap_or(u64::MAX))?.rev() {
                let (k, v) = row?;
                let task: Task = decode(v.value())?;
                if pools.as_ref().is_some_and(|p| !p.iter().any(|p| p == task.spec.pool())) {
                    continue;
                }
                if out.len() >= limit {
                    next = last;
                    break;
                }
                out.push(task);
                last = Some(k.value());
            }
            Ok((out, next))
        })
        .await
    }

    pub async fn runs(&self, ids: Vec<u64>) -> Result<Vec<Run>, CmdbError> {
        self.read(move |rtx| find_all(&rtx.open_table(RUNS)?, ids)).await
    }

    /// Every run machine `id` has been bound to, newest first (at most `limit`).
    pub async fn machine_runs(&self, id: u64, limit: usize) -> Result<Vec<Run>, CmdbError> {
        self.read(move |rtx| {
            let ids: Vec<u64> = rtx
                .open_table(MACHINE_RUNS)?
                .range((id, 0)..=(id, u64::MAX))?
                .rev()
                .take(limit)
                .map(|r| r.map(|(k, _)| k.value().1))
                .collect::<Result<_, _>>()?;
            find_all(&rtx.open_table(RUNS)?, ids)
        })
        .await
    }

    /// Every run not yet finished, oldest first.
    pub async fn active_runs(&self) -> Result<Vec<Run>, CmdbError> {
        self.read(|rtx| {
            let ids: Vec<u64> =
                rtx.open_table(ACTIVE_RUNS)?.iter()?.map(|r| r.map(|(k, _)| k.value())).collect::<Result<_, _>>()?;
            find_all(&rtx.open_table(RUNS)?, ids)
        })
        .await
    }
}

/// Every unfinished run, as this batch sees it.
pub(super) fn active_runs_in(ctx: &WriteCtx<'_>) -> Result<Vec<Run>, CmdbError> {
    let ids: Vec<u64> =
        ctx.t.tx.open_table(ACTIVE_RUNS)?.iter()?.map(|r| r.map(|(k, _)| k.value())).collect::<Result<_, _>>()?;
    find_all(&ctx.t.tx.open_table(RUNS)?, ids)
}

/// Checks a run write before anything is written: the run has not changed since it was read,
/// a machine being bound is held by no other run, and the machine's new hostname and address
/// are free. Returns the machine to update (`None`: unbound, or deleted meanwhile, in which
/// case the run is still stored and fails on its next pass).
pub(super) fn check_run(ctx: &WriteCtx<'_>, run: &Run, update: &MachineUpdate) -> Result<Option<Machine>, CmdbError> {
    if let Some(stored) = ctx.find::<Run>(run.id)? {
        if stored.rev != run.rev {
            return Err(CmdbError::Conflict(format!("run {} changed meanwhile", run.id)));
        }
        if stored.machine_id.is_none() && run.machine_id.is_some() {
            let mid = run.machine_id;
            if let Some(other) = active_runs_in(ctx)?.iter().find(|r| r.id != run.id && r.machine_id == mid) {
                return Err(CmdbError::Conflict(format!("machine {mid:?} is held by run {}", other.id)));
            }
        }
    }
    let Some(mid) = run.machine_id else { return Ok(None) };
    let Some(m) = ctx.find::<Machine>(mid)? else { return Ok(None) };
    if update.hostname.is_some() || update.reserved_ip.is_some() {
        check_unique(ctx, Some(mid), &m.macs, update.hostname.as_deref(), update.reserved_ip)?;
    }
    Ok(Some(m))
}

/// Writes a run checked by [`check_run`], with its machine's changes and timeline event.
pub(super) fn write_run(
    ctx: &mut WriteCtx<'_>,
    mut run: Run,
    machine: Option<Machine>,
    update: &MachineUpdate,
    event: Option<(EventKind, serde_json::Value)>,
) -> Result<Run, CmdbError> {
    run.rev += 1;
    if let Some(mut m) = machine {
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
        if update.drop_reservation {
            m.reserved_ip = None;
        }
        if before != (m.state, m.hostname.clone(), m.reserved_ip, m.installer.clone()) {
            m.updated_at = now_secs();
            ctx.put(&m)?;
        }
        if let Some((kind, detail)) = event {
            push_event(ctx, m.id, kind, detail)?;
        }
    }
    ctx.put(&run)?;
    if let Some(m) = run.machine_id {
        ctx.t.tx.open_table(MACHINE_RUNS)?.insert((m, run.id), ())?;
    }
    let mut active = ctx.t.tx.open_table(ACTIVE_RUNS)?;
    if run.state == RunState::Active {
        active.insert(run.id, ())?;
    } else {
        active.remove(run.id)?;
    }
    Ok(run)
}

/// Checks and writes a run in the caller's batch.
pub(super) fn store_run(
    ctx: &mut WriteCtx<'_>,
    run: Run,
    update: &MachineUpdate,
    event: Option<(EventKind, serde_json::Value)>,
) -> Result<Run, CmdbError> {
    let machine = check_run(ctx, &run, update)?;
    write_run(ctx, run, machine, update, event)
}
