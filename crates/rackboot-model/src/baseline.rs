//! Firmware baselines: per component (BIOS, BMC, NIC, disk controller) the version a hardware
//! profile's machines should run and the image (by SHA-256, uploaded to the appliance) that
//! brings them to it; and a machine's drift from its baseline, judged from the last firmware
//! read of its BMC ([`FirmwareReport`]).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::firmware::{FirmwareItem, FirmwareReport};

/// Components a baseline names, at most.
pub const MAX_COMPONENTS: usize = 32;
/// A version's length, at most.
pub const MAX_VERSION: usize = 64;

/// A kind of firmware.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    /// The system firmware: the system's `BiosVersion`, else an inventory entry named BIOS.
    Bios,
    /// The BMC's own firmware.
    Bmc,
    /// Network adapters.
    Nic,
    /// Disk controllers (RAID, HBA).
    Storage,
}

impl Component {
    pub fn as_str(self) -> &'static str {
        match self {
            Component::Bios => "bios",
            Component::Bmc => "bmc",
            Component::Nic => "nic",
            Component::Storage => "storage",
        }
    }

    /// What an inventory entry's id or name contains (lowercase) when the baseline gives no
    /// `match` of its own.
    fn default_match(self) -> &'static [&'static str] {
        match self {
            Component::Bios => &["bios", "uefi"],
            Component::Bmc => &["bmc", "idrac", "ilo ", "ilo5", "ilo6", "manager"],
            Component::Nic => &["nic", "network", "ethernet", "adapter"],
            Component::Storage => &["raid", "storage", "hba", "perc", "sas"],
        }
    }
}

/// How an image reaches a Redfish BMC (`firmware.transfer`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transfer {
    /// `SimpleUpdate` where the BMC offers it, else a push.
    #[default]
    Auto,
    /// `SimpleUpdate`: the BMC fetches the image from this appliance's HTTP.
    Fetch,
    /// `MultipartHttpPushUri`: the appliance sends the image to the BMC (a BMC on a management
    /// network with no way to the provisioning VLAN).
    Push,
}

/// One component of a baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BaselineComponent {
    pub component: Component,
    /// The version wanted, as the BMC reports it.
    pub version: String,
    /// The image's SHA-256 (64 hex digits, `sha256:` allowed before it), uploaded with
    /// `rackboot firmware upload`.
    pub image: String,
    /// Which inventory entries are this component: a substring of their id or name
    /// (case-insensitive); default by kind (`nic`: NIC, Network, Ethernet, Adapter, ...).
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
    /// A signed vendor plugin that flashes this component in BootOS, for machines without a
    /// Redfish BMC (the BMC's `UpdateService` is used where there is one). Its `check` and
    /// `apply` get the reference's parameters with `firmware` added: the component, the
    /// version wanted, the image's URL and SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub plugin: Option<crate::plugins::refs::PluginRef>,
}

impl BaselineComponent {
    /// The image's SHA-256 as 64 lowercase hex digits.
    pub fn sha256(&self) -> String {
        self.image.trim_start_matches("sha256:").to_ascii_lowercase()
    }

    /// Whether an inventory entry is this component.
    fn is(&self, item: &FirmwareItem) -> bool {
        let (id, name) = (item.id.to_ascii_lowercase(), item.name.to_ascii_lowercase());
        let hit = |m: &str| id.contains(m) || name.contains(m);
        match &self.matches {
            Some(m) => hit(&m.to_ascii_lowercase()),
            None => self.component.default_match().iter().any(|m| hit(m)),
        }
    }
}

/// A named firmware baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub name: String,
    pub components: Vec<BaselineComponent>,
}

/// Whether a string is a SHA-256 in hex (64 digits).
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Checks a baseline: at least one component, at most [`MAX_COMPONENTS`], each with a version
/// and a SHA-256 image; a component kind at most once per `match`.
pub fn check(b: &Baseline) -> Result<(), String> {
    let at = format!("firmware baseline {:?}", b.name);
    if b.components.is_empty() || b.components.len() > MAX_COMPONENTS {
        return Err(format!("{at}: 1 to {MAX_COMPONENTS} components"));
    }
    let mut seen = std::collections::BTreeSet::new();
    for c in &b.components {
        let what = format!("{at}: {}", c.component.as_str());
        let v = c.version.trim();
        if v.is_empty() || v.len() > MAX_VERSION || v.chars().any(char::is_control) {
            return Err(format!("{what}: version must be 1 to {MAX_VERSION} printable characters"));
        }
        if !is_sha256(&c.sha256()) {
            return Err(format!("{what}: image must be a SHA-256 (64 hex digits), got {:?}", c.image));
        }
        if c.matches.as_deref().is_some_and(|m| m.trim().is_empty() || m.len() > 64) {
            return Err(format!("{what}: match must be 1 to 64 characters"));
        }
        if c.plugin.as_ref().is_some_and(|p| p.name.trim().is_empty() || !p.params.is_object()) {
            return Err(format!("{what}: plugin needs a name, and its params must be a table"));
        }
        if c.plugin.as_ref().is_some_and(|p| p.params.get("firmware").is_some()) {
            return Err(format!("{what}: plugin params may not set `firmware`: the appliance fills it in"));
        }
        if !seen.insert((c.component, c.matches.as_deref().map(str::to_ascii_lowercase))) {
            return Err(format!("{what}: named twice (give each a different match)"));
        }
    }
    Ok(())
}

