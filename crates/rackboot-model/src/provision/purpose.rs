//! What a task's runs are for: installing machines, or a day-two operation on them. Day-two
//! runs take the same road into BootOS as a reinstall (a reboot through the installed agent,
//! or the BMC), then go their own way:
//!
//! ```text
//! release: wait_agent -> erase (unless erase is none) -> done: the machine is ready
//! commission: wait_agent -> commission (a job: the test profile's tests) -> done: ready
//!   (a failed test fails the run and the machine, the test named)
//! rescue:  wait_agent -> rescue (a job: the disks listed, mounted read-only if asked)
//!          -> rescued (no job: held in BootOS for the operator's jobs)
//!          -> [the operator returns it] reboot -> wait_installed -> done: installed
//! ```

use rackboot_agent::wire::EraseMode;
use serde::{Deserialize, Serialize};

use super::Step;
use crate::records::MachineState;

/// What a task does to its machines.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Purpose {
    /// Install an OS (the default).
    #[default]
    Provision,
    /// Boot BootOS, erase the disks as asked, and put the machine back in the pool (`ready`).
    Release {
        #[schema(value_type = String)]
        erase: EraseMode,
        /// Keep the machine's address reservation (else it is dropped).
        #[serde(default)]
        keep_reservation: bool,
    },
    /// Boot BootOS and run a test profile's tests (`[[provision.test_profiles]]`); the machine is
    /// `ready` after, or `failed` with the test named.
    Commission { profile: String },
    /// Boot BootOS without touching the disks, and hold the machine there for jobs until the
    /// operator returns it to its disk.
    Rescue {
        /// Mount every file system found on the disks read-only under `/mnt/rescue/<device>`.
        #[serde(default)]
        mount: bool,
    },
}

impl Purpose {
    pub fn is_provision(&self) -> bool {
        *self == Purpose::Provision
    }

    /// Its name, as events and pages show it.
    pub fn name(&self) -> &'static str {
        match self {
            Purpose::Provision => "provision",
            Purpose::Release { .. } => "release",
            Purpose::Rescue { .. } => "rescue",
            Purpose::Commission { .. } => "commission",
        }
    }
}

/// What a run's steps follow: its task's purpose and, for an install, how many configure and
/// post-install scripts there are and whether it is commissioned first.
#[derive(Debug, Clone, Copy)]
pub struct Route<'a> {
    pub purpose: &'a Purpose,
    pub configure: usize,
    pub post_install: usize,
    /// The task names a test profile (`commission`): its tests run after the check.
    pub commission: bool,
    /// The hardware profile declares BIOS settings: they are applied after the check.
    pub bios: bool,
    /// The hardware profile names a firmware baseline: machines are brought to it after the
    /// check, before the BIOS settings.
    pub firmware: bool,
}

impl super::TaskSpec {
    /// The test profile its runs' commission step runs: a commissioning task's, or the one an
    /// install is commissioned with first.
    pub fn test_profile(&self) -> Option<&str> {
        match (&self.purpose, &self.commission) {
            (Purpose::Commission { profile }, _) => Some(profile),
            (Purpose::Provision, Some(profile)) => Some(profile),
            _ => None,
        }
    }

    /// The route of this task's runs, with `configure` scripts from its hardware profile, its
    /// BIOS settings if it declares any and its firmware baseline if it names one.
    pub fn route(&self, configure: usize, bios: bool, firmware: bool) -> Route<'_> {
        Route {
            firmware,
            purpose: &self.purpose,
            configure,
            post_install: self.post_install.len(),
            commission: self.commission.is_some(),
            bios,
        }
    }
}

impl Step {
    /// The step after this one on `route` (a day-two run has no scripts).
    pub fn next(self, route: Route<'_>) -> Step {
        match (route.purpose, self) {
            (Purpose::Release { erase: EraseMode::None, .. }, Step::WaitAgent) => Step::Done,
            (Purpose::Release { .. }, Step::WaitAgent) => Step::Erase,
            (Purpose::Release { .. }, _) => Step::Done,
            (Purpose::Commission { .. }, Step::WaitAgent) => Step::Commission,
            (Purpose::Commission { .. }, _) => Step::Done,
            (Purpose::Rescue { .. }, Step::WaitAgent) => Step::Rescue,
            (Purpose::Rescue { .. }, Step::Rescue) => Step::Rescued,
            // Held until the operator returns it: the return enters reboot.
            (Purpose::Rescue { .. }, Step::Rescued) => Step::Rescued,
            (Purpose::Rescue { .. }, Step::Reboot) => Step::WaitInstalled,
            (Purpose::Rescue { .. }, _) => Step::Done,
            (Purpose::Provision, s) => s.next_install(route),
        }
    }

    /// The machine state that goes with the step in a run for `purpose`.
    pub fn machine_state(self, purpose: &Purpose) -> MachineState {
        match (purpose, self) {
            (Purpose::Release { .. }, Step::Done) => MachineState::Ready,
            (Purpose::Release { .. }, _) => MachineState::Releasing,
            (Purpose::Commission { .. }, Step::Done) => MachineState::Ready,
            (Purpose::Commission { .. }, _) => MachineState::Commissioning,
            (Purpose::Rescue { .. }, Step::WaitAgent | Step::Rescue | Step::Rescued) => MachineState::Rescue,
            (_, s) => s.install_state(),
        }
    }

    /// The machine's state when a run for `purpose` is cancelled at this step.
    pub fn cancelled_state(self, purpose: &Purpose) -> MachineState {
        match purpose {
            _ if self.installed() => MachineState::Installed,
            Purpose::Provision => MachineState::Ready,
            // Its disks may be partly erased: not fit for the pool until someone looks.
            Purpose::Release { .. } => MachineState::Failed,
            // Its disks were not touched: it boots them again.
            Purpose::Rescue { .. } => MachineState::Installed,
            // Not tested to the end: not trusted yet.
            Purpose::Commission { .. } => MachineState::Failed,
        }
    }
}
