//! One test per transition, failure and timeout of the step table.

use rackboot_agent::wire::{Action, AgentMode, Inventory};
use serde_json::json;

use super::*;
use crate::cmdb::{AgentRecord, InstallerBoot, Machine, MachineState};
use crate::jobs::{Job, JobState, NewJob};

pub(super) const NOW: u64 = 10_000_000_000; // Unix ms
const TIMEOUT_S: u64 = 600;

pub(super) fn task(extra: serde_json::Value) -> Task {
    let mut spec = json!({"select": {"next": 1}, "image": "lab.img", "step_timeout_secs": TIMEOUT_S, "retries": 1});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    let spec = serde_json::from_value(spec).unwrap();
    Task { v: 1, id: 3, spec, state: super::super::TaskState::Active, created_at_ms: 0, runs: vec![9] }
}

fn installer_task() -> Task {
    let mut t = task(json!({"installer": "debian"}));
    t.spec.image = None;
    t
}

pub(super) fn run_at(step: Step) -> Run {
    let mut r = Run::new(9, 3, 1, Some(7), NOW - 1000);
    r.step = step;
    r.progress = step.progress();
    r
}

pub(super) fn machine() -> Machine {
    let mut m = Machine::new(7, vec!["52:54:00:00:00:07".parse().unwrap()], 0);
    m.inventory = Some(Inventory::default());
    m
}

pub(super) fn agent(mode: AgentMode, enrolled_at_ms: u64) -> AgentRecord {
    AgentRecord {
        v: 1,
        machine_id: 7,
        secret_sha256: String::new(),
        pending_sha256: None,
        mode,
        approved: true,
        enrolled_at: enrolled_at_ms / 1000,
        enrolled_from: None,
        boot_mac: None,
        system_uuid: None,
        version: String::new(),
        stats: None,
        stats_at: None,
        pending_macs: Vec::new(),
        kept_sha256: None,
    }
}

pub(super) fn job(state: JobState) -> Job {
    let mut j = Job::new(
        42,
        7,
        NewJob { action: Action::Reboot { network: false, disk: None }, timeout_secs: 60, max_attempts: 3 },
        NOW - 900,
    );
    j.state = state;
    j
}

/// A live BootOS agent, inventory, a free slot, the profile fits.
pub(super) fn seen() -> Observed {
    Observed {
        now_ms: NOW,
        machine: Some(machine()),
        agent: Some(agent(AgentMode::Bootos, NOW - 5_000)),
        stats_secs: 30,
        profile_fits: true,
        ..Default::default()
    }
}

pub(super) fn with_job(mut run: Run, j: Job) -> (Run, Observed) {
    run.job = Some(j.id);
    let o = Observed { job: Some(j), ..seen() };
    (run, o)
}

/// The decision's saved machine update and event kind (panics if it does not save).
pub(super) fn save_of(d: &Decision) -> (&MachineUpdate, &str) {
    match d.effects.last() {
        Some(Effect::Save { update, event }) => (update, event.0.as_str()),
        other => panic!("expected a save, got {other:?}"),
    }
}

pub(super) fn start_of(d: &Decision) -> (&NewJob, &str, Option<&Installer>) {
    match d.effects.as_slice() {
        [Effect::StartJob { job, event, installer, .. }] => (job, event.0.as_str(), installer.as_ref()),
        other => panic!("expected a job start, got {other:?}"),
    }
}

pub(super) fn waits(d: &Decision, run: &Run) {
    assert!(d.effects.is_empty(), "{:?}", d.effects);
    assert_eq!(&d.run, run, "waiting leaves the run as it was");
}

#[test]
fn a_deleted_machine_fails_the_run() {
    let run = run_at(Step::Install);
    let d = decide(&run, &task(json!({})), &Observed { machine: None, ..seen() });
    assert_eq!(d.run.state, RunState::Failed);
    assert_eq!(d.run.error.as_deref(), Some("install: the machine was deleted"));
    assert_eq!(save_of(&d).1, "provision.failed");
}

#[test]
fn wait_agent_moves_to_check_with_a_live_bootos_agent_and_takes_a_slot() {
    let d = decide(&run_at(Step::WaitAgent), &task(json!({})), &seen());
    assert_eq!(d.run.step, Step::Check);
    assert_eq!(d.effects[0], Effect::TakeSlot);
    let (update, kind) = save_of(&d);
    assert_eq!((update.state, kind), (Some(MachineState::Queued), "provision.step"));
}

