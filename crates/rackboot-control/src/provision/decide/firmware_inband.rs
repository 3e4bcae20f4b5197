//! The firmware step on a machine without a Redfish BMC: each baseline component that names a
//! signed vendor plugin is flashed in BootOS by that plugin, as the run's job, one component
//! after another, and verified after by the plugin's check alone. Components no plugin flashes
//! are left as they are, unless BootOS sees them drift (its DMI BIOS version): then the step
//! cannot bring the machine to its baseline and fails before anything is flashed.
//!
//! | phase | when | next | effects |
//! |---|---|---|---|
//! | - | a component drifts that no plugin flashes | failed (no retries) | save |
//! | - | always | flash (the first component with a plugin) | save |
//! | flash, verify | no job, the action cannot be built | failed (no retries) | save |
//! | flash, verify | no job | same | start the job (a flash is delivered once) |
//! | flash, verify | job queued past the step timeout | failed | cancel the job, save |
//! | flash | unchanged (check exit 0) or not applicable (20) | flash (the next component) / the next step | save |
//! | flash | applied (apply exit 0) | verify | save |
//! | flash | applied, reboot needed (apply exit 10) | flash_restart | the plugin reboots BootOS; else PXE once and a cycle through an IPMI BMC, else a reboot job |
//! | flash | failed | failed (no retries: a flash is never tried twice by itself) | save |
//! | flash_restart | BootOS enrolled after the reboot | verify | save |
//! | flash_restart | past the step timeout | retry or failed | save |
//! | verify | check exit 0 or 20 | flash (the next component) / the next step | save |
//! | verify | check exit 1, or any failure | failed (no retries), naming the component | save |

use serde_json::{json, Value};

use super::firmware::FirmwareObserved;
use super::{fail, phase_saved, Decision, Effect, Observed, JOB_ATTEMPTS};
use crate::cmdb::{AgentRecord, EventKind, MachineUpdate};
use crate::jobs::{Job, JobState, NewJob};
use crate::provision::{Run, Task};
use rackboot_agent::wire::{Action, AgentMode};
use rackboot_model::baseline::FirmwarePhase;

/// What a plugin job of the step ended with, as its `plugin.result` event says.
pub const UNCHANGED: &str = "unchanged";
pub const NOT_APPLICABLE: &str = "not_applicable";

/// Decides a firmware step that plugins carry out in BootOS.
pub(super) fn step(
    mut next: Run,
    task: &Task,
    o: &Observed,
    agent: Option<&AgentRecord>,
    f: &FirmwareObserved,
) -> Decision {
    let (spec, now) = (&task.spec, o.now_ms);
    let name = |c: usize| f.components.get(c).cloned().unwrap_or_else(|| format!("component {c}"));
    let Some(phase) = next.firmware else {
        if !f.stuck.is_empty() {
            let why =
                format!("{}; no plugin flashes it in BootOS and the machine has no Redfish BMC", f.stuck.join("; "));
            return fail(next, task, now, why, 0);
        }
        let Some(&first) = f.plugins.first() else {
            return fail(next, task, now, "no component of the baseline names a plugin".into(), 0);
        };
        next.firmware = Some(FirmwarePhase::Flash { component: first, at_ms: now });
        let detail = json!({"firmware": "flash", "baseline": f.baseline, "component": name(first), "left": f.left});
        return phase_saved(next, task, vec![], detail);
    };
    let queued_too_long = |job: &Job| {
        job.state == JobState::Queued && now.saturating_sub(phase.at_ms()) > spec.step_timeout_secs.saturating_mul(1000)
    };
    match (phase, next.job, &o.job) {
        (FirmwarePhase::Flash { component, .. } | FirmwarePhase::Verify { component, .. }, None, _) => {
            start(next, task, o, phase, &name(component))
        }
        (FirmwarePhase::Flash { component, .. } | FirmwarePhase::Verify { component, .. }, Some(id), Some(job))
            if job.id == id =>
        {
            if queued_too_long(job) {
                let why =
                    format!("no agent took the plugin job for {} within {} s", name(component), spec.step_timeout_secs);
                let mut d = fail(next, task, now, why, spec.retries);
                d.effects.insert(0, Effect::CancelJob(job.id));
                return d;
            }
            match phase {
                FirmwarePhase::Flash { .. } => flashed(next, task, o, f, component, job),
                _ => verified(next, task, o, f, component, job),
            }
        }
        (FirmwarePhase::FlashRestart { component, at_ms }, _, _) => {
            let back =
                agent.is_some_and(|a| a.approved && a.mode == AgentMode::Bootos && a.enrolled_at >= at_ms / 1000);
            if back {
                next.firmware = Some(FirmwarePhase::Verify { component, at_ms: now });
                next.job = None;
                let detail = json!({"firmware": "verify", "baseline": f.baseline, "component": name(component)});
                phase_saved(next, task, vec![], detail)
            } else if now.saturating_sub(at_ms) > spec.step_timeout_secs.saturating_mul(1000) {
                let why =
                    format!("BootOS did not come back within {} s of the plugin's reboot", spec.step_timeout_secs);
                fail(next, task, now, why, spec.retries)
            } else {
                Decision { run: next, effects: vec![] }
            }
        }
        // The step's job was not read (or is another's): nothing is known, nothing is done.
        _ => Decision { run: next, effects: vec![] },
    }
}

