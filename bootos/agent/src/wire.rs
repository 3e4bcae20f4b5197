//! The agent API (`/agent/v1`), as JSON types both ends compile against.
//!
//! - `POST /agent/v1/enroll` ([`EnrollRequest`] -> [`EnrollResponse`]): no credential; the
//!   appliance matches the machine by MAC (creating it if new) and issues a credential. Every
//!   later call carries `Authorization: Bearer <credential>`.
//! - `PUT /agent/v1/inventory` ([`Inventory`]).
//! - `GET /agent/v1/jobs/next?wait=SECS` -> 200 [`JobSpec`] or 204 after `wait` with nothing.
//! - `POST /agent/v1/jobs/{id}/output` ([`OutputChunk`] -> [`OutputAck`]): also the heartbeat
//!   that keeps a claimed job's lease; the ack says when the operator cancelled the job.
//! - `POST /agent/v1/jobs/{id}/result` ([`JobResult`]): idempotent; the first result wins.
//! - `POST /agent/v1/stats` ([`Stats`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod inventory;
pub use inventory::*;

/// How the agent runs: from the BootOS ramdisk, or as a service on an installed system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum AgentMode {
    #[default]
    Bootos,
    Installed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnrollRequest {
    /// Every NIC's MAC, lowercase colon form.
    pub macs: Vec<String>,
    /// The MAC the machine booted from (`rackboot.mac=` on the kernel command line), if known.
    #[serde(default)]
    pub boot_mac: Option<String>,
    #[serde(default)]
    pub serial: Option<String>,
    #[serde(default)]
    pub system_uuid: Option<String>,
    #[serde(default)]
    pub mode: AgentMode,
    #[serde(default)]
    pub version: String,
    /// The boot nonce of this boot (`rackboot.nonce=` on the kernel command line rackboot
    /// served): proves a BootOS agent is the boot rackboot answered, so it may take the machine
    /// over. Installed nodes renew with their credential instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
}

/// The `rackboot.nonce=` of a BootOS image with no per-machine command line (the HTTPS-boot
/// image): the agent asks for this boot's nonce over TLS pinned to the appliance's CA
/// (`POST /agent/v1/nonce`) before it enrolls.
pub const NONCE_OVER_TLS: &str = "tls";

/// `POST /agent/v1/nonce`: the MACs of the asking machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NonceRequest {
    pub macs: Vec<String>,
}

/// This boot's enrollment nonce, for the MAC whose address the request came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NonceResponse {
    pub mac: String,
    pub nonce: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnrollResponse {
    pub machine_id: u64,
    /// `<machine id>.<secret>`; sent as a bearer token on every later call.
    pub credential: String,
    /// False while an operator has yet to approve the machine (`agent.enroll = "approve"`);
    /// calls other than enroll are answered 403 until then.
    pub approved: bool,
    /// How long a long-poll may be held, seconds.
    pub poll_secs: u64,
    /// How often to send stats, seconds.
    pub stats_secs: u64,
    /// A claimed job must be heard from (output or heartbeat) within this, seconds.
    pub lease_secs: u64,
}

/// A job for the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobSpec {
    pub id: u64,
    /// Delivery attempt (1, 2, ...): a job whose lease ran out is delivered again.
    pub attempt: u32,
    pub action: Action,
    /// The agent stops the job after this many seconds.
    pub timeout_secs: u64,
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    /// A script (the JumpScript idea): `interpreter <file with body> args...` with `env` added.
    Script {
        #[serde(default = "default_interpreter")]
        interpreter: String,
        body: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
    /// Stream a disk image from `url` onto `disk` (a block device, or a file): raw, gzip, xz or
    /// zstd, told by its first bytes, never its name; a qcow2 image is refused. Its SHA-256 (of
    /// the file as served) is checked; progress lines go to the job output. Fails on a checksum
    /// mismatch, a truncated or corrupt stream, and an image that expands past the disk.
    DeployImage { url: String, sha256: String, disk: String },
    /// Run a signed vendor plugin: fetch its bundle by hash (`GET /agent/v1/plugins/{sha256}`),
    /// refuse it unless the bytes hash to `sha256`, unpack it under caps, run `check` (exit 0:
    /// already as wanted, 1: apply needed, 20: not applicable) and then `apply` (0: done, 10:
    /// done, reboot needed), each with `params` as JSON on stdin and its own timeout. A reboot
    /// from BootOS boots the network once (UEFI `BootNext`), so BootOS comes back.
    Plugin {
        name: String,
        version: String,
        /// Filled in by the appliance from the stored version (as are `signer`, `check`,
        /// `apply` and `reboot`): a submitted job names only the plugin, version, hash and params.
        #[serde(default)]
        vendor: String,
        /// The id of the trusted key that signed it.
        #[serde(default)]
        signer: String,
        sha256: String,
        #[serde(default)]
        check: PluginStep,
        #[serde(default)]
        apply: PluginStep,
        /// The plugin may reboot the node after apply exit 10 (the result is reported first).
        #[serde(default)]
        reboot: bool,
        /// Run `check` alone, to verify: exit 0 succeeds (unchanged), 20 is not applicable,
        /// and 1 fails the job (still not as wanted); `apply` never runs. An agent that predates
        /// it would apply: the appliance asks it only of BootOS, which it builds itself.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        check_only: bool,
        #[serde(default)]
        #[cfg_attr(feature = "openapi", schema(value_type = Object))]
        params: serde_json::Value,
    },
    /// Erase `disks` (block devices under `/dev`) as `mode` says; progress lines
    /// (`erase: NN% ...`) go to the job output. Every disk is checked before any is touched:
    /// one that is mounted by something else, missing, or unable to do `mode` fails the job
    /// with nothing written.
    Erase { disks: Vec<String>, mode: EraseMode },
    /// Collect and upload the inventory again.
    RefreshInventory,
    /// Reboot the node (the result is reported first). With `network`, boot from the network
    /// once: on UEFI `BootNext` is set to the firmware's network entry first (for a machine whose
    /// boot order puts its disk first). With `disk` (a block device under `/dev`), boot that disk
    /// once: on UEFI `BootNext` is set to an entry for its EFI system partition (the installed
    /// system's own, else the firmware's own entry for the disk, else one the agent writes), so a
    /// machine whose boot order puts the network first starts its new system without walking
    /// its network entries. The job's output says
    /// what was set, or why nothing was. An agent that predates a field just reboots.
    Reboot {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        network: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        disk: Option<String>,
    },
    /// Power the node off (the result is reported first).
    PowerOff,
    /// Set up (or reset) the appliance's own account on the machine's BMC in band, through
    /// `/dev/ipmi0` with ipmitool: user `username` (an unused user slot, or the one already so
    /// named) with a random password the agent makes, administrator on LAN `channel`, IPMI
    /// messaging and link auth on, enabled, the password tested. The password goes to the
    /// appliance in a [`BmcAccountReport`], never into the job's output.
    BmcAccount { username: String, channel: u8 },
}