#[test]
fn wait_agent_waits_without_inventory_or_a_live_agent_or_a_free_slot() {
    let run = run_at(Step::WaitAgent);
    let t = task(json!({"concurrency": 2}));
    let mut no_inventory = seen();
    no_inventory.machine.as_mut().unwrap().inventory = None;
    waits(&decide(&run, &t, &no_inventory), &run);
    // Gone: last heard from longer than three stats periods ago.
    waits(&decide(&run, &t, &Observed { agent: Some(agent(AgentMode::Bootos, NOW - 91_000)), ..seen() }), &run);
    let mut unapproved = seen();
    unapproved.agent.as_mut().unwrap().approved = false;
    waits(&decide(&run, &t, &unapproved), &run);
    waits(&decide(&run, &t, &Observed { agent: None, ..seen() }), &run);
    waits(&decide(&run, &t, &Observed { slots_in_use: 2, ..seen() }), &run);
    // A stats report keeps an agent enrolled long ago live.
    let mut stats = agent(AgentMode::Bootos, NOW - 3_600_000);
    stats.stats_at = Some(NOW / 1000 - 10);
    assert_eq!(decide(&run, &t, &Observed { agent: Some(stats), ..seen() }).run.step, Step::Check);
}

#[test]
fn a_reinstall_reboots_an_installed_machine_into_bootos_first() {
    let run = run_at(Step::WaitAgent);
    let t = task(json!({"reinstall": true}));
    let o = Observed { agent: Some(agent(AgentMode::Installed, NOW - 5_000)), ..seen() };
    let d = decide(&run, &t, &o);
    let (job, kind, installer) = start_of(&d);
    assert_eq!(
        (&job.action, kind, installer),
        (&Action::Reboot { network: true, disk: None }, "provision.reinstall_reboot", None)
    );
    assert!(d.run.reboot_requested);
    assert_eq!((d.run.step, d.run.step_started_ms), (Step::WaitAgent, NOW));
}

#[test]
fn a_reinstall_waits_for_a_bootos_enrollment_after_the_reboot() {
    let mut run = run_at(Step::WaitAgent);
    run.reboot_requested = true;
    run.step_started_ms = NOW - 60_000;
    let t = task(json!({"reinstall": true}));
    // The installed agent still answering: no second reboot, no progress.
    waits(&decide(&run, &t, &Observed { agent: Some(agent(AgentMode::Installed, NOW - 5_000)), ..seen() }), &run);
    // A BootOS enrollment from before the reboot was asked for does not count.
    waits(&decide(&run, &t, &Observed { agent: Some(agent(AgentMode::Bootos, NOW - 70_000)), ..seen() }), &run);
    let fresh = Observed { agent: Some(agent(AgentMode::Bootos, NOW - 30_000)), ..seen() };
    assert_eq!(decide(&run, &t, &fresh).run.step, Step::Check);
}

#[test]
fn check_moves_on_when_the_profile_fits_and_fails_when_not() {
    let run = run_at(Step::Check);
    let fits = decide(&run, &task(json!({})), &Observed { configure_scripts: 2, ..seen() });
    assert_eq!(fits.run.step, Step::Configure(0));
    let d = decide(&run, &task(json!({"hardware_profile": "r640"})), &Observed { profile_fits: false, ..seen() });
    assert_eq!(d.run.state, RunState::Failed, "no retry for a profile that does not fit");
    assert!(d.run.error.as_deref().unwrap().contains("hardware profile \"r640\" does not fit"));
    let (update, kind) = save_of(&d);
    assert_eq!((update.state, kind), (Some(MachineState::Failed), "provision.failed"));
}

#[test]
fn a_job_step_without_a_job_starts_one() {
    let run = run_at(Step::Identity);
    let script =
        Action::Script { interpreter: "/bin/sh".into(), body: "true".into(), args: vec![], env: Default::default() };
    let d = decide(&run, &task(json!({})), &Observed { action: Some(Ok(script.clone())), ..seen() });
    let (job, kind, installer) = start_of(&d);
    assert_eq!((&job.action, job.timeout_secs, job.max_attempts), (&script, TIMEOUT_S, JOB_ATTEMPTS));
    assert_eq!((kind, installer), ("provision.step", None));
    assert_eq!(d.run, run, "the job's write records it on the run");
}

#[test]
fn a_job_step_whose_action_cannot_be_built_fails_without_retry() {
    let o = Observed { action: Some(Err("the inventory lists no disk".into())), ..seen() };
    let d = decide(&run_at(Step::Install), &task(json!({})), &o);
    assert_eq!(d.run.state, RunState::Failed);
    assert_eq!(d.run.error.as_deref(), Some("install: the inventory lists no disk"));
}

