//! The power-ups through a machine's BMC a decision asks for: into BootOS while a run waits for
//! its agent, and a power cycle of a step stuck past its timeout.

use serde_json::json;

use super::{saved, step_name, Decision, Effect, Observed, Run, Task, POWER_ATTEMPTS};
use crate::cmdb::{EventKind, MachineUpdate};

/// Powers a machine with a BMC up into BootOS: at once, once more after a step timeout without
/// its agent, then the run fails.
pub(super) fn power_up(mut next: Run, task: &Task, uefi: bool, now: u64) -> Decision {
    let timeout_ms = task.spec.step_timeout_secs.saturating_mul(1000);
    if next.power_requested_ms.is_some_and(|at| now.saturating_sub(at) <= timeout_ms) {
        return Decision { run: next, effects: vec![] };
    }
    if next.power_requests >= POWER_ATTEMPTS {
        let why = format!("no BootOS agent after powering the machine on {POWER_ATTEMPTS} times through its BMC");
        next.step_failed(why, 0, now);
        return saved(next, task, vec![]);
    }
    next.power_requests += 1;
    next.power_requested_ms = Some(now);
    let detail = json!({"task": task.id, "run": next.id, "attempt": next.power_requests, "uefi": uefi});
    let save = Effect::Save { update: MachineUpdate::default(), event: (EventKind::ProvisionPowerOn, detail) };
    Decision { run: next, effects: vec![Effect::PowerOn { uefi }, save] }
}

/// A step stuck past its timeout on a machine with a BMC: power-cycle it once (PXE once, so
/// rackboot's boot script decides what it boots) and give the step another timeout; the job
/// stays (a hung agent's job is delivered again once it is back).
pub(super) fn stuck_cycle(mut next: Run, task: &Task, o: &Observed) -> Decision {
    let uefi = o.bmc_uefi.unwrap_or(true);
    next.stuck_cycled = true;
    next.step_started_ms = o.now_ms;
    let detail = json!({"task": task.id, "run": next.id, "step": step_name(next.step), "uefi": uefi});
    let save = Effect::Save { update: MachineUpdate::default(), event: (EventKind::ProvisionStuckCycle, detail) };
    Decision { run: next, effects: vec![Effect::PowerOn { uefi }, save] }
}
