//! The firmware step without a Redfish BMC: each component a plugin names flashed as a job
//! (delivered once), verified by its check alone, a reboot waited for; a drift no plugin
//! flashes, a failed flash and a flash that did not take fail the run without retries.

use rackboot_agent::wire::{Action, PluginStep};
use serde_json::json;

use super::bios_tests::{agent, event};
use super::firmware::FirmwareObserved;
use super::firmware_tests::{at_firmware, seen, task, NOW};
use super::*;
use crate::jobs::{Job, JobState, NewJob};
use rackboot_model::baseline::FirmwarePhase;

fn plugin(reboot: bool, check_only: bool) -> Action {
    Action::Plugin {
        name: "acme-flash".into(),
        version: "1.0.0".into(),
        vendor: "acme".into(),
        signer: "k".into(),
        sha256: "ab".repeat(32),
        check: PluginStep { run: "bin/check".into(), timeout_secs: 10 },
        apply: PluginStep { run: "bin/apply".into(), timeout_secs: 10 },
        reboot,
        check_only,
        params: json!({}),
    }
}

/// Seen without a Redfish BMC: the BIOS (0) and the NIC (1) flashed by plugins, the BMC (2)
/// left; `job`: the phase's job with its state, exit code and plugin result.
fn inband(now: u64, job: Option<(JobState, Option<i32>, Option<&str>)>, action: Option<Action>) -> Observed {
    let mut o = seen(now, false, None);
    o.bmc_uefi = None;
    o.firmware = Some(FirmwareObserved {
        baseline: "q4".into(),
        components: vec!["bios".into(), "nic".into(), "bmc".into()],
        versions: vec!["1.1.0".into(), "22.1".into(), "7.0".into()],
        plugins: vec![0, 1],
        left: vec!["bmc".into()],
        plugin_result: job.and_then(|j| j.2.map(str::to_string)),
        ..Default::default()
    });
    o.action = action.map(Ok);
    o.job = job.map(|(state, exit_code, _)| {
        let mut j = Job::new(40, 7, NewJob { action: plugin(true, false), timeout_secs: 600, max_attempts: 1 }, now);
        (j.state, j.exit_code) = (state, exit_code);
        j
    });
    o
}

fn in_phase(phase: FirmwarePhase, job: Option<u64>) -> Run {
    let mut run = at_firmware();
    run.firmware = Some(phase);
    run.job = job;
    run
}

fn started(d: &Decision) -> &NewJob {
    d.effects
        .iter()
        .find_map(|e| if let Effect::StartJob { job, .. } = e { Some(job) } else { None })
        .expect("a job started")
}

#[test]
fn each_component_is_flashed_once_then_verified_by_its_check_alone() {
    let t = task();
    let d = decide(&at_firmware(), &t, &inband(NOW, None, None));
    assert_eq!(d.run.firmware, Some(FirmwarePhase::Flash { component: 0, at_ms: NOW }));
    assert_eq!((event(&d)["firmware"].as_str(), event(&d)["left"].clone()), (Some("flash"), json!(["bmc"])));
    // The phase's job, built by the engine, is queued: delivered once.
    let d = decide(&d.run, &t, &inband(NOW + 1, None, Some(plugin(true, false))));
    assert_eq!(started(&d).max_attempts, 1, "a flash is never delivered twice");
    let run = in_phase(FirmwarePhase::Flash { component: 0, at_ms: NOW }, Some(40));
    assert!(decide(&run, &t, &inband(NOW + 2, Some((JobState::Running, None, None)), None)).effects.is_empty());
    // Applied (exit 0): the check alone must now say current.
    let d = decide(&run, &t, &inband(NOW + 3, Some((JobState::Succeeded, Some(0), Some("applied"))), None));
    assert_eq!((d.run.firmware, d.run.job), (Some(FirmwarePhase::Verify { component: 0, at_ms: NOW + 3 }), None));
    let d = decide(&d.run, &t, &inband(NOW + 4, None, Some(plugin(true, true))));
    assert_eq!(started(&d).action, plugin(true, true));
    let run = in_phase(FirmwarePhase::Verify { component: 0, at_ms: NOW + 3 }, Some(40));
    let d = decide(&run, &t, &inband(NOW + 5, Some((JobState::Succeeded, Some(0), Some("unchanged"))), None));
    assert_eq!(d.run.firmware, Some(FirmwarePhase::Flash { component: 1, at_ms: NOW + 5 }), "on to the NIC");
    assert_eq!(event(&d)["firmware"], "verified");
    // The NIC is current already: on to the next step.
    let run = in_phase(FirmwarePhase::Flash { component: 1, at_ms: NOW + 5 }, Some(40));
    let d = decide(&run, &t, &inband(NOW + 6, Some((JobState::Succeeded, Some(0), Some("unchanged"))), None));
    assert_eq!((d.run.step, d.run.firmware), (Step::Install, None));
    assert_eq!((event(&d)["firmware"].as_str(), event(&d)["component"].as_str()), (Some("current"), Some("nic")));
}

