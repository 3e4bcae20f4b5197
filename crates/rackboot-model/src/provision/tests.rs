use super::*;

/// A route with `configure` and `post` scripts, commissioned first or not.
fn route(purpose: &Purpose, configure: usize, post_install: usize, commission: bool) -> Route<'_> {
    Route { purpose, configure, post_install, commission, bios: false, firmware: false }
}

#[test]
fn steps_run_in_order_with_optional_scripts() {
    let mut s = Step::WaitAgent;
    let mut seen = vec![s];
    while s != Step::Done {
        s = s.next(route(&Purpose::Provision, 2, 1, false));
        seen.push(s);
    }
    assert_eq!(
        seen,
        [
            Step::WaitAgent,
            Step::Check,
            Step::Configure(0),
            Step::Configure(1),
            Step::Install,
            Step::Identity,
            Step::Reboot,
            Step::WaitInstalled,
            Step::PostInstall(0),
            Step::Done
        ]
    );
    assert_eq!(Step::Check.next(route(&Purpose::Provision, 0, 0, false)), Step::Install);
    assert_eq!(Step::WaitInstalled.next(route(&Purpose::Provision, 0, 0, false)), Step::Done);
    let progress: Vec<u8> = seen.iter().map(|s| s.progress()).collect();
    assert!(progress.windows(2).all(|w| w[0] <= w[1]), "progress only grows: {progress:?}");
}

#[test]
fn a_commissioned_install_tests_the_machine_before_configuring_it() {
    use crate::records::MachineState as S;
    let p = Purpose::Provision;
    let r = route(&p, 1, 0, true);
    assert_eq!(Step::Check.next(r), Step::Commission);
    assert_eq!(Step::Commission.next(r), Step::Configure(0));
    assert_eq!(Step::Commission.next(route(&p, 0, 0, true)), Step::Install);
    assert_eq!(Step::Commission.machine_state(&p), S::Commissioning);
    assert_eq!(Step::Check.next(route(&p, 1, 0, false)), Step::Configure(0), "not asked: no tests");
}

#[test]
fn bios_settings_are_applied_after_the_check_and_before_the_tests() {
    use crate::records::MachineState as S;
    let p = Purpose::Provision;
    let r = Route { bios: true, ..route(&p, 1, 0, true) };
    assert_eq!(Step::Check.next(r), Step::Bios);
    assert_eq!(Step::Bios.next(r), Step::Commission);
    assert_eq!(Step::Bios.next(Route { bios: true, ..route(&p, 1, 0, false) }), Step::Configure(0));
    assert_eq!(Step::Bios.next(Route { bios: true, ..route(&p, 0, 0, false) }), Step::Install);
    assert_eq!(Step::Check.next(route(&p, 1, 0, false)), Step::Configure(0), "none declared: no BIOS step");
    assert_eq!(Step::Bios.machine_state(&p), S::Configuring);
    assert!(!Step::Bios.is_job(), "the appliance talks to the BMC itself");
    let mut run = Run::new(1, 1, 1, Some(7), 0);
    run.enter(Step::Bios, 5);
    run.bios = Some(crate::bios::BiosPhase::Restart { at_ms: 6 });
    run.step_failed("refused".into(), 1, 7);
    assert_eq!(run.bios, None, "a retry starts the step over");
    run.bios = Some(crate::bios::BiosPhase::Verify { at_ms: 8 });
    run.advance(r, 9);
    assert_eq!((run.step, run.bios), (Step::Commission, None));
}

