//! The firmware step's decisions (the hardware profile's baseline); a machine without a
//! Redfish BMC takes the plugins' road (see `firmware_inband`). The engine runs the update
//! in the background (`firmware::Firmware::update`: read, flash what drifts, restart into BootOS
//! where a component waits for it, read back until current); the run keeps which phase it is in
//! ([`FirmwarePhase`]):
//!
//! | phase | when | next | effects |
//! |---|---|---|---|
//! | - | no Redfish BMC, a component names a plugin | (see `firmware_inband`) | |
//! | - | no Redfish BMC | failed (no retries) | save |
//! | - | always | update | start the update, save |
//! | update | current, nothing restarted | the next step | save |
//! | update | updated and restarted into BootOS | restart | save |
//! | update | failed (a flash, the read-back, the restart) | failed (no retries: a flash is never tried twice by itself) | save |
//! | update | no update runs for it (the appliance restarted meanwhile) | failed (no retries), saying so | save |
//! | restart | BootOS enrolled after the restart | the next step | save |
//! | restart | past the step timeout | retry or failed | save |

use serde_json::json;

use super::{fail, phase_saved, saved, Decision, Effect, Observed};
use crate::cmdb::AgentRecord;
use crate::provision::{Run, Task};
use rackboot_agent::wire::AgentMode;
use rackboot_model::baseline::FirmwarePhase;

/// What the engine read for a run whose hardware profile names a firmware baseline.
#[derive(Debug, Clone, Default)]
pub struct FirmwareObserved {
    pub baseline: String,
    /// The machine's BMC speaks Redfish (updates go through its UpdateService).
    pub redfish: bool,
    /// The update asked for in the run's current phase: `None` when none runs nor ended (it was
    /// lost to a restart of the appliance).
    pub outcome: Option<FirmwareOutcome>,
    /// The baseline's components (`bios`, `nic`, ...) and the versions they want, by index.
    pub components: Vec<String>,
    pub versions: Vec<String>,
    /// Without a Redfish BMC: the components a plugin flashes in BootOS (indices, in order).
    pub plugins: Vec<usize>,
    /// Without a Redfish BMC: components no plugin flashes that BootOS sees drift (why).
    pub stuck: Vec<String>,
    /// Without a Redfish BMC: components no plugin flashes, left as they are.
    pub left: Vec<String>,
    /// The ended plugin job of the current phase: its `plugin.result` (`unchanged`, ...).
    pub plugin_result: Option<String>,
}

/// Where an update the step asked for is.
#[derive(Debug, Clone, PartialEq)]
pub enum FirmwareOutcome {
    Running,
    /// The machine is at its baseline; `restarted_ms`: when it was restarted into BootOS for it.
    Done {
        flashed: Vec<String>,
        restarted_ms: Option<u64>,
    },
    Failed(String),
}

/// The update the engine starts for the step.
#[derive(Debug, Clone, PartialEq)]
pub struct FirmwareCall {
    pub baseline: String,
    pub uefi: bool,
    pub at_ms: u64,
}

/// Decides a run at the firmware step.
pub(super) fn step(mut next: Run, task: &Task, o: &Observed, agent: Option<&AgentRecord>) -> Decision {
    let (spec, now) = (&task.spec, o.now_ms);
    let route = spec.route(o.configure_scripts, o.bios.is_some(), o.firmware.is_some());
    let Some(f) = &o.firmware else {
        // The profile no longer names a baseline: nothing to bring the machine to.
        next.advance(route, now);
        return saved(next, task, vec![]);
    };
    let names = format!(
        "hardware profile {:?} names firmware baseline {:?}",
        spec.hardware_profile.clone().unwrap_or_default(),
        f.baseline
    );
    let hint = "(or a signed plugin on its components, to flash them in BootOS)";
    let uefi = match (o.bmc_uefi, f.redfish) {
        (Some(uefi), true) => uefi,
        (_, false) if !f.plugins.is_empty() => return super::firmware_inband::step(next, task, o, agent, f),
        (None, _) => {
            return fail(next, task, now, format!("{names}, and the machine has no BMC to update it through {hint}"), 0)
        }
        (Some(_), false) => {
            return fail(next, task, now, format!("{names}, which needs a Redfish BMC {hint}: this one is IPMI"), 0)
        }
    };
    let Some(phase) = next.firmware else {
        next.firmware = Some(FirmwarePhase::Update { at_ms: now });
        let call = FirmwareCall { baseline: f.baseline.clone(), uefi, at_ms: now };
        return phase_saved(
            next,
            task,
            vec![Effect::Firmware(call)],
            json!({"firmware": "update", "baseline": f.baseline}),
        );
    };
    match (phase, &f.outcome) {
        // The BMC came after a plugin's flash began (or went): the plugins' road goes on.
        (
            FirmwarePhase::Flash { .. } | FirmwarePhase::FlashRestart { .. } | FirmwarePhase::Verify { .. },
            _,
        ) => super::firmware_inband::step(next, task, o, agent, f),
        (FirmwarePhase::Update { .. }, Some(FirmwareOutcome::Running)) => Decision { run: next, effects: vec![] },
        (FirmwarePhase::Update { .. }, None) => fail(
            next,
            task,
            now,
            "the appliance restarted while the firmware update ran: the BMC's task may still run; look at the machine's firmware drift before starting it again".into(),
            0,
        ),
        (FirmwarePhase::Update { .. }, Some(FirmwareOutcome::Failed(why))) => fail(next, task, now, why.clone(), 0),
        (FirmwarePhase::Update { .. }, Some(FirmwareOutcome::Done { flashed, restarted_ms: Some(at) })) => {
            next.firmware = Some(FirmwarePhase::Restart { at_ms: *at });
            phase_saved(next, task, vec![], json!({"firmware": "updated", "components": flashed, "baseline": f.baseline}))
        }
        (FirmwarePhase::Update { .. }, Some(FirmwareOutcome::Done { flashed, restarted_ms: None })) => {
            let what = if flashed.is_empty() { "current" } else { "updated" };
            next.advance(route, now);
            phase_saved(next, task, vec![], json!({"firmware": what, "components": flashed, "baseline": f.baseline}))
        }
        (FirmwarePhase::Restart { at_ms }, _) => {
            let back = agent.is_some_and(|a| a.approved && a.mode == AgentMode::Bootos && a.enrolled_at >= at_ms / 1000);
            if back {
                next.advance(route, now);
                phase_saved(next, task, vec![], json!({"firmware": "verified", "baseline": f.baseline}))
            } else if now.saturating_sub(at_ms) > spec.step_timeout_secs.saturating_mul(1000) {
                let why = format!("BootOS did not come back within {} s of the restart for the firmware", spec.step_timeout_secs);
                fail(next, task, now, why, spec.retries)
            } else {
                Decision { run: next, effects: vec![] }
            }
        }
    }
}
