//! Where a machine stands in a rack, as stored on it: what each kind of evidence says, and
//! what placed it. Evidence comes from the network (option 82, added by the relay) or from the
//! operator (the rack's CSV by MAC, a confirmation); what a node reports about itself (its LLDP
//! neighbours, its DMI serial) is a claim, which places it only in a rack that trusts LLDP.

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

/// Option 82 that placed the machine nowhere, as decoded (`racks::relay`): kept on its
/// placement (the rack page lists it when `rack` is that rack's switch), and on its timeline
/// when it changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Unmatched {
    /// The rack whose switch sent it (its remote id names that switch), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    /// The port it names (`ge-0/0/5.0`, `module 1 port 5`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
    /// The switch its remote id names (text or MAC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
    /// `cisco-typed`, `text` or `binary`.
    pub form: String,
}

impl Unmatched {
    /// In words, for a flag.
    pub fn describe(&self) -> String {
        let mut s = format!("port {}", self.port.as_deref().unwrap_or("?"));
        if let Some(v) = self.vlan {
            s.push_str(&format!(" (VLAN {v})"));
        }
        if let Some(sw) = &self.switch {
            s.push_str(&format!(" of switch {sw}"));
        }
        s
    }
}

/// What placed a machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// DHCP option 82 from the relay.
    Option82,
    /// The LLDP neighbour the BootOS agent reported, in a rack with `trust_lldp`.
    Lldp,
    /// A row of the rack's CSV naming one of its MACs.
    Csv,
    /// A row of the rack's CSV naming the DMI serial its agent reported, in a rack with
    /// `trust_lldp`.
    Serial,
    /// An operator's confirmation (`PUT /machines/{id}/placement`).
    Operator,
}

impl Evidence {
    /// Whether this is only the node's own word (it never takes a slot another machine holds).
    pub fn is_claim(self) -> bool {
        matches!(self, Evidence::Lldp | Evidence::Serial)
    }
}

/// A machine's place as stored on it: what each kind of evidence says, and which one placed
/// it. Without `by` the machine is not placed: its node's claims wait for an operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Placement {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<Evidence>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option82: Option<Claim>,
    /// What its LLDP neighbours say (the node's word).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lldp: Option<Claim>,
    /// The CSV row that names one of its MACs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csv: Option<Claim>,
    /// The CSV row that names its reported DMI serial (the node's word).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<Claim>,
    /// Where an operator confirmed it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<Claim>,
    /// Unix seconds.
    pub placed_at: u64,
    /// The provisioning task the rack's `auto_provision` queued for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provision_task: Option<u64>,
    /// Option 82 it came with that placed it nowhere, decoded (the rack page of the switch it
    /// names lists it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmatched: Option<Unmatched>,
}

impl Placement {
    /// The node's claims while nothing placed it (for the rack page: an operator confirms
    /// one), with what made each. A placed machine's disagreeing claim is a mis-cabling flag.
    pub fn open_claims(&self) -> Vec<(&Claim, Evidence)> {
        if self.by.is_some() {
            return Vec::new();
        }
        [(&self.lldp, Evidence::Lldp), (&self.serial, Evidence::Serial)]
            .into_iter()
            .filter_map(|(c, by)| c.as_ref().map(|c| (c, by)))
            .collect()
    }
}
