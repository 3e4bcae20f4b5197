//! wait_agent with a BMC: powered up at once, once more after a step timeout, then failed;
//! a live agent needs no power; a machine without a BMC keeps waiting as before; a reinstall
//! goes back into BootOS through the BMC.

use rackboot_agent::wire::Inventory;
use serde_json::json;

use super::*;
use crate::cmdb::{AgentRecord, Machine};

const NOW: u64 = 10_000_000_000;

fn task() -> Task {
    let spec = serde_json::from_value(
        json!({"select": {"next": 1}, "image": "lab.img", "step_timeout_secs": 600, "retries": 0}),
    )
    .unwrap();
    Task { v: 1, id: 3, spec, state: super::super::TaskState::Active, created_at_ms: 0, runs: vec![9] }
}

fn seen(bmc_uefi: Option<bool>) -> Observed {
    let mut m = Machine::new(7, vec!["52:54:00:00:00:07".parse().unwrap()], 0);
    m.inventory = Some(Inventory::default());
    Observed { now_ms: NOW, machine: Some(m), stats_secs: 30, profile_fits: true, bmc_uefi, ..Default::default() }
}

fn live_agent() -> AgentRecord {
    serde_json::from_value(json!({"v": 1, "machine_id": 7, "secret_sha256": "", "mode": "bootos", "approved": true,
        "enrolled_at": NOW / 1000 - 5, "version": ""}))
    .unwrap()
}

#[test]
fn a_machine_with_a_bmc_is_powered_up_then_once_more_then_the_run_fails() {
    let t = task();
    let run = Run::new(9, 3, 1, Some(7), NOW - 1000);
    let d = decide(&run, &t, &seen(Some(true)));
    assert_eq!(d.effects[0], Effect::PowerOn { uefi: true });
    assert!(matches!(&d.effects[1], Effect::Save { event, .. } if event.0.as_str() == "provision.power_on"));
    assert_eq!((d.run.power_requests, d.run.power_requested_ms, d.run.step), (1, Some(NOW), Step::WaitAgent));

    // Within the step timeout: wait for the agent.
    let mut o = seen(Some(true));
    o.now_ms = NOW + 600_000;
    assert!(decide(&d.run, &t, &o).effects.is_empty());
    // Past it: once more (legacy BIOS this time, as DHCP saw it).
    o.now_ms = NOW + 600_001;
    o.bmc_uefi = Some(false);
    let d2 = decide(&d.run, &t, &o);
    assert_eq!(d2.effects[0], Effect::PowerOn { uefi: false });
    assert_eq!(d2.run.power_requests, 2);
    // And past that: failed, saying why.
    o.now_ms += 600_001;
    let d3 = decide(&d2.run, &t, &o);
    assert_eq!(d3.run.state, RunState::Failed);
    assert!(d3.run.error.as_deref().unwrap().contains("through its BMC"), "{:?}", d3.run.error);
    assert!(!d3.effects.iter().any(|e| matches!(e, Effect::PowerOn { .. })));
}

#[test]
fn a_live_agent_or_no_bmc_means_no_power_action() {
    let t = task();
    let run = Run::new(9, 3, 1, Some(7), NOW - 1000);
    let d = decide(&run, &t, &Observed { agent: Some(live_agent()), ..seen(Some(true)) });
    assert_eq!(d.run.step, Step::Check, "the agent is there: on to the next step");
    assert!(!d.effects.iter().any(|e| matches!(e, Effect::PowerOn { .. })));
    let d = decide(&run, &t, &seen(None));
    assert!(d.effects.is_empty(), "without a BMC the run waits as it always did");
    assert_eq!(d.run, run);
}

