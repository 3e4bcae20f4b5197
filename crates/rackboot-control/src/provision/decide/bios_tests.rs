//! The BIOS step: written and restarted, BootOS back, read back, on to the next step; all set
//! already (no restart); refused or left different (failed, no retries, named); no Redfish BMC
//! (failed); a lost call or a machine that does not come back (retried).

use rackboot_agent::wire::Inventory;
use serde_json::json;

use super::bios::{BiosCall, BiosObserved, BiosOutcome};
use super::*;
use crate::cmdb::{AgentRecord, Machine};
use rackboot_model::bios::{BiosPhase, FirmwareCert};

const NOW: u64 = 10_000_000_000;

fn task() -> Task {
    let spec = serde_json::from_value(json!({"select": {"next": 1}, "image": "lab.img", "hardware_profile": "r640",
        "step_timeout_secs": 600, "retries": 1}))
    .unwrap();
    Task { v: 1, id: 3, spec, state: super::super::TaskState::Active, created_at_ms: 0, runs: vec![9] }
}

fn seen(now: u64, redfish: bool, outcome: Option<BiosOutcome>) -> Observed {
    let mut m = Machine::new(7, vec!["52:54:00:00:00:07".parse().unwrap()], 0);
    m.inventory = Some(Inventory::default());
    let settings = serde_json::from_value(json!({"ProcTurboMode": "Disabled", "EmbeddedSata": "Ahci"})).unwrap();
    Observed {
        now_ms: now,
        machine: Some(m),
        stats_secs: 30,
        profile_fits: true,
        bmc_uefi: Some(true),
        configure_scripts: 1,
        bios: Some(BiosObserved { settings, certificates: vec![FirmwareCert::HttpsBoot], redfish, outcome }),
        ..Default::default()
    }
}

/// A BootOS agent enrolled at `enrolled_ms` (the firmware step's tests too).
pub(super) fn agent(enrolled_ms: u64) -> AgentRecord {
    serde_json::from_value(json!({"v": 1, "machine_id": 7, "secret_sha256": "", "mode": "bootos", "approved": true,
        "enrolled_at": enrolled_ms / 1000, "version": ""}))
    .unwrap()
}

fn at_bios() -> Run {
    let mut run = Run::new(9, 3, 1, Some(7), NOW - 10_000);
    run.enter(Step::Bios, NOW - 5_000);
    run
}

/// The `provision.step` event a decision saves.
pub(super) fn event(d: &Decision) -> serde_json::Value {
    d.effects
        .iter()
        .find_map(|e| if let Effect::Save { event, .. } = e { Some(event.1.clone()) } else { None })
        .unwrap()
}

#[test]
fn the_check_leads_to_the_bios_step_when_the_profile_declares_settings() {
    let mut run = Run::new(9, 3, 1, Some(7), NOW - 10_000);
    run.enter(Step::Check, NOW - 5_000);
    assert_eq!(decide(&run, &task(), &seen(NOW, true, None)).run.step, Step::Bios);
    let none = Observed { bios: None, ..seen(NOW, true, None) };
    assert_eq!(decide(&run, &task(), &none).run.step, Step::Configure(0), "no settings: no BIOS step");
}