#[test]
fn the_firmware_baseline_comes_after_the_check_and_before_the_bios() {
    use crate::baseline::FirmwarePhase;
    let p = Purpose::Provision;
    let r = Route { bios: true, firmware: true, ..route(&p, 0, 0, false) };
    assert_eq!(Step::Check.next(r), Step::Firmware);
    assert_eq!(Step::Firmware.next(r), Step::Bios);
    assert_eq!(Step::Firmware.next(Route { firmware: true, ..route(&p, 1, 0, true) }), Step::Commission);
    assert_eq!(Step::Firmware.next(Route { firmware: true, ..route(&p, 0, 0, false) }), Step::Install);
    assert!(!Step::Firmware.is_job());
    let mut run = Run::new(1, 1, 1, Some(7), 0);
    run.enter(Step::Firmware, 5);
    run.firmware = Some(FirmwarePhase::Restart { at_ms: 6 });
    run.advance(r, 9);
    assert_eq!((run.step, run.firmware), (Step::Bios, None), "the phase is the step's only");
    let json = serde_json::to_value(Step::Firmware).unwrap();
    assert_eq!(json, serde_json::json!({"step": "firmware"}));
}

#[test]
fn a_run_retries_a_failed_step_then_fails() {
    let mut r = Run::new(1, 1, 1, Some(7), 0);
    r.advance(route(&Purpose::Provision, 0, 0, false), 10);
    r.advance(route(&Purpose::Provision, 0, 0, false), 20);
    assert_eq!(r.step, Step::Install);
    r.job = Some(5);
    r.step_failed("checksum mismatch".into(), 1, 30);
    assert_eq!((r.state, r.job, r.failures), (RunState::Active, None, 1));
    r.step_failed("checksum mismatch".into(), 1, 40);
    assert_eq!(r.state, RunState::Failed);
    assert_eq!(r.error.as_deref(), Some("install: checksum mismatch"));
    assert!(!r.cancel(50), "a failed run is final");
}

#[test]
fn a_run_ends_installed() {
    let mut r = Run::new(1, 1, 1, Some(7), 0);
    while r.state == RunState::Active {
        r.advance(route(&Purpose::Provision, 1, 1, false), 5);
    }
    assert_eq!((r.state, r.progress, r.finished_at_ms), (RunState::Installed, 100, Some(5)));
}

#[test]
fn day_two_runs_take_their_own_steps_and_end_done() {
    use crate::records::MachineState as S;
    let walk = |purpose: &Purpose, from: Step| {
        let mut r = Run::new(1, 1, 1, Some(7), 0);
        r.step = from;
        let mut seen = vec![(r.step, r.step.machine_state(purpose))];
        while r.state == RunState::Active && seen.len() < 10 {
            r.advance(route(purpose, 0, 0, false), 5);
            seen.push((r.step, r.step.machine_state(purpose)));
            if r.step == Step::Rescued && seen.len() > 3 {
                break;
            }
        }
        (seen, r.state)
    };
    let quick = Purpose::Release { erase: EraseMode::Quick, keep_reservation: false };
    let (seen, end) = walk(&quick, Step::WaitAgent);
    assert_eq!(seen, [(Step::WaitAgent, S::Releasing), (Step::Erase, S::Releasing), (Step::Done, S::Ready)]);
    assert_eq!(end, RunState::Done);
    let none = Purpose::Release { erase: EraseMode::None, keep_reservation: true };
    assert_eq!(walk(&none, Step::WaitAgent).0, [(Step::WaitAgent, S::Releasing), (Step::Done, S::Ready)]);
    let rescue = Purpose::Rescue { mount: true };
    let (seen, end) = walk(&rescue, Step::WaitAgent);
    assert_eq!(seen[..3], [(Step::WaitAgent, S::Rescue), (Step::Rescue, S::Rescue), (Step::Rescued, S::Rescue)]);
    assert_eq!(seen[3], (Step::Rescued, S::Rescue), "held until the operator returns it");
    assert_eq!(end, RunState::Active);
    // The operator's return enters reboot: the machine boots its disk again.
    let (seen, end) = walk(&rescue, Step::Reboot);
    assert_eq!(seen, [(Step::Reboot, S::Installed), (Step::WaitInstalled, S::Installed), (Step::Done, S::Installed)]);
    assert_eq!(end, RunState::Done);
}