/// A flash or verify phase without its job: queue it.
fn start(mut next: Run, task: &Task, o: &Observed, phase: FirmwarePhase, component: &str) -> Decision {
    let (spec, now) = (&task.spec, o.now_ms);
    let action = match o.action.clone() {
        Some(Ok(a)) => a,
        Some(Err(why)) => return fail(next, task, now, format!("{component}: {why}"), 0),
        None => return fail(next, task, now, format!("{component}: the plugin's action was not built"), 0),
    };
    let verify = matches!(phase, FirmwarePhase::Verify { .. });
    // A flash is delivered once: an agent that vanished mid-flash is never handed it again.
    let max_attempts = if verify { JOB_ATTEMPTS } else { 1 };
    let job = NewJob { action, timeout_secs: spec.step_timeout_secs, max_attempts };
    let detail = json!({
        "task": task.id, "run": next.id, "step": "firmware", "progress": next.progress,
        "firmware": if verify { "verify" } else { "flash" }, "component": component,
    });
    next.job = None;
    job_started(next, job, detail)
}

/// The run with `job` queued for it (stored with the job, `detail` its event).
fn job_started(run: Run, job: NewJob, detail: Value) -> Decision {
    let event = (EventKind::ProvisionStep, detail);
    let start = Effect::StartJob { job, event, update: MachineUpdate::default(), installer: None };
    Decision { run, effects: vec![start] }
}

/// The next component's flash, or the next step: after component `done`.
fn onward(mut next: Run, task: &Task, o: &Observed, f: &FirmwareObserved, done: usize, mut detail: Value) -> Decision {
    let now = o.now_ms;
    detail["baseline"] = json!(f.baseline);
    match f.plugins.iter().copied().find(|&c| c > done) {
        Some(c) => {
            next.firmware = Some(FirmwarePhase::Flash { component: c, at_ms: now });
            next.job = None;
        }
        None => next.advance(task.spec.route(o.configure_scripts, o.bios.is_some(), true), now),
    }
    phase_saved(next, task, vec![], detail)
}

/// Why a job did not succeed, in a few words.
fn job_error(job: &Job) -> String {
    match (&job.error, job.exit_code) {
        (Some(e), _) => e.clone(),
        (None, Some(c)) => format!("exit code {c}"),
        (None, None) => format!("the job ended {:?}", job.state).to_lowercase(),
    }
}

/// A flash job: wait for it, or read what it did.
fn flashed(mut next: Run, task: &Task, o: &Observed, f: &FirmwareObserved, c: usize, job: &Job) -> Decision {
    let now = o.now_ms;
    let name = f.components.get(c).cloned().unwrap_or_default();
    match job.state {
        JobState::Queued | JobState::Running => return Decision { run: next, effects: vec![] },
        JobState::Succeeded => {}
        _ => {
            let why = format!("the plugin flashing {name} failed: {}", job_error(job));
            return fail(next, task, now, why, 0);
        }
    }
    let result = f.plugin_result.as_deref();
    if job.exit_code == Some(20) || result == Some(NOT_APPLICABLE) {
        return onward(next, task, o, f, c, json!({"firmware": "not_applicable", "component": name}));
    }
    if job.exit_code == Some(0) && result == Some(UNCHANGED) {
        return onward(next, task, o, f, c, json!({"firmware": "current", "component": name}));
    }
    if job.exit_code != Some(10) {
        // Applied (or not known to be unchanged): its check alone must now say current.
        next.firmware = Some(FirmwarePhase::Verify { component: c, at_ms: now });
        next.job = None;
        let detail = json!({"firmware": "flashed", "baseline": f.baseline, "component": name});
        return phase_saved(next, task, vec![], detail);
    }
    // Applied; the new firmware takes effect at a reboot, into BootOS again.
    next.firmware = Some(FirmwarePhase::FlashRestart { component: c, at_ms: now });
    next.job = None;
    let detail = json!({"firmware": "flashed", "restart": true, "baseline": f.baseline, "component": name});
    if matches!(job.action, Action::Plugin { reboot: true, .. }) {
        return phase_saved(next, task, vec![], detail);
    }
    if let Some(uefi) = o.bmc_uefi {
        return phase_saved(next, task, vec![Effect::PowerOn { uefi }], detail);
    }
    // The plugin does not reboot the machine itself and nothing else can: its agent does,
    // from the network once (the run is stored with the job; its phase waits for BootOS).
    let mut detail = detail;
    if let Some(d) = detail.as_object_mut() {
        d.extend([("task".into(), json!(task.id)), ("run".into(), json!(next.id)), ("step".into(), json!("firmware"))]);
    }
    let job = NewJob {
        action: Action::Reboot { network: true, disk: None },
        timeout_secs: task.spec.step_timeout_secs,
        max_attempts: JOB_ATTEMPTS,
    };
    job_started(next, job, detail)
}

/// A verify job (the plugin's check alone): wait for it, or go on when it says current.
fn verified(next: Run, task: &Task, o: &Observed, f: &FirmwareObserved, c: usize, job: &Job) -> Decision {
    let name = f.components.get(c).cloned().unwrap_or_default();
    let wanted = f.versions.get(c).cloned().unwrap_or_default();
    match job.state {
        JobState::Queued | JobState::Running => Decision { run: next, effects: vec![] },
        JobState::Succeeded => onward(next, task, o, f, c, json!({"firmware": "verified", "component": name})),
        _ => {
            let why = format!("{name} is not at {wanted} after the flash: {}", job_error(job));
            fail(next, task, o.now_ms, why, 0)
        }
    }
}
