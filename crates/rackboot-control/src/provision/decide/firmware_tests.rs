//! The firmware step: started, current at once (on to the BIOS step), flashed and restarted
//! into BootOS (on once BootOS is back), a failed flash or one lost to an appliance restart
//! (failed, never retried), no Redfish BMC (failed).

use rackboot_agent::wire::Inventory;
use serde_json::json;

use super::bios_tests::{agent, event};
use super::firmware::{FirmwareCall, FirmwareObserved, FirmwareOutcome};
use super::*;
use crate::cmdb::Machine;
use rackboot_model::baseline::FirmwarePhase;

pub(super) const NOW: u64 = 10_000_000_000;

pub(super) fn task() -> Task {
    let spec = serde_json::from_value(json!({"select": {"next": 1}, "image": "lab.img", "hardware_profile": "r650",
        "step_timeout_secs": 600, "retries": 3}))
    .unwrap();
    Task { v: 1, id: 3, spec, state: super::super::TaskState::Active, created_at_ms: 0, runs: vec![9] }
}

pub(super) fn seen(now: u64, redfish: bool, outcome: Option<FirmwareOutcome>) -> Observed {
    let mut m = Machine::new(7, vec!["52:54:00:00:00:07".parse().unwrap()], 0);
    m.inventory = Some(Inventory::default());
    Observed {
        now_ms: now,
        machine: Some(m),
        stats_secs: 30,
        profile_fits: true,
        bmc_uefi: Some(false),
        firmware: Some(FirmwareObserved { baseline: "q4".into(), redfish, outcome, ..Default::default() }),
        ..Default::default()
    }
}

pub(super) fn at_firmware() -> Run {
    let mut run = Run::new(9, 3, 1, Some(7), NOW - 10_000);
    run.enter(Step::Firmware, NOW - 5_000);
    run
}

#[test]
fn the_check_leads_to_the_firmware_step_when_the_profile_names_a_baseline() {
    let mut run = Run::new(9, 3, 1, Some(7), NOW - 10_000);
    run.enter(Step::Check, NOW - 5_000);
    assert_eq!(decide(&run, &task(), &seen(NOW, true, None)).run.step, Step::Firmware);
    let none = Observed { firmware: None, ..seen(NOW, true, None) };
    assert_eq!(decide(&run, &task(), &none).run.step, Step::Install, "no baseline: no firmware step");
}

#[test]
fn a_machine_already_current_goes_on_at_once() {
    let t = task();
    let d = decide(&at_firmware(), &t, &seen(NOW, true, None));
    assert_eq!(d.run.firmware, Some(FirmwarePhase::Update { at_ms: NOW }));
    assert_eq!(d.effects[0], Effect::Firmware(FirmwareCall { baseline: "q4".into(), uefi: false, at_ms: NOW }));
    assert_eq!(event(&d)["firmware"], "update");
    let running = decide(&d.run, &t, &seen(NOW + 1000, true, Some(FirmwareOutcome::Running)));
    assert!(running.effects.is_empty(), "an update runs: wait");
    let done = FirmwareOutcome::Done { flashed: vec![], restarted_ms: None };
    let d = decide(&d.run, &t, &seen(NOW + 2000, true, Some(done)));
    assert_eq!((d.run.step, d.run.firmware), (Step::Install, None));
    assert_eq!(event(&d)["firmware"], "current");
}

#[test]
fn a_flash_that_needs_a_restart_waits_for_bootos_to_come_back() {
    let t = task();
    let mut run = at_firmware();
    run.firmware = Some(FirmwarePhase::Update { at_ms: NOW });
    let done = FirmwareOutcome::Done { flashed: vec!["bios".into()], restarted_ms: Some(NOW + 3000) };
    let d = decide(&run, &t, &seen(NOW + 4000, true, Some(done)));
    assert_eq!((d.run.step, d.run.firmware), (Step::Firmware, Some(FirmwarePhase::Restart { at_ms: NOW + 3000 })));
    assert_eq!(event(&d)["firmware"], "updated");
    assert_eq!(event(&d)["components"], json!(["bios"]));
    let before = Observed { agent: Some(agent(NOW - 60_000)), ..seen(NOW + 5000, true, None) };
    assert!(decide(&d.run, &t, &before).effects.is_empty(), "the old BootOS does not count");
    let back = Observed { agent: Some(agent(NOW + 20_000)), ..seen(NOW + 21_000, true, None) };
    let next = decide(&d.run, &t, &back);
    assert_eq!(next.run.step, Step::Install);
    assert_eq!(event(&next)["firmware"], "verified");
    let late = decide(&d.run, &t, &seen(NOW + 3000 + 601_000, true, None));
    assert!(late.run.error.unwrap().contains("did not come back"), "past the step timeout: retried");
}

#[test]
fn a_failed_or_lost_flash_fails_the_run_without_retries() {
    let t = task();
    let mut run = at_firmware();
    run.firmware = Some(FirmwarePhase::Update { at_ms: NOW });
    let failed = FirmwareOutcome::Failed("the BMC's update ended Exception: Image verification failed".into());
    let d = decide(&run, &t, &seen(NOW + 1000, true, Some(failed)));
    assert_eq!(d.run.state, RunState::Failed, "3 retries left, none taken: {:?}", d.run);
    assert!(d.run.error.unwrap().contains("Image verification failed"));
    let d = decide(&run, &t, &seen(NOW + 1000, true, None));
    assert_eq!(d.run.state, RunState::Failed);
    assert!(d.run.error.unwrap().contains("the appliance restarted while the firmware update ran"));
}

#[test]
fn without_a_redfish_bmc_the_step_fails_naming_the_baseline() {
    let d = decide(&at_firmware(), &task(), &seen(NOW, false, None));
    assert_eq!(d.run.state, RunState::Failed);
    assert!(d.run.error.unwrap().contains("baseline \"q4\", which needs a Redfish BMC"));
    let no_bmc = Observed { bmc_uefi: None, ..seen(NOW, true, None) };
    let d = decide(&at_firmware(), &task(), &no_bmc);
    assert!(d.run.error.unwrap().contains("no BMC to update it through"));
}
