//! Day two: what an operator does to a machine after its install. Release (erase the disks
//! and put the machine back in the pool) and rescue (BootOS, disks untouched, until it is
//! returned to its disk) are tasks of one run with a day-two [`Purpose`], which the engine
//! drives like any other: into BootOS through the installed agent's reboot or the BMC, then
//! the purpose's own steps. Retiring a machine and bringing it back only change its state.
//!
//! | asked | from | then |
//! |---|---|---|
//! | release | installed, failed, ready, discovered, rescue (its rescue ends) | releasing -> ready |
//! | commission | ready, discovered, failed | commissioning -> ready (or failed, the test named) |
//! | rescue | installed, failed | rescue (held) |
//! | return | rescue | installed (boots its disk; the run waits for the installed agent) |
//! | retire | ready, failed, discovered | retired |
//! | bring back | retired | ready |

use rackboot_agent::wire::EraseMode;
use serde_json::json;

use super::{Purpose, Run, RunState, Selector, Step, Task, TaskSpec};
use crate::cmdb::{Cmdb, CmdbError, EventKind, Machine, MachineState, MachineUpdate, NewRun};

/// A zero or secure erase is given this long per byte of disk, on top of half an hour: 20 MB/s,
/// slower than any disk rackboot will meet, so the timeout only catches a hung erase.
const ERASE_BYTES_PER_SEC: u64 = 20_000_000;

fn conflict(m: &Machine, what: &str, hint: &str) -> CmdbError {
    let state = serde_json::to_value(m.state).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    CmdbError::Conflict(format!("machine {} is {state}: {what} {hint}", m.id))
}

/// How long each step of a release may take: an erase of every byte scales with the disks.
pub fn release_timeout_secs(m: &Machine, erase: EraseMode) -> u64 {
    let bytes: u64 = m.inventory.as_ref().map_or(0, |i| i.disks.iter().map(|d| d.size_bytes).sum());
    match erase {
        EraseMode::Zero | EraseMode::Secure => 1800 + bytes / ERASE_BYTES_PER_SEC,
        EraseMode::None | EraseMode::Quick => 1800,
    }
    .min(crate::jobs::MAX_TIMEOUT_SECS)
}

/// The task of one day-two run on `m`.
fn day_two(m: &Machine, purpose: Purpose, step_timeout_secs: u64) -> Result<TaskSpec, CmdbError> {
    let mac = *m.macs.first().ok_or_else(|| CmdbError::Invalid(format!("machine {} has no MAC", m.id)))?;
    Ok(TaskSpec {
        select: Selector::Macs(vec![mac]),
        image: None,
        image_sha256: None,
        installer: None,
        hardware_profile: None,
        hostname_pattern: None,
        ip_pool: None,
        disk: "auto".into(),
        root_device: None,
        layout: None,
        ssh_keys: vec![],
        post_install: vec![],
        concurrency: 1,
        step_timeout_secs,
        // Destructive, and a rescue holds the machine: nothing is tried again unasked.
        retries: 0,
        // An installed machine is rebooted into BootOS first.
        reinstall: true,
        user_data: None,
        purpose,
        commission: None,
        pool: Some(m.pool.clone()),
    })
}

fn new_run(m: &Machine) -> NewRun {
    NewRun { machine_id: Some(m.id), hostname: None, ip: None }
}

async fn start(cmdb: &Cmdb, m: &Machine, spec: TaskSpec) -> Result<Task, CmdbError> {
    Ok(cmdb.create_task(spec, vec![new_run(m)]).await?.0)
}

/// The machine's active run and its task, if it has one.
async fn active(cmdb: &Cmdb, id: u64) -> Result<Option<(Run, Task)>, CmdbError> {
    let Some(run) = cmdb.active_runs().await?.into_iter().find(|r| r.machine_id == Some(id)) else {
        return Ok(None);
    };
    let task = cmdb.task(run.task_id).await?;
    Ok(Some((run, task)))
}

/// Releases `m`: BootOS erases its disks as `erase` says, then it is `ready` (its reservation
/// kept or dropped). A machine in rescue ends its rescue and is erased from there.
pub async fn release(cmdb: &Cmdb, m: &Machine, erase: EraseMode, keep_reservation: bool) -> Result<Task, CmdbError> {
    use MachineState as S;
    let mut rescue = None;
    match m.state {
        S::Installed | S::Failed | S::Ready | S::Discovered => {}
        S::Rescue => {
            if let Some((_, task)) = active(cmdb, m.id).await? {
                if matches!(task.spec.purpose, Purpose::Rescue { .. }) {
                    rescue = Some(task.id);
                }
            }
        }
        S::Retired => return Err(conflict(m, "bring it back before", "releasing it")),
        _ => return Err(conflict(m, "cancel its task or wait for it to end before", "releasing it")),
    }
    let purpose = Purpose::Release { erase, keep_reservation };
    let spec = day_two(m, purpose, release_timeout_secs(m, erase))?;
    match rescue {
        // The rescue ends and the release starts in one write.
        Some(id) => Ok(cmdb.replace_task(id, spec, vec![new_run(m)]).await?.0),
        None => start(cmdb, m, spec).await,
    }
}