/// What an in-band BMC account job set up (`POST /agent/v1/jobs/{id}/bmc-account`).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BmcAccountReport {
    /// The IPMI user slot.
    pub user_id: u8,
    pub username: String,
    /// The new password (the appliance seals it at once).
    pub password: String,
    pub channel: u8,
    /// The BMC's LAN address (`ipmitool lan print`).
    pub address: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

impl std::fmt::Debug for BmcAccountReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BmcAccountReport")
            .field("user_id", &self.user_id)
            .field("username", &self.username)
            .field("password", &"<hidden>")
            .field("channel", &self.channel)
            .field("address", &self.address)
            .field("mac", &self.mac)
            .finish()
    }
}

/// How a release erases a machine's disks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EraseMode {
    /// Nothing is erased.
    #[default]
    None,
    /// Partition tables and signatures go: the first and last 4 MiB of every partition and
    /// 64 MiB of each end of the disk are zeroed, and the whole disk is discarded where it
    /// supports that. Data beyond those regions stays readable to someone who looks.
    Quick,
    /// Every byte of every disk is overwritten with zeros.
    Zero,
    /// The device erases itself: NVMe Format with user-data erase, or ATA Security Erase
    /// (through hdparm). A disk that can do neither is refused before anything is touched.
    Secure,
}

impl EraseMode {
    pub fn as_str(self) -> &'static str {
        match self {
            EraseMode::None => "none",
            EraseMode::Quick => "quick",
            EraseMode::Zero => "zero",
            EraseMode::Secure => "secure",
        }
    }
}

impl std::str::FromStr for EraseMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        serde_json::from_value(serde_json::Value::String(s.to_string()))
            .map_err(|_| format!("unknown erase mode {s:?}: none, quick, zero or secure"))
    }
}

/// One program of a plugin: a file in its bundle, run directly (no shell), and its timeout.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PluginStep {
    pub run: String,
    pub timeout_secs: u64,
}

/// What a plugin job found or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PluginResult {
    /// `check` exited 0: already as wanted; nothing applied.
    Unchanged,
    /// `apply` exited 0.
    Applied,
    /// `apply` exited 10: applied, a reboot is needed.
    AppliedReboot,
    /// `check` exited 20: the plugin does not apply to this machine.
    NotApplicable,
    /// Fetching, the hash, unpacking, a timeout or an unexpected exit code.
    Failed,
}

/// A plugin job's report, carried in its [`JobResult`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PluginReport {
    pub result: PluginResult,
    pub check_exit: Option<i32>,
    pub apply_exit: Option<i32>,
}

pub fn default_interpreter() -> String {
    "/bin/sh".into()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Stdout,
    Stderr,
}

/// A piece of a job's output. `seq` numbers the chunks of one attempt from 0, so a chunk that is
/// sent twice (a retry after a lost answer) is stored once. A chunk with empty `data` is a
/// heartbeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OutputChunk {
    pub attempt: u32,
    pub seq: u32,
    pub stream: Stream,
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OutputAck {
    /// The operator cancelled the job (or it was finished otherwise): stop it.
    pub stop: bool,
}

/// How a job ended, as the agent saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Exit code 0.
    Succeeded,
    /// A non-zero exit code or a signal.
    Failed,
    /// Killed at `timeout_secs`.
    TimedOut,
    /// Stopped because the operator cancelled it.
    Cancelled,
    /// Could not be started (no interpreter, ...).
    Error,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobResult {
    pub attempt: u32,
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    #[serde(default)]
    pub error: Option<String>,
    /// What a plugin job found or did (plugin jobs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<PluginReport>,
}

impl JobResult {
    /// How a job the agent carried out itself (no script, no plugin) ended, `started` ago.
    pub fn ended(attempt: u32, started: std::time::Instant, outcome: Outcome, error: Option<String>) -> Self {
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        JobResult { attempt, outcome, exit_code: None, duration_ms, error, plugin: None }
    }
}

/// Periodic node stats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Stats {
    pub load: [f64; 3],
    pub mem_total_bytes: u64,
    pub mem_available_bytes: u64,
    pub uptime_secs: u64,
    pub disks: Vec<DiskUse>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DiskUse {
    pub mount: String,
    pub total_bytes: u64,
    pub used_bytes: u64,
}