#[test]
fn settings_are_written_the_machine_restarted_and_read_back() {
    let t = task();
    let d = decide(&at_bios(), &t, &seen(NOW, true, None));
    assert_eq!(d.run.bios, Some(BiosPhase::Apply { at_ms: NOW }));
    match &d.effects[0] {
        Effect::Bios(BiosCall::Apply { settings, certificates, uefi: true, at_ms: NOW }) => {
            assert_eq!((settings.len(), certificates.as_slice()), (2, [FirmwareCert::HttpsBoot].as_slice()))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(event(&d)["bios"], "apply");
    assert_eq!(event(&d)["attributes"], json!(["EmbeddedSata", "ProcTurboMode", "certificate https-boot"]));
    // Nothing heard yet: wait.
    assert!(decide(&d.run, &t, &seen(NOW + 1000, true, None)).effects.is_empty());
    // Written and restarted.
    let applied = BiosOutcome::Applied { changed: vec!["ProcTurboMode".into()], restarted_ms: NOW + 20_000 };
    let d = decide(&d.run, &t, &seen(NOW + 21_000, true, Some(applied)));
    assert_eq!(d.run.bios, Some(BiosPhase::Restart { at_ms: NOW + 20_000 }));
    assert_eq!(event(&d)["attributes"], json!(["ProcTurboMode"]));
    // The agent from before the restart does not count; the one after it does.
    let mut o = seen(NOW + 30_000, true, None);
    o.agent = Some(agent(NOW - 60_000));
    assert!(decide(&d.run, &t, &o).effects.is_empty());
    o.agent = Some(agent(NOW + 25_000));
    let d = decide(&d.run, &t, &o);
    assert_eq!(d.run.bios, Some(BiosPhase::Verify { at_ms: NOW + 30_000 }));
    assert!(matches!(&d.effects[0], Effect::Bios(BiosCall::Verify { at_ms, .. }) if *at_ms == NOW + 30_000));
    // Read back as declared: on to the configure scripts.
    let ok = BiosOutcome::Verified { differing: String::new() };
    let d = decide(&d.run, &t, &seen(NOW + 31_000, true, Some(ok)));
    assert_eq!((d.run.step, d.run.bios, d.run.state), (Step::Configure(0), None, RunState::Active));
    assert_eq!(event(&d)["bios"], "verified");
}

#[test]
fn settings_already_in_place_need_no_restart() {
    let t = task();
    let mut run = at_bios();
    run.bios = Some(BiosPhase::Apply { at_ms: NOW });
    let d = decide(&run, &t, &seen(NOW + 1000, true, Some(BiosOutcome::Applied { changed: vec![], restarted_ms: 0 })));
    assert_eq!(d.run.step, Step::Configure(0));
    assert_eq!(event(&d)["bios"], "already set");
}

#[test]
fn a_refused_value_or_one_left_different_fails_the_run_naming_it() {
    let t = task();
    let mut run = at_bios();
    run.bios = Some(BiosPhase::Apply { at_ms: NOW });
    let refused = BiosOutcome::Failed { error: "refused BIOS settings EmbeddedSata: bad value".into(), last: true };
    let d = decide(&run, &t, &seen(NOW + 1000, true, Some(refused)));
    assert_eq!(d.run.state, RunState::Failed, "not retried: the BMC said no");
    assert!(d.run.error.as_deref().unwrap().contains("EmbeddedSata"), "{:?}", d.run.error);

    run.bios = Some(BiosPhase::Verify { at_ms: NOW });
    let left = BiosOutcome::Verified { differing: "EmbeddedSata (wanted \"Ahci\", is \"Raid\")".into() };
    let d = decide(&run, &t, &seen(NOW + 1000, true, Some(left)));
    assert_eq!(d.run.state, RunState::Failed);
    assert_eq!(
        d.run.error.as_deref(),
        Some("bios: after the restart the BMC reports EmbeddedSata (wanted \"Ahci\", is \"Raid\")")
    );
}

#[test]
fn no_redfish_bmc_fails_the_step_saying_why() {
    let t = task();
    let d = decide(&at_bios(), &t, &seen(NOW, false, None));
    assert_eq!(d.run.state, RunState::Failed);
    assert!(d.run.error.as_deref().unwrap().contains("need a Redfish BMC"), "{:?}", d.run.error);
    let d = decide(&at_bios(), &t, &Observed { bmc_uefi: None, ..seen(NOW, true, None) });
    assert!(d.run.error.as_deref().unwrap().contains("no BMC"), "{:?}", d.run.error);
}

#[test]
fn a_lost_call_or_a_machine_that_does_not_come_back_is_tried_again() {
    let t = task();
    let mut run = at_bios();
    run.bios = Some(BiosPhase::Apply { at_ms: NOW });
    // No outcome for the phase (the appliance restarted meanwhile): the call is lost past 300 s.
    let d = decide(&run, &t, &seen(NOW + 300_001, true, None));
    assert_eq!((d.run.state, d.run.failures, d.run.bios), (RunState::Active, 1, None), "{:?}", d.run.error);
    assert!(d.run.error.as_deref().unwrap().contains("no answer from the BMC"));
    // A transient failure is retried too; the retry starts with a new write.
    let busy = BiosOutcome::Failed { error: "the BMC answered 503".into(), last: false };
    let d = decide(&run, &t, &seen(NOW + 1000, true, Some(busy)));
    assert_eq!((d.run.state, d.run.bios), (RunState::Active, None));
    let d = decide(&d.run, &t, &seen(NOW + 2000, true, None));
    assert!(matches!(d.effects[0], Effect::Bios(BiosCall::Apply { .. })));
    // Restarted, and BootOS is not back within the step timeout.
    run.bios = Some(BiosPhase::Restart { at_ms: NOW });
    assert!(decide(&run, &t, &seen(NOW + 600_000, true, None)).effects.is_empty());
    let d = decide(&run, &t, &seen(NOW + 600_001, true, None));
    assert!(d.run.error.as_deref().unwrap().contains("did not come back"), "{:?}", d.run.error);
}
