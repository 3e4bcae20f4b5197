//! The BIOS step's decisions (the profile's attributes and firmware certificates). The engine
//! talks to the BMC in the background; the run keeps which phase it is in ([`BiosPhase`]), so a
//! restart of the appliance resumes it:
//!
//! | phase | when | next | effects |
//! |---|---|---|---|
//! | - | no Redfish BMC | failed (no retries) | save |
//! | - | always | apply | write the settings, restart into BootOS (PXE once), save |
//! | apply | all were set already | the next step | save |
//! | apply | written and restarted | restart | save |
//! | apply | refused (a value, an attribute the BMC lacks) | failed (no retries) | save |
//! | apply | another failure, or no answer within [`BMC_CALL_SECS`] | retry or failed | save |
//! | restart | BootOS enrolled after the restart | verify | read the attributes back, save |
//! | restart | past the step timeout | retry or failed | save |
//! | verify | all as declared | the next step | save |
//! | verify | some differ | failed (no retries), naming them | save |
//! | verify | the read failed, or no answer within [`BMC_CALL_SECS`] | retry or failed | save |

use serde_json::json;

use super::{fail, phase_saved, saved, Decision, Effect, Observed};
use crate::cmdb::AgentRecord;
use crate::provision::{Run, Task};
use rackboot_agent::wire::AgentMode;
use rackboot_model::bios::{BiosPhase, FirmwareCert, Settings};

/// How long a BMC call of the step may take before it counts as lost (an appliance restart
/// loses a call in flight): each request under it has its own deadline.
pub const BMC_CALL_SECS: u64 = 300;

/// What the engine read for a run whose hardware profile declares BIOS settings.
#[derive(Debug, Clone, Default)]
pub struct BiosObserved {
    pub settings: Settings,
    /// The certificates the profile puts into the firmware.
    pub certificates: Vec<FirmwareCert>,
    /// The machine's BMC speaks Redfish (only Redfish has BIOS attributes).
    pub redfish: bool,
    /// What the BMC call of the run's current phase came to, once it did.
    pub outcome: Option<BiosOutcome>,
}

/// What a BMC call of the BIOS step came to.
#[derive(Debug, Clone, PartialEq)]
pub enum BiosOutcome {
    /// The attributes written (none: all were set already) and, if any, when the machine was
    /// restarted into BootOS.
    Applied { changed: Vec<String>, restarted_ms: u64 },
    /// Read back: the declared attributes that differ (empty: all as declared).
    Verified { differing: String },
    /// The call failed; `last`: the BMC refused what was declared, trying again cannot help.
    Failed { error: String, last: bool },
}

/// A BMC call the engine makes for the step, in the background.
#[derive(Debug, Clone, PartialEq)]
pub enum BiosCall {
    /// Write the settings that differ and the certificates the firmware lacks, then PXE once
    /// and restart.
    Apply { settings: Settings, certificates: Vec<FirmwareCert>, uefi: bool, at_ms: u64 },
    /// Read the attributes and the certificates back and compare.
    Verify { settings: Settings, certificates: Vec<FirmwareCert>, at_ms: u64 },
}

impl BiosCall {
    /// The certificates the call puts in or reads back.
    pub fn certificates(&self) -> &[FirmwareCert] {
        match self {
            BiosCall::Apply { certificates, .. } | BiosCall::Verify { certificates, .. } => certificates,
        }
    }

    /// When the call was asked for (the phase it answers).
    pub fn at_ms(&self) -> u64 {
        match self {
            BiosCall::Apply { at_ms, .. } | BiosCall::Verify { at_ms, .. } => *at_ms,
        }
    }
}

/// Decides a run at the BIOS step.
pub(super) fn step(mut next: Run, task: &Task, o: &Observed, agent: Option<&AgentRecord>) -> Decision {
    let (spec, now) = (&task.spec, o.now_ms);
    let route = spec.route(o.configure_scripts, o.bios.is_some(), o.firmware.is_some());
    let profile = spec.hardware_profile.clone().unwrap_or_default();
    let Some(b) = &o.bios else {
        // The profile no longer declares any: nothing to apply.
        next.advance(route, now);
        return saved(next, task, vec![]);
    };
    let declares = format!("hardware profile {profile:?} declares BIOS settings or firmware certificates");
    let uefi = match (o.bmc_uefi, b.redfish) {
        (Some(uefi), true) => uefi,
        (None, _) => return fail(next, task, now, format!("{declares}, and the machine has no BMC to set them"), 0),
        (Some(_), false) => {
            return fail(next, task, now, format!("{declares}, which need a Redfish BMC: this one is IPMI"), 0)
        }
    };
    let timeout_ms = spec.step_timeout_secs.saturating_mul(1000);
    let call_ms = timeout_ms.min(BMC_CALL_SECS * 1000);
    let retries = spec.retries;
    let mut names: Vec<String> = b.settings.keys().cloned().collect();
    names.extend(b.certificates.iter().map(|c| format!("certificate {}", c.as_str())));
    let wait = |next: Run| Decision { run: next, effects: vec![] };
    let Some(phase) = next.bios else {
        next.bios = Some(BiosPhase::Apply { at_ms: now });
        let (settings, certificates) = (b.settings.clone(), b.certificates.clone());
        let call = BiosCall::Apply { settings, certificates, uefi, at_ms: now };
        return phase_saved(next, task, vec![Effect::Bios(call)], json!({"bios": "apply", "attributes": names}));
    };
    let since = now.saturating_sub(phase.at_ms());
    match (phase, &b.outcome) {
        (_, Some(BiosOutcome::Failed { error, last })) => {
            fail(next, task, now, error.clone(), if *last { 0 } else { retries })
        }
        (BiosPhase::Apply { .. }, Some(BiosOutcome::Applied { changed, .. })) if changed.is_empty() => {
            next.advance(route, now);
            phase_saved(next, task, vec![], json!({"bios": "already set", "attributes": names}))
        }
        (BiosPhase::Apply { .. }, Some(BiosOutcome::Applied { changed, restarted_ms })) => {
            next.bios = Some(BiosPhase::Restart { at_ms: *restarted_ms });
            phase_saved(next, task, vec![], json!({"bios": "written", "attributes": changed}))
        }
        (BiosPhase::Restart { at_ms }, _) => {
            let back =
                agent.is_some_and(|a| a.approved && a.mode == AgentMode::Bootos && a.enrolled_at >= at_ms / 1000);
            if back {
                next.bios = Some(BiosPhase::Verify { at_ms: now });
                let (settings, certificates) = (b.settings.clone(), b.certificates.clone());
                let call = BiosCall::Verify { settings, certificates, at_ms: now };
                phase_saved(next, task, vec![Effect::Bios(call)], json!({"bios": "verify"}))
            } else if since > timeout_ms {
                let why = format!(
                    "BootOS did not come back within {} s of the restart for the BIOS settings",
                    spec.step_timeout_secs
                );
                fail(next, task, now, why, retries)
            } else {
                wait(next)
            }
        }
        (BiosPhase::Verify { .. }, Some(BiosOutcome::Verified { differing })) if differing.is_empty() => {
            next.advance(route, now);
            phase_saved(next, task, vec![], json!({"bios": "verified", "attributes": names}))
        }
        (BiosPhase::Verify { .. }, Some(BiosOutcome::Verified { differing })) => {
            fail(next, task, now, format!("after the restart the BMC reports {differing}"), 0)
        }
        (_, None) if since > call_ms => {
            fail(next, task, now, format!("no answer from the BMC within {} s", call_ms / 1000), retries)
        }
        _ => wait(next),
    }
}