/// Runs test profile `profile` on `m` in BootOS: `ready` after, or `failed` with the test named.
/// The disk write test overwrites disks: an installed machine is released first.
pub async fn commission(cmdb: &Cmdb, m: &Machine, profile: &crate::commission::TestProfile) -> Result<Task, CmdbError> {
    if !matches!(m.state, MachineState::Ready | MachineState::Discovered | MachineState::Failed) {
        return Err(conflict(
            m,
            "only a machine in BootOS (ready, discovered or failed)",
            "is commissioned: release it first",
        ));
    }
    let disks = m.inventory.as_ref().map_or(1, |i| i.disks.len().max(1)) as u64;
    let secs = |v: Option<u32>| u64::from(v.unwrap_or(0));
    // Half an hour for the boot and the tools, then the tests' own time (memtester at 20 MiB/s
    // at worst, under emulation; iperf3 both ways, after up to 15 minutes' wait for the server).
    let network = profile.network_secs.map_or(0, |v| u64::from(v) * 2 + 900);
    let timeout =
        1800 + secs(profile.cpu_secs) + secs(profile.disk_secs) * 3 * disks + secs(profile.memory_mib) / 20 + network;
    let purpose = Purpose::Commission { profile: profile.name.clone() };
    start(cmdb, m, day_two(m, purpose, timeout.min(crate::jobs::MAX_TIMEOUT_SECS))?).await
}

/// Machine `id`'s commissioning runs, newest first, each with its profile's name.
pub async fn test_runs(cmdb: &Cmdb, id: u64) -> Result<Vec<(String, Run)>, CmdbError> {
    let mut out = Vec::new();
    // Its newest runs (the machine's own index), each task read once.
    let mut tasks = std::collections::HashMap::new();
    for run in cmdb.machine_runs(id, 1000).await? {
        if let std::collections::hash_map::Entry::Vacant(e) = tasks.entry(run.task_id) {
            e.insert(cmdb.task(run.task_id).await?);
        }
        if let Purpose::Commission { profile } = &tasks[&run.task_id].spec.purpose {
            out.push((profile.clone(), run));
        }
    }
    Ok(out)
}

/// Boots `m` into BootOS without touching its disks, and holds it there.
pub async fn rescue(cmdb: &Cmdb, m: &Machine, mount: bool) -> Result<Task, CmdbError> {
    if !matches!(m.state, MachineState::Installed | MachineState::Failed) {
        return Err(conflict(m, "only an installed or failed machine", "is rescued"));
    }
    start(cmdb, m, day_two(m, Purpose::Rescue { mount }, 1800)?).await
}

/// Returns a rescued machine to its disk: its rescue run reboots it there. A rescue that has
/// not reached BootOS yet is cancelled instead (the machine boots its disk anyway).
pub async fn give_back(cmdb: &Cmdb, m: &Machine) -> Result<Run, CmdbError> {
    let Some((mut run, task)) =
        active(cmdb, m.id).await?.filter(|(_, t)| matches!(t.spec.purpose, Purpose::Rescue { .. }))
    else {
        return Err(conflict(m, "it has no rescue to", "return from"));
    };
    let now = crate::cmdb::now_ms();
    match run.step {
        Step::Rescued => {
            run.enter(Step::Reboot, now);
            let update = MachineUpdate { state: Some(MachineState::Installed), ..Default::default() };
            let detail = json!({"task": task.id, "run": run.id, "step": "reboot", "returned": true});
            cmdb.save_run(run.clone(), update, Some((EventKind::ProvisionStep, detail))).await?;
            run.rev += 1;
            Ok(run)
        }
        Step::WaitAgent => {
            cmdb.cancel_task(task.id).await?;
            run.state = RunState::Cancelled;
            Ok(run)
        }
        _ => Err(CmdbError::Conflict(format!(
            "machine {}'s rescue is at step {}: return it once it is rescued",
            m.id,
            super::step_name(run.step)
        ))),
    }
}

/// Takes `m` out of every pool (no task selects it, no `next` run binds it) until it is
/// brought back.
pub async fn retire(cmdb: &Cmdb, m: &Machine) -> Result<Machine, CmdbError> {
    let event = (EventKind::MachineLifecycle, json!({"action": "retire"}));
    cmdb.transition(
        m.id,
        |m, run| match (m.state, run) {
            (MachineState::Ready | MachineState::Failed | MachineState::Discovered, None) => Ok(MachineState::Retired),
            (MachineState::Retired, _) => Err(conflict(m, "it is retired", "already")),
            _ => Err(conflict(m, "release it before", "retiring it")),
        },
        event,
    )
    .await
}

/// Brings a retired machine back: `ready`.
pub async fn unretire(cmdb: &Cmdb, m: &Machine) -> Result<Machine, CmdbError> {
    let event = (EventKind::MachineLifecycle, json!({"action": "unretire"}));
    cmdb.transition(
        m.id,
        |m, _| match m.state {
            MachineState::Retired => Ok(MachineState::Ready),
            _ => Err(conflict(m, "only a retired machine", "is brought back")),
        },
        event,
    )
    .await
}