/// Where a machine or a component stands against its baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// Every entry reports the wanted version.
    Current,
    /// The BMC has not said (never read, or no entry of this kind).
    Unknown,
    /// An entry reports another version.
    Drift,
}

/// What the BMC reports for one entry of a component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Found {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The entry's Redfish path (an update's target); absent for the system's `BiosVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// One component against its baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ComponentDrift {
    pub component: Component,
    pub wanted: String,
    pub image: String,
    pub standing: Standing,
    pub found: Vec<Found>,
}

/// A machine against its baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Drift {
    pub baseline: String,
    /// Drift if a component drifts, else unknown if one is unknown, else current.
    pub standing: Standing,
    pub components: Vec<ComponentDrift>,
    /// When the BMC was read (absent: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at_ms: Option<u64>,
}

impl Drift {
    /// The components to update: those that drift.
    pub fn drifting(&self) -> impl Iterator<Item = &ComponentDrift> {
        self.components.iter().filter(|c| c.standing == Standing::Drift)
    }
}

/// Versions compare trimmed, case-insensitive, with a leading `v` dropped (`v2.1` is `2.1`).
pub fn same_version(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        let s = s.trim();
        s.strip_prefix(['v', 'V']).filter(|r| r.starts_with(|c: char| c.is_ascii_digit())).unwrap_or(s).to_lowercase()
    };
    norm(a) == norm(b)
}

/// A machine's drift from `baseline`, from its BMC's last firmware read (`None`: never read).
pub fn drift(baseline: &Baseline, report: Option<&FirmwareReport>) -> Drift {
    drift_with(baseline, report, None)
}

/// [`drift`], with BootOS's in-band view where the BMC says nothing: the BIOS version DMI
/// reported (`inband_bios`) stands for a `bios` component no BMC read shows.
pub fn drift_with(baseline: &Baseline, report: Option<&FirmwareReport>, inband_bios: Option<&str>) -> Drift {
    let components: Vec<ComponentDrift> = baseline
        .components
        .iter()
        .map(|c| {
            let mut found: Vec<Found> = Vec::new();
            if let Some(r) = report {
                match (&r.bios_version, c.component, &c.matches) {
                    (Some(v), Component::Bios, None) => found.push(Found {
                        id: "BiosVersion".into(),
                        name: "System BIOS".into(),
                        version: Some(v.clone()),
                        path: None,
                    }),
                    _ => found.extend(r.inventory.iter().flatten().filter(|i| c.is(i)).map(|i| Found {
                        id: i.id.clone(),
                        name: i.name.clone(),
                        version: i.version.clone(),
                        path: i.path.clone(),
                    })),
                }
            }
            if let (true, Component::Bios, None, Some(v)) = (found.is_empty(), c.component, &c.matches, inband_bios) {
                found.push(Found {
                    id: "dmi".into(),
                    name: "BIOS (in band, DMI)".into(),
                    version: Some(v.chars().filter(|c| !c.is_control()).take(crate::firmware::MAX_TEXT).collect()),
                    path: None,
                });
            }
            let standing = if found.is_empty() || found.iter().any(|f| f.version.is_none()) {
                if found.iter().any(|f| f.version.as_deref().is_some_and(|v| !same_version(v, &c.version))) {
                    Standing::Drift
                } else {
                    Standing::Unknown
                }
            } else if found.iter().all(|f| f.version.as_deref().is_some_and(|v| same_version(v, &c.version))) {
                Standing::Current
            } else {
                Standing::Drift
            };
            ComponentDrift { component: c.component, wanted: c.version.clone(), image: c.sha256(), standing, found }
        })
        .collect();
    let standing = components.iter().map(|c| c.standing).max().unwrap_or(Standing::Current);
    Drift { baseline: baseline.name.clone(), standing, components, read_at_ms: report.map(|r| r.read_at_ms) }
}

/// Where a run's firmware step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum FirmwarePhase {
    /// The update runs through the BMC (asked at `at_ms`): read, flash, restart into BootOS,
    /// read back.
    Update { at_ms: u64 },
    /// Updated; the machine was restarted at `at_ms`: waiting for its BootOS agent.
    Restart { at_ms: u64 },
    /// No Redfish BMC: the plugin of the baseline's component `component` (its index) runs in
    /// BootOS as the run's job, check and then apply.
    Flash { component: usize, at_ms: u64 },
    /// The plugin's apply asked for a reboot (at `at_ms`): waiting for BootOS to come back.
    FlashRestart { component: usize, at_ms: u64 },
    /// Flashed: the plugin's check alone runs again, and must say the component is current.
    Verify { component: usize, at_ms: u64 },
}

impl FirmwarePhase {
    pub fn at_ms(self) -> u64 {
        match self {
            FirmwarePhase::Update { at_ms }
            | FirmwarePhase::Restart { at_ms }
            | FirmwarePhase::Flash { at_ms, .. }
            | FirmwarePhase::FlashRestart { at_ms, .. }
            | FirmwarePhase::Verify { at_ms, .. } => at_ms,
        }
    }
}

#[cfg(test)]
mod tests;
