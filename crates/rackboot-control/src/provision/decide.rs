//! The engine's decisions, apart from its I/O: [`decide`] takes a run and what the engine read
//! for it ([`Observed`]) and returns the run's next state with the [`Effect`]s the engine carries
//! out. Nothing here touches the CMDB, the clock or the network, so every transition is a test.
//!
//! | step | when | next | effects |
//! |---|---|---|---|
//! | any | the machine is gone | failed | save |
//! | wait_agent | reinstall, installed agent, no reboot asked yet | wait_agent (reboot asked) | start a reboot job |
//! | wait_agent | live BootOS agent (enrolled after the reboot, if one was asked), inventory, a free slot | check | take a slot, save |
//! | wait_agent | no live BootOS agent, a BMC, never powered or past the step timeout since, under 2 power-ons | wait_agent | power on through the BMC (PXE once, then on or cycle), save |
//! | wait_agent | no live BootOS agent, a BMC, 2 power-ons, past the step timeout | failed (no retries) | save |
//! | wait_agent | otherwise | - | - |
//! | check | the hardware profile fits (or there is none) | configure[0] / install | save |
//! | check | it does not fit | failed | save |
//! | firmware | (its phases: see [`firmware`]) | | |
//! | bios | (its phases: see [`bios`]) | | |
//! | job step | no job, the action cannot be built / an installer but a pinned boot profile | retry or failed (no retries) | save |
//! | job step | no job | same step | start the step's job (install with an installer: the machine's installer boot) |
//! | job step | job queued or running past the step timeout, a BMC, not yet cycled in this step | same step, its clock restarted | power-cycle through the BMC (PXE once + cycle), save |
//! | job step | job queued or running past the step timeout | retry or failed | cancel the job, save |
//! | install (image) | job running, 5%+ more of the image written | same step, progress | save |
//! | job step | job queued or running | - | - |
//! | install (installer) | job succeeded (the machine rebooted into it), within the timeout | - (the report-back moves it) | - |
//! | install (installer) | job succeeded, past the timeout, a BMC, not yet cycled in this step | same step, its clock restarted | power-cycle through the BMC, save |
//! | install (installer) | job succeeded, past the timeout | failed (no retries: it sits in the installer) | save |
//! | job step | job succeeded | next step (reboot: installed after the job ended) | save |
//! | reboot (virtual media) | job succeeded (the OS powered off) | wait_installed | off, disk once, on through the BMC; save |
//! | job step | job failed, timed out, cancelled, error | retry or failed | save |
//! | wait_installed | the installed agent enrolled after the reboot | post_install[0] / done | save |
//! | wait_installed | past the step timeout | failed (no retries) | save |
//! | wait_installed | otherwise | - | - |
//! | erase | job running, 5%+ more of the disks erased | same step, progress | save |
//! | rescued | always (the operator's return enters reboot) | - | - |
//!
//! A day-two run (release, rescue) takes the same road into BootOS as a reinstall; its task's
//! purpose picks the steps after wait_agent (see `Purpose`). Its erase job is delivered once.

use rackboot_agent::wire::{Action, AgentMode};
use serde_json::json;

pub mod bios;
pub mod firmware;
mod firmware_inband;
mod power;
use power::{power_up, stuck_cycle};

use super::{step_name, Run, RunState, Step, Task};
use crate::cmdb::EventKind;
use crate::cmdb::{AgentRecord, Machine, MachineState, MachineUpdate};
use crate::jobs::{Job, JobState, NewJob};

/// Deliveries of one step's job before the step counts as failed (a node that reboots under
/// its agent loses the job; it is delivered again).
pub const JOB_ATTEMPTS: u32 = 3;