#[test]
fn a_task_spec_keeps_its_purpose_and_an_install_says_none() {
    let spec: TaskSpec =
        serde_json::from_str(r#"{"select":{"macs":[]},"purpose":{"kind":"release","erase":"zero"}}"#).unwrap();
    assert_eq!(spec.purpose, Purpose::Release { erase: EraseMode::Zero, keep_reservation: false });
    let install: TaskSpec = serde_json::from_str(r#"{"select":{"macs":[]},"image":"x.img"}"#).unwrap();
    assert!(install.purpose.is_provision());
    assert!(!serde_json::to_string(&install).unwrap().contains("purpose"));
    let bad =
        serde_json::from_str::<TaskSpec>(r#"{"select":{"macs":[]},"purpose":{"kind":"release","erase":"shred"}}"#);
    assert!(bad.unwrap_err().to_string().contains("unknown variant"));
}

#[test]
fn hostname_patterns() {
    let mac: Mac = "52:54:00:AB:00:01".parse().unwrap();
    assert_eq!(hostname("node-{n:02}", 7, None).unwrap(), "node-07");
    assert_eq!(hostname("node{n}", 12, None).unwrap(), "node12");
    assert_eq!(hostname("r1-{n:3}-x", 5, None).unwrap(), "r1-005-x");
    assert_eq!(hostname("m-{mac}", 1, Some(mac)).unwrap(), "m-525400ab0001");
    assert_eq!(hostname("Web-{n}", 1, None).unwrap(), "web-1");
    assert!(hostname("node-{x}", 1, None).unwrap_err().contains("unknown field"));
    assert!(hostname("node-{n", 1, None).unwrap_err().contains("unclosed"));
    assert!(hostname("bad_{n}", 1, None).unwrap_err().contains("not a valid hostname"));
    assert!(hostname("m-{mac}", 1, None).is_err());
}

#[test]
fn ip_plan_skips_taken_addresses() {
    let pool = parse_pool("198.18.0.50-198.18.0.53").unwrap();
    let taken = |ip: Ipv4Addr| ip == Ipv4Addr::new(198, 18, 0, 51);
    assert_eq!(ip_from_pool(pool, &taken, 1), Some(Ipv4Addr::new(198, 18, 0, 50)));
    assert_eq!(ip_from_pool(pool, &taken, 2), Some(Ipv4Addr::new(198, 18, 0, 52)));
    assert_eq!(ip_from_pool(pool, &taken, 3), Some(Ipv4Addr::new(198, 18, 0, 53)));
    assert_eq!(ip_from_pool(pool, &taken, 4), None, "pool exhausted");
    assert_eq!(ip_from_pool(pool, &taken, 0), None);
    assert!(parse_pool("198.18.0.9-198.18.0.1").is_err());
    assert!(parse_pool("10.0.0.1").is_err());
}

#[test]
fn hardware_profiles_match_vendor_and_model() {
    let v = vec!["QEMU".to_string()];
    assert!(profile_fits(&v, &[], Some("QEMU"), Some("Standard PC")));
    assert!(profile_fits(&[], &["r640".into()], Some("Dell Inc."), Some("PowerEdge R640")));
    assert!(!profile_fits(&v, &[], Some("Dell Inc."), None));
    assert!(!profile_fits(&v, &[], None, None));
    assert!(profile_fits(&[], &[], None, None));
}

#[test]
fn task_specs_parse_with_defaults() {
    let spec: TaskSpec = serde_json::from_value(serde_json::json!({
        "select": {"macs": ["52:54:00:00:00:01"]}, "image": "lab.img"
    }))
    .unwrap();
    assert_eq!((spec.disk.as_str(), spec.concurrency, spec.retries, spec.step_timeout_secs), ("auto", 10, 1, 1800));
    let next: TaskSpec = serde_json::from_value(serde_json::json!({"select": {"next": 3}, "image": "x"})).unwrap();
    assert_eq!(next.select, Selector::Next(3));
    assert!(serde_json::from_value::<TaskSpec>(serde_json::json!({"select": {"next": 3}, "image": "x", "typo": 1}))
        .is_err());
}