#[test]
fn an_installer_install_step_sets_up_the_installer_boot_keeping_a_retry_token() {
    let run = run_at(Step::Install);
    let o = Observed { action: Some(Ok(Action::Reboot { network: true, disk: None })), ..seen() };
    let d = decide(&run, &installer_task(), &o);
    let (_, _, installer) = start_of(&d);
    assert_eq!(installer, Some(&Installer { profile: "debian".into(), keep_token: None }));

    let mut retry = o.clone();
    let boot = InstallerBoot { profile: "debian".into(), run: run.id, token: "t0k".into(), reported: false };
    retry.machine.as_mut().unwrap().installer = Some(boot);
    let d = decide(&run, &installer_task(), &retry);
    assert_eq!(start_of(&d).2.unwrap().keep_token.as_deref(), Some("t0k"));
}

#[test]
fn an_installer_cannot_start_on_a_machine_pinned_to_a_boot_profile() {
    let mut o = Observed { action: Some(Ok(Action::Reboot { network: true, disk: None })), ..seen() };
    o.machine.as_mut().unwrap().boot_profile = Some("rescue".into());
    let d = decide(&run_at(Step::Install), &installer_task(), &o);
    assert_eq!(d.run.state, RunState::Failed);
    assert!(d.run.error.as_deref().unwrap().contains("pinned to boot profile \"rescue\""));
}

#[test]
fn a_queued_or_running_job_is_waited_for() {
    for state in [JobState::Queued, JobState::Running] {
        let (run, o) = with_job(run_at(Step::Identity), job(state));
        waits(&decide(&run, &task(json!({})), &o), &run);
    }
}

#[test]
fn a_job_past_the_step_timeout_is_cancelled_and_the_step_retried_then_failed() {
    let (mut run, o) = with_job(run_at(Step::Identity), job(JobState::Running));
    run.step_started_ms = NOW - TIMEOUT_S * 1000 - 1;
    let d = decide(&run, &task(json!({})), &o);
    assert_eq!(d.effects[0], Effect::CancelJob(42));
    assert_eq!((d.run.state, d.run.failures, d.run.job), (RunState::Active, 1, None));
    assert_eq!(d.run.error.as_deref(), Some("identity (retrying): no result within 600 s"));
    assert_eq!(save_of(&d).1, "provision.step");

    // The retry budget (retries: 1) is spent on the second timeout.
    let mut again = d.run.clone();
    again.job = Some(42);
    again.step_started_ms = NOW - TIMEOUT_S * 1000 - 1;
    let d = decide(&again, &task(json!({})), &o);
    assert_eq!(d.run.state, RunState::Failed);
    assert_eq!(d.run.error.as_deref(), Some("identity: no result within 600 s"));
}

#[test]
fn an_image_write_moves_the_run_progress_in_steps() {
    let (run, mut o) = with_job(run_at(Step::Install), job(JobState::Running));
    waits(&decide(&run, &task(json!({})), &o), &run);
    o.job_percent = Some(8); // 20 + 4: under 5 more
    waits(&decide(&run, &task(json!({})), &o), &run);
    o.job_percent = Some(30);
    let d = decide(&run, &task(json!({})), &o);
    assert_eq!((d.run.progress, d.run.step), (35, Step::Install));
    assert_eq!(save_of(&d).1, "provision.step");
    o.job_percent = Some(100);
    assert_eq!(decide(&run, &task(json!({})), &o).run.progress, 70);
}

#[test]
fn a_succeeded_job_moves_to_the_next_step() {
    let (run, o) = with_job(run_at(Step::Install), job(JobState::Succeeded));
    let d = decide(&run, &task(json!({})), &o);
    assert_eq!((d.run.step, d.run.job, d.run.failures), (Step::Identity, None, 0));
    assert_eq!(save_of(&d).0.state, Some(MachineState::Installing));
}

#[test]
fn the_reboot_marks_the_machine_installed_from_when_the_job_ended() {
    let mut j = job(JobState::Succeeded);
    j.finished_at_ms = Some(NOW - 300);
    let (run, o) = with_job(run_at(Step::Reboot), j);
    let d = decide(&run, &task(json!({})), &o);
    assert_eq!((d.run.step, d.run.installed_after_ms), (Step::WaitInstalled, Some(NOW - 300)));
    let (update, _) = save_of(&d);
    assert_eq!((update.state, &update.installer), (Some(MachineState::Installed), &None));
}