#[test]
fn a_flash_that_needs_a_reboot_waits_for_bootos_then_verifies() {
    let t = task();
    let run = in_phase(FirmwarePhase::Flash { component: 0, at_ms: NOW }, Some(40));
    let d = decide(&run, &t, &inband(NOW + 1000, Some((JobState::Succeeded, Some(10), Some("applied_reboot"))), None));
    assert_eq!(d.run.firmware, Some(FirmwarePhase::FlashRestart { component: 0, at_ms: NOW + 1000 }));
    assert!(
        !d.effects.iter().any(|e| matches!(e, Effect::StartJob { .. } | Effect::PowerOn { .. })),
        "it reboots itself"
    );
    let old = Observed { agent: Some(agent(NOW - 60_000)), ..inband(NOW + 2000, None, None) };
    assert!(decide(&d.run, &t, &old).effects.is_empty(), "the BootOS before the reboot does not count");
    let back = Observed { agent: Some(agent(NOW + 30_000)), ..inband(NOW + 31_000, None, None) };
    let v = decide(&d.run, &t, &back);
    assert_eq!(v.run.firmware, Some(FirmwarePhase::Verify { component: 0, at_ms: NOW + 31_000 }));
    let late = decide(&d.run, &t, &inband(NOW + 1000 + 601_000, None, None));
    assert!(late.run.error.unwrap().contains("did not come back"));

    // A plugin that does not reboot the machine itself: the agent reboots it from the network.
    let mut o = inband(NOW + 1000, Some((JobState::Succeeded, Some(10), None)), None);
    o.job.as_mut().unwrap().action = plugin(false, false);
    let d = decide(&run, &t, &o);
    assert_eq!(started(&d).action, Action::Reboot { network: true, disk: None });
    assert!(!d.effects.iter().any(|e| matches!(e, Effect::Save { .. })), "the job's write is the run's");
    // ... or an IPMI BMC does, PXE once and a cycle.
    o.bmc_uefi = Some(true);
    let d = decide(&run, &t, &o);
    assert!(d.effects.contains(&Effect::PowerOn { uefi: true }), "{:?}", d.effects);
}

#[test]
fn a_failed_flash_or_one_that_did_not_take_fails_the_run_without_retries() {
    let t = task();
    let run = in_phase(FirmwarePhase::Flash { component: 0, at_ms: NOW }, Some(40));
    let mut o = inband(NOW + 1000, Some((JobState::Failed, Some(3), Some("failed"))), None);
    o.job.as_mut().unwrap().error = Some("apply exited 3".into());
    let d = decide(&run, &t, &o);
    assert_eq!(d.run.state, RunState::Failed, "3 retries left, none taken");
    assert!(d.run.error.unwrap().contains("the plugin flashing bios failed: apply exited 3"));
    let run = in_phase(FirmwarePhase::Verify { component: 0, at_ms: NOW }, Some(40));
    let mut o = inband(NOW + 1000, Some((JobState::Failed, Some(1), Some("failed"))), None);
    o.job.as_mut().unwrap().error = Some("check exited 1: still not as wanted".into());
    let d = decide(&run, &t, &o);
    assert_eq!(d.run.state, RunState::Failed);
    assert!(d.run.error.unwrap().contains("bios is not at 1.1.0 after the flash: check exited 1"));
    // The action could not be built (a plugin not stored, an image not uploaded): failed.
    let mut o = inband(NOW, None, None);
    o.action = Some(Err("bios 1.1.0: image ab... is not uploaded".into()));
    let d = decide(&in_phase(FirmwarePhase::Flash { component: 0, at_ms: NOW }, None), &t, &o);
    assert_eq!(d.run.state, RunState::Failed);
    // No agent takes the job: cancelled, the step retried.
    let o = inband(NOW + 601_000, Some((JobState::Queued, None, None)), None);
    let d = decide(&in_phase(FirmwarePhase::Flash { component: 0, at_ms: NOW }, Some(40)), &t, &o);
    assert_eq!((d.effects[0].clone(), d.run.state), (Effect::CancelJob(40), RunState::Active));
}

#[test]
fn a_drift_no_plugin_flashes_fails_before_anything_is_flashed() {
    let mut o = inband(NOW, None, None);
    o.firmware.as_mut().unwrap().stuck = vec!["bios: BootOS reads 1.0.0, the baseline wants 1.1.0".into()];
    let d = decide(&at_firmware(), &task(), &o);
    assert_eq!(d.run.state, RunState::Failed);
    assert!(d.run.error.unwrap().contains("BootOS reads 1.0.0"));
    assert!(!d.effects.iter().any(|e| matches!(e, Effect::StartJob { .. })));
    let mut o = inband(NOW, None, None);
    o.firmware.as_mut().unwrap().plugins.clear();
    let d = decide(&at_firmware(), &task(), &o);
    assert!(d.run.error.unwrap().contains("or a signed plugin on its components"), "no plugin: the BMC road's refusal");
}
