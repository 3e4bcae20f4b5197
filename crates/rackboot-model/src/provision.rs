//! Provisioning: tasks that take machines from discovered to installed, one run per machine.
//! This module is the pure part (records, the step sequence, hostname patterns, IP plans);
//! the engine (in the control layer) drives runs through the agent, and the store keeps them.
//!
//! A run walks these steps, each one an agent job except where noted:
//!
//! ```text
//! wait_agent (no job: the machine's BootOS agent is enrolled with an inventory; an installed
//!   machine being reinstalled is rebooted into BootOS first)
//! -> check (no job: the hardware profile fits the inventory's vendor/model)
//! -> bios (no job: the profile's BIOS settings written through the Redfish BMC, a restart
//!   into BootOS, read back)
//! -> configure[i] (the profile's scripts) -> install (deploy_image: stream, verify, write)
//! -> identity (rendered script: hostname, network, SSH keys, the agent and its credential)
//! -> reboot (the machine is marked installed first, so PXE now boots its disk)
//! -> wait_installed (no job: the installed system's agent checks in)
//! -> post_install[i] (scripts from postinstall/, on the installed system) -> done
//! ```
//!
//! With an installer instead of an image, install is a reboot job into the installer (the
//! machine carries an installer boot (`InstallerBoot` in the store), so PXE boots it with its answer file);
//! the installer's post-install step fetches `/boot/installed`, which hands over the identity
//! script with the agent's credential and moves the run straight to wait_installed.
//!
//! A failed job is retried `retries` times; a step that runs past `step_timeout_secs` is
//! cancelled and counts as a failure. Everything is in the CMDB, so a restart resumes each run
//! at its step (a job in flight is picked up where it is).

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::mac::Mac;

mod hints;
mod layout;
mod names;
mod purpose;
pub use hints::RootDeviceHints;
pub use layout::{FileSystem, FsType, Layout, MIRROR_DEVICE, VOLUME_GROUP};
pub use names::{hostname, ip_from_pool, parse_pool, profile_fits};
pub use purpose::{Purpose, Route};
pub use rackboot_agent::wire::EraseMode;

/// Which machines a task provisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Selector {
    Macs(Vec<Mac>),
    Serials(Vec<String>),
    Tag(String),
    /// The next N machines whose BootOS agent calls in and that no other run holds.
    Next(u32),
}

/// A task as submitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    pub select: Selector,
    /// Image file name under `<boot dir>/images/` (served at `/boot/files/images/<name>`).
    /// A task has an image or an installer.
    #[serde(default)]
    pub image: Option<String>,
    /// Its SHA-256 (hex); computed from the file when not given.
    #[serde(default)]
    pub image_sha256: Option<String>,
    /// A boot profile with an answer file (kickstart, preseed, autoinstall): the install step
    /// reboots the machine into that installer, whose post-install step reports back.
    #[serde(default)]
    pub installer: Option<String>,
    #[serde(default)]
    pub hardware_profile: Option<String>,
    /// e.g. `node-{n:02}` ({n}: 1-based index in the task; {mac}: the boot MAC without colons).
    #[serde(default)]
    pub hostname_pattern: Option<String>,
    /// Reservations for the machines, `FIRST-LAST`.
    #[serde(default)]
    pub ip_pool: Option<String>,
    /// Target disk; "auto": the largest disk in the inventory, or the one `root_device` names.
    #[serde(default = "auto")]
    pub disk: String,
    /// Which disk, by what the inventory says of it (with `disk` "auto"): exactly one must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_device: Option<RootDeviceHints>,
    /// How the image is laid out on the disks (image deploys only): mirrored, on LVM, with
    /// extra file systems. None: the image as it is on the root disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
    #[serde(default)]
    pub ssh_keys: Vec<String>,
    /// Names of scripts in `postinstall/`, run in order on the installed system.
    #[serde(default)]
    pub post_install: Vec<String>,
    /// Runs past `wait_agent` at once.
    #[serde(default = "ten")]
    pub concurrency: u32,
    #[serde(default = "half_hour")]
    pub step_timeout_secs: u64,
    /// Extra tries of a failed step.
    #[serde(default = "one")]
    pub retries: u32,
    /// Also take machines that are installed already (they are rebooted into BootOS).
    #[serde(default)]
    pub reinstall: bool,
    /// cloud-init user-data for the installed machines (a machine's own wins over it; it wins
    /// over their rack's); at most 64 KiB. Stored apart from the task: never shown again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 65536)]
    pub user_data: Option<String>,
    /// What the runs do: install (the default), or a day-two operation (release, rescue),
    /// which the machine endpoints create.
    #[serde(default, skip_serializing_if = "Purpose::is_provision")]
    pub purpose: Purpose,
    /// A test profile (`[[provision.test_profiles]]`) each machine passes in BootOS before it
    /// is configured and installed; a failed test fails its run, the test named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commission: Option<String>,
    /// The resource pool the task acts in: its machines are all of it (with `next`, only its
    /// ready machines are taken). When not given, the pool its machines share (`default` for
    /// `next`); a stored task without one is of `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")]
    pub pool: Option<String>,
}