#[test]
fn a_failed_job_is_retried_within_the_budget_then_fails_the_run() {
    let mut j = job(JobState::Failed);
    j.exit_code = Some(3);
    let (run, o) = with_job(run_at(Step::Configure(0)), j);
    let t = task(json!({}));
    let d = decide(&run, &t, &o);
    assert_eq!((d.run.state, d.run.step, d.run.job), (RunState::Active, Step::Configure(0), None));
    assert_eq!(d.run.error.as_deref(), Some("configure[0] (retrying): job 42 failed: exit code 3"));
    let mut spent = run.clone();
    spent.failures = 1;
    let d = decide(&spent, &t, &o);
    assert_eq!(d.run.state, RunState::Failed);
    let (update, kind) = save_of(&d);
    assert_eq!((update.state, kind), (Some(MachineState::Failed), "provision.failed"));
}

#[test]
fn a_cancelled_or_timed_out_job_fails_the_step_with_its_reason() {
    let mut j = job(JobState::Cancelled);
    j.error = Some("cancelled by the operator".into());
    let (run, o) = with_job(run_at(Step::Identity), j);
    let d = decide(&run, &task(json!({"retries": 0})), &o);
    assert_eq!(d.run.error.as_deref(), Some("identity: job 42 cancelled: cancelled by the operator"));
    let (run, o) = with_job(run_at(Step::Identity), job(JobState::TimedOut));
    let d = decide(&run, &task(json!({"retries": 0})), &o);
    assert_eq!(d.run.error.as_deref(), Some("identity: job 42 timed_out: no exit code"));
}

#[test]
fn a_failure_after_the_reboot_does_not_mark_the_machine_failed() {
    // The OS is on the disk and the machine keeps booting it: it keeps its step's state.
    let (run, o) = with_job(run_at(Step::PostInstall(0)), job(JobState::Error));
    let d = decide(&run, &task(json!({"retries": 0, "post_install": ["a.sh"]})), &o);
    assert_eq!(d.run.state, RunState::Failed);
    assert_eq!(save_of(&d).0.state, Some(MachineState::PostInstall));
}

#[test]
fn an_installer_that_rebooted_is_waited_for_until_the_step_timeout() {
    let (mut run, o) = with_job(run_at(Step::Install), job(JobState::Succeeded));
    waits(&decide(&run, &installer_task(), &o), &run);
    run.step_started_ms = NOW - TIMEOUT_S * 1000 - 1;
    let d = decide(&run, &installer_task(), &o);
    assert_eq!(d.run.state, RunState::Failed, "a hung installer is not retried");
    assert_eq!(d.run.error.as_deref(), Some("install: the installer did not report back within 600 s"));
    assert_eq!(save_of(&d).0.installer, Some(None), "the failed run leaves no installer boot");
}

#[test]
fn wait_installed_moves_on_when_the_installed_agent_checks_in_after_the_reboot() {
    let mut run = run_at(Step::WaitInstalled);
    run.installed_after_ms = Some(NOW - 60_000);
    let t = task(json!({"post_install": ["a.sh"]}));
    // Only an installed agent enrolled after the reboot ended counts.
    waits(&decide(&run, &t, &Observed { agent: Some(agent(AgentMode::Installed, NOW - 120_000)), ..seen() }), &run);
    waits(&decide(&run, &t, &seen()), &run);
    let d = decide(&run, &t, &Observed { agent: Some(agent(AgentMode::Installed, NOW - 60_000)), ..seen() });
    assert_eq!(d.run.step, Step::PostInstall(0));
    assert_eq!(save_of(&d).0.state, Some(MachineState::PostInstall));
}

#[test]
fn wait_installed_fails_when_the_installed_agent_never_checks_in() {
    let mut run = run_at(Step::WaitInstalled);
    run.step_started_ms = NOW - TIMEOUT_S * 1000 - 1;
    let d = decide(&run, &task(json!({})), &seen());
    assert_eq!(d.run.state, RunState::Failed);
    assert_eq!(d.run.error.as_deref(), Some("wait_installed: the installed system's agent did not check in"));
    assert_eq!(save_of(&d).0.state, Some(MachineState::Installed));
}

#[test]
fn the_last_step_ends_the_run_installed() {
    let mut run = run_at(Step::WaitInstalled);
    run.installed_after_ms = Some(NOW - 60_000);
    let d = decide(&run, &task(json!({})), &Observed { agent: Some(agent(AgentMode::Installed, NOW)), ..seen() });
    assert_eq!((d.run.step, d.run.state, d.run.progress), (Step::Done, RunState::Installed, 100));
    let (update, kind) = save_of(&d);
    assert_eq!((update.state, kind), (Some(MachineState::Installed), "provision.installed"));
}

#[test]
fn a_job_the_engine_did_not_read_changes_nothing() {
    let mut run = run_at(Step::Identity);
    run.job = Some(42);
    waits(&decide(&run, &task(json!({})), &seen()), &run);
}
