//! The day-two runs' transitions: a release's erase (delivered once, its progress followed, the
//! machine ready after with its reservation dropped or kept), a rescue held until returned.

use rackboot_agent::wire::{AgentMode, EraseMode};
use serde_json::json;

use super::tests::{agent, job, run_at, save_of, seen, start_of, task, waits, with_job, NOW};
use super::*;
use crate::cmdb::MachineState;
use crate::jobs::JobState;

fn release(erase: &str, keep: bool) -> Task {
    task(json!({"purpose": {"kind": "release", "erase": erase, "keep_reservation": keep}, "reinstall": true}))
}

#[test]
fn a_release_reboots_an_installed_machine_then_erases_in_bootos() {
    let t = release("zero", false);
    let installed = Observed { agent: Some(agent(AgentMode::Installed, NOW - 5_000)), ..seen() };
    let d = decide(&run_at(Step::WaitAgent), &t, &installed);
    let (job, kind, _) = start_of(&d);
    assert_eq!((&job.action, kind), (&Action::Reboot { network: true, disk: None }, "provision.reinstall_reboot"));
    // In BootOS: the erase step, no hardware check; the machine is releasing.
    let d = decide(&run_at(Step::WaitAgent), &t, &seen());
    assert_eq!(d.run.step, Step::Erase);
    assert_eq!(save_of(&d).0.state, Some(MachineState::Releasing));
    let erase = Action::Erase { disks: vec!["/dev/vda".into()], mode: EraseMode::Zero };
    let o = Observed { action: Some(Ok(erase.clone())), ..seen() };
    let d = decide(&run_at(Step::Erase), &t, &o);
    let (job, _, _) = start_of(&d);
    assert_eq!((&job.action, job.max_attempts), (&erase, 1), "an erase is delivered once");
}

#[test]
fn an_erase_moves_the_progress_and_ends_ready() {
    let t = release("quick", false);
    let (run, mut o) = with_job(run_at(Step::Erase), job(JobState::Running));
    waits(&decide(&run, &t, &o), &run);
    o.job_percent = Some(50);
    let d = decide(&run, &t, &o);
    assert_eq!(d.run.progress, 10 + 45);
    assert_eq!(save_of(&d).1, "provision.step");
    let (run, o) = with_job(run_at(Step::Erase), job(JobState::Succeeded));
    let d = decide(&run, &t, &o);
    assert_eq!((d.run.step, d.run.state, d.run.progress), (Step::Done, RunState::Done, 100));
    let (update, kind) = save_of(&d);
    assert_eq!((update.state, update.drop_reservation, kind), (Some(MachineState::Ready), true, "provision.done"));
    let kept = decide(&run, &release("quick", true), &o);
    assert!(!save_of(&kept).0.drop_reservation, "keep_reservation keeps it");
}

#[test]
fn a_failed_erase_fails_the_machine_without_a_retry() {
    let t = release("secure", false);
    let mut j = job(JobState::Failed);
    j.error = Some("/dev/vda: secure erase: a virtio disk has neither NVMe Format nor ATA Security Erase".into());
    let (run, o) = with_job(run_at(Step::Erase), j);
    let d = decide(&run, &t, &o);
    assert_eq!(d.run.state, RunState::Failed);
    assert!(d.run.error.as_deref().unwrap().contains("virtio disk"), "{:?}", d.run.error);
    assert_eq!(save_of(&d).0.state, Some(MachineState::Failed));
}

#[test]
fn a_release_without_erase_is_done_once_in_bootos() {
    let d = decide(&run_at(Step::WaitAgent), &release("none", true), &seen());
    assert_eq!((d.run.step, d.run.state), (Step::Done, RunState::Done));
    assert_eq!(save_of(&d).0.state, Some(MachineState::Ready));
}

#[test]
fn a_rescue_runs_its_job_then_holds_the_machine_until_returned() {
    let t = task(json!({"purpose": {"kind": "rescue", "mount": true}, "reinstall": true}));
    let d = decide(&run_at(Step::WaitAgent), &t, &seen());
    assert_eq!(d.run.step, Step::Rescue);
    assert_eq!(save_of(&d).0.state, Some(MachineState::Rescue));
    let (run, o) = with_job(run_at(Step::Rescue), job(JobState::Succeeded));
    let d = decide(&run, &t, &o);
    assert_eq!((d.run.step, d.run.state), (Step::Rescued, RunState::Active));
    assert_eq!(save_of(&d).0.state, Some(MachineState::Rescue));
    // Held, however long: no timeout, no job.
    let held = run_at(Step::Rescued);
    let later = Observed { now_ms: NOW + 100 * TIMEOUT_MS, ..seen() };
    waits(&decide(&held, &t, &later), &held);
}

#[test]
fn a_commissioning_run_keeps_its_results_and_fails_on_a_failed_test() {
    use crate::commission::TestResult;
    let t = task(json!({"purpose": {"kind": "commission", "profile": "burn-in"}, "reinstall": true, "retries": 3}));
    let d = decide(&run_at(Step::WaitAgent), &t, &seen());
    assert_eq!((d.run.step, save_of(&d).0.state), (Step::Commission, Some(MachineState::Commissioning)));
    let result = |name: &str, passed: bool, figure: f64| TestResult {
        name: name.into(),
        passed,
        figure: Some(figure),
        unit: "MB/s".into(),
        floor: Some(100.0),
        note: if passed { String::new() } else { format!("{figure} MB/s is below the floor of 100") },
    };
    let (run, mut o) = with_job(run_at(Step::Commission), job(JobState::Succeeded));
    o.tests = Some(vec![result("disk-read:vda", true, 300.0)]);
    let d = decide(&run, &t, &o);
    assert_eq!((d.run.step, d.run.state, d.run.tests.len()), (Step::Done, RunState::Done, 1));
    assert_eq!(save_of(&d).0.state, Some(MachineState::Ready));
    o.tests = Some(vec![result("disk-read:vda", true, 300.0), result("disk-write:vda", false, 42.0)]);
    let d = decide(&run, &t, &o);
    assert_eq!(d.run.state, RunState::Failed, "not retried, whatever the task's retries");
    assert_eq!(d.run.error.as_deref(), Some("commission: test disk-write:vda: 42 MB/s is below the floor of 100"));
    assert_eq!((d.run.tests.len(), save_of(&d).0.state), (2, Some(MachineState::Failed)));
    // Nothing judged is no pass.
    o.tests = None;
    let d = decide(&run, &t, &o);
    assert_eq!(d.run.state, RunState::Failed);
    assert_eq!(d.run.error.as_deref(), Some("commission: the tests' results were not judged"));
}

#[test]
fn an_install_commissioned_first_runs_its_tests_after_the_check_and_a_failure_stops_it() {
    let t = task(json!({"image": "lab.img", "commission": "burn-in", "retries": 3}));
    let mut o = seen();
    o.profile_fits = true;
    let d = decide(&run_at(Step::Check), &t, &o);
    assert_eq!(d.run.step, Step::Commission);
    let (run, mut o) = with_job(run_at(Step::Commission), job(JobState::Succeeded));
    o.tests = Some(vec![]);
    let d = decide(&run, &t, &o);
    assert_eq!((d.run.step, d.run.state), (Step::Install, RunState::Active), "passed: on to the install");
    o.tests = None;
    let d = decide(&run, &t, &o);
    assert_eq!((d.run.step, d.run.state), (Step::Commission, RunState::Failed), "never installed untested");
}

const TIMEOUT_MS: u64 = 600_000;
