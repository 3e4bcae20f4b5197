//! Where a machine stands in a rack, as stored on it: the evidence and the claim that won.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A rack and slot some evidence points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Claim {
    pub rack: String,
    pub slot: u32,
    /// The switch port, for option 82 and LLDP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
}

/// What placed a machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// DHCP option 82 from the relay.
    Option82,
    /// The LLDP neighbour the BootOS agent reported.
    Lldp,
    /// The rack's CSV machine list.
    Csv,
}

/// A machine's place as stored on it: what each kind of evidence says, and which one won.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Placement {
    pub by: Evidence,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option82: Option<Claim>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lldp: Option<Claim>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csv: Option<Claim>,
    /// Unix seconds.
    pub placed_at: u64,
    /// The provisioning task the rack's `auto_provision` queued for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provision_task: Option<u64>,
}