/// What the engine read for one (bound) run: everything a decision looks at.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub now_ms: u64,
    /// `None`: the machine was deleted.
    pub machine: Option<Machine>,
    pub agent: Option<AgentRecord>,
    /// The agent's stats period (liveness: heard from within three of them, at least 10 s each).
    pub stats_secs: u64,
    /// The job of the current step, if it has one.
    pub job: Option<Job>,
    /// The newest percentage a running image write or erase reported.
    pub job_percent: Option<u8>,
    /// Runs of the task past wait_agent in this pass.
    pub slots_in_use: u32,
    /// Scripts of the task's hardware profile (configure steps).
    pub configure_scripts: usize,
    /// Whether the hardware profile fits the machine (true without a profile).
    pub profile_fits: bool,
    /// The agent action for a job step that has no job yet (`Err`: why it cannot be built).
    pub action: Option<Result<Action, String>>,
    /// A commissioning job that ended: its results, judged.
    pub tests: Option<Vec<crate::commission::TestResult>>,
    /// The machine has a BMC, and whether it boots UEFI (else legacy BIOS).
    pub bmc_uefi: Option<bool>,
    /// The hardware profile declares BIOS settings: them, the BMC's protocol, the step's call.
    pub bios: Option<bios::BiosObserved>,
    /// The hardware profile names a firmware baseline: it, the BMC's protocol, the update.
    pub firmware: Option<firmware::FirmwareObserved>,
    /// The machine boots BootOS from virtual media: its OS powers off at the reboot step and
    /// the BMC starts it from its disk (no CD, no network boot without DHCP).
    pub bmc_vmedia: bool,
}

/// Power-ons through a BMC before a run that still has no BootOS agent fails.
pub const POWER_ATTEMPTS: u32 = 2;

/// Something the engine does for a decision, in order.
#[derive(Debug, Clone, PartialEq)]
// A handful per pass, moved once: the job's size (a plugin action) costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub enum Effect {
    /// Count the run against its task's concurrency for the rest of this pass.
    TakeSlot,
    /// Cancel the step's job (best effort: it may have ended meanwhile).
    CancelJob(u64),
    /// Queue the step's job and store the run with it, `update` to the machine and the event.
    StartJob { job: NewJob, event: (EventKind, serde_json::Value), update: MachineUpdate, installer: Option<Installer> },
    /// Store the run with `update` to its machine and the event.
    Save { update: MachineUpdate, event: (EventKind, serde_json::Value) },
    /// Through the machine's BMC, in the background: PXE once, then power on (cycle if on).
    PowerOn { uefi: bool },
    /// A BIOS step's call to the machine's BMC, in the background.
    Bios(bios::BiosCall),
    /// A firmware step's update through the machine's BMC, in the background.
    Firmware(firmware::FirmwareCall),
    /// Through the machine's BMC, in the background: off (it is powering off), its disk once,
    /// on.
    BootDisk { uefi: bool },
}

/// The installer boot an install step sets up: PXE boots `profile` until it reports back.
#[derive(Debug, Clone, PartialEq)]
pub struct Installer {
    pub profile: String,
    /// The token of this run's earlier try (an installer may have it already); `None`: a new one.
    pub keep_token: Option<String>,
}

/// The run after a decision, and what to do about it. No effects: nothing to do this pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub run: Run,
    pub effects: Vec<Effect>,
}