impl TaskSpec {
    /// The pool the task acts in.
    pub fn pool(&self) -> &str {
        self.pool.as_deref().unwrap_or(crate::pools::DEFAULT)
    }
}

fn auto() -> String {
    "auto".into()
}
fn ten() -> u32 {
    10
}
fn half_hour() -> u64 {
    1800
}
fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Active,
    Done,
    Cancelled,
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Task {
    pub v: u64,
    pub id: u64,
    pub spec: TaskSpec,
    pub state: TaskState,
    pub created_at_ms: u64,
    pub runs: Vec<u64>,
}

/// One step of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "step", content = "index", rename_all = "snake_case")]
pub enum Step {
    WaitAgent,
    Check,
    /// The hardware profile's firmware baseline, through the machine's Redfish BMC.
    Firmware,
    /// The hardware profile's BIOS settings, through the machine's Redfish BMC.
    Bios,
    Configure(usize),
    Install,
    Identity,
    Reboot,
    WaitInstalled,
    PostInstall(usize),
    Done,
    /// A release's disk erase (BootOS).
    Erase,
    /// A rescue's job: list the disks, mount them read-only if asked (BootOS).
    Rescue,
    /// A rescue holds the machine in BootOS until the operator returns it.
    Rescued,
    /// A commissioning run's tests (BootOS).
    Commission,
}

impl Step {
    /// An install's step after this one: commissioning first when the task asks for it, then
    /// the configure scripts, the install, and the post-install scripts.
    fn next_install(self, r: Route<'_>) -> Step {
        let (configure, post_install) = (r.configure, r.post_install);
        match self {
            Step::WaitAgent => Step::Check,
            Step::Check if r.firmware => Step::Firmware,
            Step::Check | Step::Firmware if r.bios => Step::Bios,
            Step::Check | Step::Firmware | Step::Bios if r.commission => Step::Commission,
            Step::Check | Step::Firmware | Step::Bios | Step::Commission if configure > 0 => Step::Configure(0),
            Step::Check | Step::Firmware | Step::Bios | Step::Commission => Step::Install,
            Step::Configure(i) if i + 1 < configure => Step::Configure(i + 1),
            Step::Configure(_) => Step::Install,
            Step::Install => Step::Identity,
            Step::Identity => Step::Reboot,
            Step::Reboot => Step::WaitInstalled,
            Step::WaitInstalled if post_install > 0 => Step::PostInstall(0),
            Step::WaitInstalled => Step::Done,
            Step::PostInstall(i) if i + 1 < post_install => Step::PostInstall(i + 1),
            Step::PostInstall(_) | Step::Done | Step::Erase | Step::Rescue | Step::Rescued => Step::Done,
        }
    }

    /// Rough progress of the whole run at the start of this step, in percent.
    pub fn progress(self) -> u8 {
        match self {
            Step::WaitAgent => 0,
            Step::Check => 5,
            Step::Firmware => 6,
            Step::Bios => 7,
            Step::Configure(_) => 10,
            Step::Install => 20,
            Step::Identity => 70,
            Step::Reboot => 75,
            Step::WaitInstalled => 80,
            Step::PostInstall(_) => 90,
            Step::Done => 100,
            Step::Erase | Step::Rescue | Step::Commission => 10,
            Step::Rescued => 50,
        }
    }

    /// Whether the step is carried out by an agent job.
    pub fn is_job(self) -> bool {
        matches!(
            self,
            Step::Configure(_)
                | Step::Install
                | Step::Identity
                | Step::Reboot
                | Step::PostInstall(_)
                | Step::Erase
                | Step::Rescue
                | Step::Commission
        )
    }

    /// Whether the OS is on the disk and the machine boots it (from the reboot on).
    pub fn installed(self) -> bool {
        matches!(self, Step::Reboot | Step::WaitInstalled | Step::PostInstall(_) | Step::Done)
    }

