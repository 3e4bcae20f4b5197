//! Provisioning tasks and runs on the CMDB handle. The engine reads the active runs, decides,
//! and writes each run back together with its machine's state and a timeline event.

use std::net::Ipv4Addr;

use redb::ReadableTable;
use serde_json::json;

use super::machines::{get_machine, push_event, put_machine};
use super::model::MachineState;
use super::store::{decode, encode, ACTIVE_RUNS, RUNS, TASKS};
use super::{now_ms, now_secs, Cmdb, CmdbError};
use crate::provision::{Run, RunState, Task, TaskSpec, TaskState};

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
            for r in &runs {
                if let Some(m) = r.machine_id {
                    if busy.contains(&m) {
                        return Err(CmdbError::Conflict(format!("machine {m} is already being provisioned")));
                    }
                    get_machine(&ctx.t.machines, m)?;
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
                };
                store_run(ctx, run, &update, Some(("provision.queued", json!({"task": task_id, "run": run.id}))))?;
            }
            Ok((task, out))
        })
        .await
    }

    /// Stores a run (and, for a bound run, its machine's changes and an event).
    pub async fn save_run(
        &self,
        run: Run,
        update: MachineUpdate,
        event: Option<(&'static str, serde_json::Value)>,
    ) -> Result<(), CmdbError> {
        self.write(move |ctx| store_run(ctx, &run, &update, event)).await
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
    pub async fn tasks(&self, limit: usize) -> Result<Vec<Task>, CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(TASKS)?;
            let mut out = Vec::new();
            for row in t.iter()?.rev().take(limit) {
                out.push(decode(row?.1.value())?);
            }
            Ok(out)
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

fn store_run(
    ctx: &mut super::writer::WriteCtx<'_>,
    run: &Run,
    update: &MachineUpdate,
    event: Option<(&'static str, serde_json::Value)>,
) -> Result<(), CmdbError> {
    if let Some(mid) = run.machine_id {
        let mut m = get_machine(&ctx.t.machines, mid)?;
        let before = (m.state, m.hostname.clone(), m.reserved_ip);
        if let Some(s) = update.state {
            m.state = s;
        }
        if update.hostname.is_some() {
            m.hostname = update.hostname.clone();
        }
        if update.reserved_ip.is_some() {
            m.reserved_ip = update.reserved_ip;
        }
        if before != (m.state, m.hostname.clone(), m.reserved_ip) {
            m.updated_at = now_secs();
            put_machine(ctx, &m)?;
        }
        if let Some((kind, detail)) = event {
            push_event(ctx, mid, kind, detail)?;
        }
    }
    ctx.t.tx.open_table(RUNS)?.insert(run.id, encode(run).as_slice())?;
    let mut active = ctx.t.tx.open_table(ACTIVE_RUNS)?;
    if run.state == RunState::Active {
        active.insert(run.id, ())?;
    } else {
        active.remove(run.id)?;
    }
    Ok(())
}