/// Decides one bound run's next move.
pub fn decide(run: &Run, task: &Task, o: &Observed) -> Decision {
    let mut next = run.clone();
    let spec = &task.spec;
    let now = o.now_ms;
    let n_conf = o.configure_scripts;
    let timed_out = now.saturating_sub(run.step_started_ms) > spec.step_timeout_secs.saturating_mul(1000);
    let wait = |run: &Run| Decision { run: run.clone(), effects: vec![] };
    let Some(machine) = &o.machine else {
        next.step_failed("the machine was deleted".into(), 0, now);
        return saved(next, task, vec![]);
    };
    let agent = o.agent.as_ref();
    let live = |a: &AgentRecord| {
        let since = (now / 1000).saturating_sub(3 * o.stats_secs.max(10));
        a.enrolled_at >= since || a.stats_at.is_some_and(|t| t >= since)
    };

    match run.step {
        Step::WaitAgent => {
            let installed_agent = agent.is_some_and(|a| a.mode == AgentMode::Installed && a.approved);
            if spec.reinstall && installed_agent && !run.reboot_requested {
                // Back into BootOS: the machine is `queued`, so PXE boots discovery again.
                next.reboot_requested = true;
                next.step_started_ms = now;
                if let Some(uefi) = o.bmc_uefi {
                    // Through the BMC: PXE once and a restart, whatever the disk's boot order.
                    next.power_requests += 1;
                    next.power_requested_ms = Some(now);
                    let detail =
                        json!({"task": task.id, "run": run.id, "step": "wait_agent", "bmc": true, "uefi": uefi});
                    let save = Effect::Save {
                        update: MachineUpdate::default(),
                        event: (EventKind::ProvisionReinstallReboot, detail),
                    };
                    return Decision { run: next, effects: vec![Effect::PowerOn { uefi }, save] };
                }
                let detail = json!({"task": task.id, "run": run.id, "step": "wait_agent"});
                // Into BootOS through the installed agent: from the network once, whatever the
                // firmware's boot order says (UEFI BootNext).
                let action = Action::Reboot { network: true, disk: None };
                let job = NewJob { action, timeout_secs: spec.step_timeout_secs, max_attempts: JOB_ATTEMPTS };
                let event = (EventKind::ProvisionReinstallReboot, detail);
                let start = Effect::StartJob { job, event, update: MachineUpdate::default(), installer: None };
                return Decision { run: next, effects: vec![start] };
            }
            let bootos_agent = agent.is_some_and(|a| {
                a.approved
                    && a.mode == AgentMode::Bootos
                    && live(a)
                    && (!run.reboot_requested || a.enrolled_at >= run.step_started_ms / 1000)
            });
            if !bootos_agent {
                return match o.bmc_uefi {
                    Some(uefi) => power_up(next, task, uefi, now),
                    None => wait(run),
                };
            }
            if machine.inventory.is_none() || o.slots_in_use >= spec.concurrency.max(1) {
                return wait(run);
            }
            next.advance(spec.route(n_conf, o.bios.is_some(), o.firmware.is_some()), now);
            saved(next, task, vec![Effect::TakeSlot])
        }
        Step::Check => {
            if o.profile_fits {
                next.advance(spec.route(n_conf, o.bios.is_some(), o.firmware.is_some()), now);
            } else {
                let why = format!(
                    "hardware profile {:?} does not fit {} {}",
                    spec.hardware_profile.clone().unwrap_or_default(),
                    machine.vendor.clone().unwrap_or_default(),
                    machine.model.clone().unwrap_or_default()
                );
                next.step_failed(why, 0, now);
            }
            saved(next, task, vec![])
        }
        Step::Firmware => firmware::step(next, task, o, agent),
        Step::Bios => bios::step(next, task, o, agent),
        Step::WaitInstalled => {
            let since = run.installed_after_ms.unwrap_or(run.step_started_ms);
            let back = agent.is_some_and(|a| {
                // enrolled_at has whole seconds: an enrollment in the second the reboot ended counts.
                a.approved && a.mode == AgentMode::Installed && a.enrolled_at >= since / 1000
            });
            if back {
                next.advance(spec.route(n_conf, o.bios.is_some(), o.firmware.is_some()), now);
            } else if timed_out {
                next.step_failed("the installed system's agent did not check in".into(), 0, now);
            } else {
                return wait(run);
            }
            saved(next, task, vec![])
        }
        // A rescue holds the machine in BootOS until the operator returns it (which enters reboot).
        Step::Done | Step::Rescued => wait(run),
        _ => match (run.job, &o.job) {
            (None, _) => start_step(next, task, machine, o),
            (Some(id), Some(job)) if job.id == id => follow_job(next, task, job, o, timed_out),
            // The engine did not read the step's job: nothing is known, nothing is done.
            (Some(_), _) => wait(run),
        },
    }
}