#[test]
fn a_stuck_step_on_a_machine_with_a_bmc_is_power_cycled_once_before_it_fails() {
    use crate::jobs::{Job, JobState, NewJob};
    use rackboot_agent::wire::Action;
    let t = task();
    let mut run = Run::new(9, 3, 1, Some(7), NOW - 1000);
    run.enter(Step::Install, NOW - 700_000);
    run.job = Some(42);
    let mut job = Job::new(
        42,
        7,
        NewJob { action: Action::Reboot { network: false, disk: None }, timeout_secs: 600, max_attempts: 3 },
        NOW - 690_000,
    );
    job.state = JobState::Running;
    let o = Observed { job: Some(job.clone()), ..seen(Some(false)) };
    let d = decide(&run, &t, &o);
    assert_eq!(d.effects[0], Effect::PowerOn { uefi: false });
    assert!(matches!(&d.effects[1], Effect::Save { event, .. } if event.0.as_str() == "provision.stuck_cycle"));
    assert!(
        !d.effects.iter().any(|e| matches!(e, Effect::CancelJob(_))),
        "the job stays for the agent that comes back"
    );
    assert_eq!((d.run.stuck_cycled, d.run.step_started_ms, d.run.job), (true, NOW, Some(42)));

    // Stuck again a timeout later: now it fails (no retries in this task), without cycling again.
    let o = Observed { now_ms: NOW + 600_001, job: Some(job.clone()), ..seen(Some(false)) };
    let d2 = decide(&d.run, &t, &o);
    assert!(d2.effects.contains(&Effect::CancelJob(42)));
    assert!(!d2.effects.iter().any(|e| matches!(e, Effect::PowerOn { .. })));
    assert_eq!(d2.run.state, RunState::Failed);

    // Without a BMC the first timeout fails it, as before.
    let o = Observed { job: Some(job), ..seen(None) };
    let d3 = decide(&run, &t, &o);
    assert_eq!(d3.run.state, RunState::Failed);
    assert!(d3.effects.contains(&Effect::CancelJob(42)));
}

#[test]
fn a_reinstall_of_a_machine_with_a_bmc_goes_through_the_bmc_not_the_agent() {
    let t = Task {
        spec: serde_json::from_value(json!({"select": {"next": 1}, "image": "lab.img", "reinstall": true,
        "step_timeout_secs": 600}))
        .unwrap(),
        ..task()
    };
    let run = Run::new(9, 3, 1, Some(7), NOW - 1000);
    let installed = AgentRecord { mode: AgentMode::Installed, ..live_agent() };
    let o = Observed { agent: Some(installed.clone()), ..seen(Some(false)) };
    let d = decide(&run, &t, &o);
    assert_eq!(d.effects[0], Effect::PowerOn { uefi: false }, "PXE once (legacy) and a restart");
    assert!(matches!(&d.effects[1], Effect::Save { event, .. } if event.0.as_str() == "provision.reinstall_reboot"));
    assert!(!d.effects.iter().any(|e| matches!(e, Effect::StartJob { .. })), "no reboot job for the agent");
    assert!(d.run.reboot_requested);
    // The installed agent still answers a moment later: no second restart within the timeout.
    let later = Observed { now_ms: NOW + 60_000, agent: Some(installed), ..seen(Some(false)) };
    assert!(decide(&d.run, &t, &later).effects.is_empty());
}

#[test]
fn a_machine_booted_from_virtual_media_is_started_from_its_disk_by_its_bmc() {
    use crate::jobs::{Job, JobState, NewJob};
    use rackboot_agent::wire::Action;
    let t = task();
    let mut run = Run::new(9, 3, 1, Some(7), NOW - 1000);
    run.enter(Step::Reboot, NOW - 10_000);
    run.job = Some(42);
    let mut job = Job::new(42, 7, NewJob { action: Action::PowerOff, timeout_secs: 600, max_attempts: 3 }, NOW - 9_000);
    job.state = JobState::Succeeded;
    job.finished_at_ms = Some(NOW - 1_000);
    let o = Observed { job: Some(job.clone()), bmc_vmedia: true, ..seen(Some(true)) };
    let d = decide(&run, &t, &o);
    assert_eq!(d.run.step, Step::WaitInstalled);
    assert_eq!(d.run.installed_after_ms, Some(NOW - 1_000));
    assert_eq!(d.effects[0], Effect::BootDisk { uefi: true }, "off, the disk once, on");
    // A machine that PXE-boots reboots itself: nothing through the BMC.
    let d = decide(&run, &t, &Observed { job: Some(job), ..seen(Some(true)) });
    assert!(!d.effects.iter().any(|e| matches!(e, Effect::BootDisk { .. })));
}