    /// The machine state that goes with an install's step.
    fn install_state(self) -> crate::records::MachineState {
        use crate::records::MachineState as S;
        match self {
            Step::WaitAgent | Step::Check | Step::Erase => S::Queued,
            Step::Commission => S::Commissioning,
            Step::Rescue | Step::Rescued => S::Rescue,
            Step::Firmware | Step::Bios | Step::Configure(_) => S::Configuring,
            Step::Install | Step::Identity => S::Installing,
            Step::Reboot | Step::WaitInstalled | Step::Done => S::Installed,
            Step::PostInstall(_) => S::PostInstall,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Active,
    Installed,
    Failed,
    Cancelled,
    /// A day-two run (release, rescue) ended as asked.
    Done,
}

/// One machine's way through a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Run {
    pub v: u64,
    pub id: u64,
    pub task_id: u64,
    /// 1-based position in the task (the {n} of the hostname pattern).
    pub index: u32,
    /// `None` for a `next` selector until a machine is bound.
    pub machine_id: Option<u64>,
    pub hostname: Option<String>,
    #[schema(value_type = Option<String>, format = Ipv4)]
    pub ip: Option<Ipv4Addr>,
    pub state: RunState,
    pub step: Step,
    pub progress: u8,
    /// The agent job carrying out the current step.
    pub job: Option<u64>,
    /// Failed tries of the current step.
    pub failures: u32,
    pub step_started_ms: u64,
    pub created_at_ms: u64,
    pub finished_at_ms: Option<u64>,
    pub error: Option<String>,
    /// Set once a reinstall's reboot into BootOS has been asked for.
    #[serde(default)]
    pub reboot_requested: bool,
    /// The installed system's agent must enroll after this (Unix ms): when the reboot job
    /// ended, so a check-in that happened while the appliance was down still counts.
    #[serde(default)]
    pub installed_after_ms: Option<u64>,
    /// Power-ons through the machine's BMC asked for while waiting for its agent, and when the
    /// last one was (Unix ms).
    #[serde(default)]
    pub power_requests: u32,
    #[serde(default)]
    pub power_requested_ms: Option<u64>,
    /// The current step, stuck past its timeout, had its machine power-cycled through its BMC
    /// (once per step).
    #[serde(default)]
    pub stuck_cycled: bool,
    /// Bumped by every write; a write based on an older read is refused (the engine and an
    /// operator's cancel never overwrite each other).
    #[serde(default)]
    pub rev: u64,
    /// A commissioning run's test results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<crate::commission::TestResult>,
    /// Where the BIOS step is (at that step only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bios: Option<crate::bios::BiosPhase>,
    /// Where the firmware step is (at that step only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<crate::baseline::FirmwarePhase>,
}

impl Run {
    pub fn new(id: u64, task_id: u64, index: u32, machine_id: Option<u64>, now_ms: u64) -> Run {
        Run {
            v: 1,
            id,
            task_id,
            index,
            machine_id,
            hostname: None,
            ip: None,
            state: RunState::Active,
            step: Step::WaitAgent,
            progress: 0,
            job: None,
            failures: 0,
            step_started_ms: now_ms,
            created_at_ms: now_ms,
            finished_at_ms: None,
            error: None,
            reboot_requested: false,
            installed_after_ms: None,
            power_requests: 0,
            power_requested_ms: None,
            stuck_cycled: false,
            rev: 0,
            tests: Vec::new(),
            bios: None,
            firmware: None,
        }
    }

    /// Moves to the next step of `route`.
    pub fn advance(&mut self, route: Route<'_>, now_ms: u64) {
        self.enter(self.step.next(route), now_ms);
        if self.state == RunState::Installed && !route.purpose.is_provision() {
            self.state = RunState::Done;
        }
    }

    /// Starts `step` (an installer's report-back jumps from install to wait_installed).
    pub fn enter(&mut self, step: Step, now_ms: u64) {
        self.step = step;
        self.progress = step.progress();
        self.job = None;
        self.failures = 0;
        self.step_started_ms = now_ms;
        self.stuck_cycled = false;
        self.bios = None;
        self.firmware = None;
        if self.step == Step::Done {
            self.state = RunState::Installed;
            self.finished_at_ms = Some(now_ms);
        }
    }

    /// The current step failed: try it again while retries last, else the run fails.
    pub fn step_failed(&mut self, why: String, retries: u32, now_ms: u64) {
        self.job = None;
        self.failures += 1;
        if self.failures > retries {
            self.state = RunState::Failed;
            self.finished_at_ms = Some(now_ms);
            self.error = Some(format!("{}: {why}", step_name(self.step)));
        } else {
            self.error = Some(format!("{} (retrying): {why}", step_name(self.step)));
            self.step_started_ms = now_ms;
            self.bios = None;
            self.firmware = None;
            self.progress = self.step.progress();
        }
    }

    pub fn cancel(&mut self, now_ms: u64) -> bool {
        if self.state != RunState::Active {
            return false;
        }
        self.state = RunState::Cancelled;
        self.finished_at_ms = Some(now_ms);
        true
    }
}

pub fn step_name(s: Step) -> String {
    match s {
        Step::Configure(i) => format!("configure[{i}]"),
        Step::PostInstall(i) => format!("post_install[{i}]"),
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| v.get("step").and_then(|s| s.as_str()).map(str::to_string))
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests;