/// A job step without a job: start it (or fail it when it cannot start).
fn start_step(mut next: Run, task: &Task, machine: &Machine, o: &Observed) -> Decision {
    let (spec, step, now) = (&task.spec, next.step, o.now_ms);
    let action = match o.action.clone() {
        Some(Ok(a)) => a,
        Some(Err(why)) => {
            next.step_failed(why, 0, now);
            return saved(next, task, vec![]);
        }
        None => {
            next.step_failed(format!("{} has no action", step_name(step)), 0, now);
            return saved(next, task, vec![]);
        }
    };
    let mut detail = json!({"task": task.id, "run": next.id, "step": step_name(step), "progress": next.progress});
    let mut installer = None;
    if let (Step::Install, Some(profile)) = (step, &spec.installer) {
        if let Some(pin) = &machine.boot_profile {
            let why = format!("the machine is pinned to boot profile {pin:?}, which wins over the installer: unpin it");
            next.step_failed(why, 0, now);
            return saved(next, task, vec![]);
        }
        // PXE boots the installer from now on, until it reports back with the token (a retry
        // keeps the token an installer may already have).
        let keep_token = machine.installer.as_ref().filter(|b| b.run == next.id).map(|b| b.token.clone());
        installer = Some(Installer { profile: profile.clone(), keep_token });
        detail["installer"] = json!(profile);
    }
    // An erase is delivered once: a destructive job is never run again without the operator.
    let max_attempts = if step == Step::Erase { 1 } else { JOB_ATTEMPTS };
    let job = NewJob { action, timeout_secs: spec.step_timeout_secs, max_attempts };
    let start = Effect::StartJob {
        job,
        event: (EventKind::ProvisionStep, detail),
        update: MachineUpdate::default(),
        installer,
    };
    Decision { run: next, effects: vec![start] }
}

/// A job step with its job: wait for it, follow its progress, or move on when it ends.
fn follow_job(mut next: Run, task: &Task, job: &Job, o: &Observed, timed_out: bool) -> Decision {
    let (spec, step, now) = (&task.spec, next.step, o.now_ms);
    let n_conf = o.configure_scripts;
    let unchanged = |next: Run| Decision { run: next, effects: vec![] };
    let mut effects = vec![];
    // A destructive step is never tried again without the operator.
    let retries = if step == Step::Erase { 0 } else { spec.retries };
    match job.state {
        JobState::Queued | JobState::Running if timed_out && o.bmc_uefi.is_some() && !next.stuck_cycled => {
            return stuck_cycle(next, task, o);
        }
        JobState::Queued | JobState::Running if timed_out => {
            effects.push(Effect::CancelJob(job.id));
            next.step_failed(format!("no result within {} s", spec.step_timeout_secs), retries, now);
        }
        JobState::Running if step == Step::Install && spec.image.is_some() => {
            // The image write's progress moves the run's (20% to 70%): each 10% more of the image
            // is an event on the machine's timeline.
            let Some(pct) = o.job_percent else { return unchanged(next) };
            let progress = Step::Install.progress() + pct / 2;
            if progress < next.progress.saturating_add(5) {
                return unchanged(next);
            }
            next.progress = progress.min(Step::Identity.progress());
        }
        JobState::Running if step == Step::Erase => {
            // The erase's progress moves the run's (10% to 100%).
            let Some(pct) = o.job_percent else { return unchanged(next) };
            let progress = Step::Erase.progress() + (u16::from(pct) * 9 / 10) as u8;
            if progress < next.progress.saturating_add(5) {
                return unchanged(next);
            }
            next.progress = progress.min(99);
        }
        JobState::Queued | JobState::Running => return unchanged(next),
        // A commissioning job's end: its results are kept on the run; a failed test (or job)
        // fails the run, naming it, and is not tried again.
        // No results judged (no profile to judge against) is a failure too: never a pass.
        _ if step == Step::Commission => {
            next.tests = o.tests.clone().unwrap_or_default();
            match (&o.tests, crate::commission::failure(&next.tests)) {
                (Some(_), None) => next.advance(spec.route(n_conf, o.bios.is_some(), o.firmware.is_some()), now),
                (Some(_), Some(why)) => next.step_failed(why, 0, now),
                (None, _) => next.step_failed("the tests' results were not judged".into(), 0, now),
            }
        }
        // The machine rebooted into its installer; /boot/installed moves the run on when the
        // installer reports back. A hung installer is not retried: the machine sits in it until
        // someone power-cycles it.
        JobState::Succeeded if step == Step::Install && spec.installer.is_some() => {
            if !timed_out {
                return unchanged(next);
            }
            if o.bmc_uefi.is_some() && !next.stuck_cycled {
                return stuck_cycle(next, task, o);
            }
            let why = format!("the installer did not report back within {} s", spec.step_timeout_secs);
            next.step_failed(why, 0, now);
        }
        JobState::Succeeded => {
            next.advance(spec.route(n_conf, o.bios.is_some(), o.firmware.is_some()), now);
            if step == Step::Reboot {
                next.installed_after_ms = Some(job.finished_at_ms.unwrap_or(now));
                if let (true, Some(uefi)) = (o.bmc_vmedia, o.bmc_uefi) {
                    effects.push(Effect::BootDisk { uefi });
                }
            }
        }
        other => {
            let why = match (&job.error, job.exit_code) {
                (Some(e), _) => e.clone(),
                (None, Some(c)) => format!("exit code {c}"),
                (None, None) => "no exit code".into(),
            };
            let state = serde_json::to_value(other).ok().and_then(|v| v.as_str().map(str::to_string));
            next.step_failed(format!("job {} {}: {why}", job.id, state.unwrap_or_default()), retries, now);
        }
    }
    saved(next, task, effects)
}

