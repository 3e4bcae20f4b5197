//! A machine's agent as stored (its credential's hash, what it last reported) and as shown.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::mac::Mac;

/// A machine's agent: its credential (as a SHA-256 of the secret) and what it last reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    pub v: u64,
    pub machine_id: u64,
    /// Hex SHA-256 of the secret part of the current credential; a new accepted enrollment
    /// replaces it, so an older credential stops working.
    pub secret_sha256: String,
    /// A newer enrollment of an approved machine that still needs the operator's approval: its
    /// hash waits here while the current credential keeps working (so an unapproved
    /// enrollment can neither take the machine over nor lock its real agent out).
    #[serde(default)]
    pub pending_sha256: Option<String>,
    pub mode: rackboot_agent::wire::AgentMode,
    pub approved: bool,
    pub enrolled_at: u64,
    pub enrolled_from: Option<String>,
    pub boot_mac: Option<Mac>,
    #[serde(default)]
    pub system_uuid: Option<String>,
    pub version: String,
    pub stats: Option<rackboot_agent::wire::Stats>,
    pub stats_at: Option<u64>,
    /// MACs an unproven enrollment brought that no machine had: attached to this machine only
    /// when the operator approves it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_macs: Vec<Mac>,
    /// Hex SHA-256 of the installed system's credential, kept while a rescue holds the machine
    /// in BootOS: once the machine is returned to its disk, it admits that system's agent
    /// again (and only then). Gone with the next enrollment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_sha256: Option<String>,
}

/// An agent as the API shows it (no credential hash).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AgentView {
    pub machine_id: u64,
    pub mode: rackboot_agent::wire::AgentMode,
    pub approved: bool,
    /// Not approved yet, or a newer enrollment waits for approval.
    pub approval_pending: bool,
    pub enrolled_at: u64,
    pub enrolled_from: Option<String>,
    pub boot_mac: Option<Mac>,
    pub system_uuid: Option<String>,
    pub version: String,
    pub stats: Option<rackboot_agent::wire::Stats>,
    pub stats_at: Option<u64>,
}

impl AgentRecord {
    /// The record as the API shows it (no credential hash).
    pub fn view(&self) -> AgentView {
        AgentView {
            machine_id: self.machine_id,
            mode: self.mode,
            approved: self.approved,
            approval_pending: self.pending_sha256.is_some() || !self.approved,
            enrolled_at: self.enrolled_at,
            enrolled_from: self.enrolled_from.clone(),
            boot_mac: self.boot_mac,
            system_uuid: self.system_uuid.clone(),
            version: self.version.clone(),
            stats: self.stats.clone(),
            stats_at: self.stats_at,
        }
    }
}