/// Ends a decision with the run's write: its machine's state and a timeline event.
fn saved(run: Run, task: &Task, mut effects: Vec<Effect>) -> Decision {
    let state = run.state;
    let machine_state = match state {
        // A failure after the reboot leaves an installed OS: the machine keeps booting it.
        RunState::Failed if !run.step.installed() => MachineState::Failed,
        _ => run.step.machine_state(&task.spec.purpose),
    };
    let detail = json!({
        "task": task.id, "run": run.id, "step": step_name(run.step), "progress": run.progress,
        "state": run.state, "error": run.error,
    });
    let kind = match state {
        RunState::Installed => EventKind::ProvisionInstalled,
        RunState::Done => EventKind::ProvisionDone,
        RunState::Failed => EventKind::ProvisionFailed,
        _ => EventKind::ProvisionStep,
    };
    // An ended run leaves no installer boot behind (a power cycle boots discovery again), nor
    // does one whose installed agent has checked in.
    let installer =
        (state != RunState::Active || !matches!(run.step, Step::Install | Step::WaitInstalled)).then_some(None);
    // A release that does not keep the reservation drops it as the machine goes back to the pool.
    let drop_reservation = state == RunState::Done
        && matches!(task.spec.purpose, crate::provision::Purpose::Release { keep_reservation: false, .. });
    let update = MachineUpdate { state: Some(machine_state), installer, drop_reservation, ..Default::default() };
    effects.push(Effect::Save { update, event: (kind, detail) });
    Decision { run, effects }
}

/// The current step failed (`retries`: how many more tries it gets); the run is saved.
fn fail(mut next: Run, task: &Task, now: u64, why: String, retries: u32) -> Decision {
    next.step_failed(why, retries, now);
    saved(next, task, vec![])
}

/// The run's write with a phase's event: `provision.step` with `detail` (what a BMC step did)
/// merged in, after `effects`.
fn phase_saved(next: Run, task: &Task, mut effects: Vec<Effect>, mut detail: serde_json::Value) -> Decision {
    let mut d = saved(next, task, vec![]);
    if let Some(Effect::Save { event, .. }) = d.effects.last_mut() {
        if let (Some(to), Some(from)) = (event.1.as_object_mut(), detail.as_object_mut()) {
            to.append(from);
        }
    }
    effects.append(&mut d.effects);
    Decision { run: d.run, effects }
}

#[cfg(test)]
mod bios_tests;
#[cfg(test)]
mod day_two_tests;
#[cfg(test)]
mod firmware_inband_tests;
#[cfg(test)]
mod firmware_tests;
#[cfg(test)]
mod power_tests;
#[cfg(test)]
mod tests;
