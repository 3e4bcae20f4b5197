//! CMDB record types: machines, leases and timeline events, as stored (JSON in redb values).

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::events::EventKind;
use crate::mac::Mac;

mod agent;
pub use agent::{AgentRecord, AgentView};

/// Current record schema version; bump it together with a step in `store::migrate`.
pub const SCHEMA_VERSION: u64 = 11;

/// Where a machine is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MachineState {
    Discovered,
    Ready,
    Queued,
    Configuring,
    Installing,
    PostInstall,
    Installed,
    Failed,
    /// A release is under way: BootOS erases the disks; `ready` after.
    Releasing,
    /// Held in BootOS for an operator's jobs, its disks untouched.
    Rescue,
    /// BootOS runs a test profile's tests; `ready` after, or `failed` with the test named.
    Commissioning,
    /// Out of every pool until an operator brings it back.
    Retired,
}

impl std::str::FromStr for MachineState {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        serde_json::from_value(serde_json::Value::String(s.to_string()))
            .map_err(|_| format!("unknown machine state {s:?}"))
    }
}

/// A machine in the CMDB.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Machine {
    /// Record schema version.
    pub v: u64,
    pub id: u64,
    pub macs: Vec<Mac>,
    pub hostname: Option<String>,
    #[schema(value_type = Option<String>, format = Ipv4)]
    pub reserved_ip: Option<Ipv4Addr>,
    pub serial: Option<String>,
    pub vendor: Option<String>,
    pub model: Option<String>,
    pub tags: Vec<String>,
    pub state: MachineState,
    /// Option 82 circuit id (sub-option 1), hex.
    pub circuit_id: Option<String>,
    /// Option 82 remote id (sub-option 2), hex.
    pub remote_id: Option<String>,
    /// Last client architecture seen in DHCP option 93, e.g. "bios", "uefi-x64".
    pub last_arch: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
    pub last_seen_at: Option<u64>,
    /// Boot profile an operator pinned the machine to; wins over the planner's default.
    #[serde(default)]
    pub boot_profile: Option<String>,
    /// Hardware as the agent reported it (schema 3).
    #[serde(default)]
    pub inventory: Option<rackboot_agent::wire::Inventory>,
    /// An installer boot a provisioning run set up (schema 5): PXE boots its profile until the
    /// installer reports back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installer: Option<InstallerBoot>,
    /// The rack it is placed in (schema 8; see `racks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    /// Its slot (rack unit) there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
    /// What it gets first when it PXE-boots as UEFI x64, over its subnet's and the global
    /// choice (`boot.uefi_loader`): `shim` for a machine with Secure Boot on. Always shown
    /// (`null`: the default), so pages and clients can read it.
    #[serde(default)]
    pub uefi_loader: Option<crate::boot::UefiLoader>,
    /// What placed it, and what each kind of evidence says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::placement::Placement>,
    /// Its installed network (`PUT /machines/{id}/network`); unset: its rack's default, else
    /// DHCP on every Ethernet port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::network::NetSpec>,
    /// How its installed network differs from the spec, as its installed agent last reported
    /// (empty: as planned; absent: not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_problems: Option<Vec<String>>,
    /// The resource pool it belongs to (its rack's at placement; else moved by an admin).
    #[serde(default = "crate::pools::default_pool")]
    pub pool: String,
}

/// The installer a machine boots while a run installs it from an answer file. The installer's
/// post-install step reports back to `/boot/installed` with `token`, which hands over the
/// agent's credential and switches the machine to its own disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InstallerBoot {
    pub profile: String,
    pub run: u64,
    /// Never empty as stored; the API blanks it (and so leaves it out), see [`Machine::shown`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
    /// The installer reported back: PXE boots the disk now. The token stays good (a retried
    /// report-back gets a new credential) until the installed agent checks in.
    #[serde(default)]
    pub reported: bool,
}

impl Machine {
    /// An installer a provisioning run set up has not reported back yet: PXE boots it.
    pub fn installer_pending(&self) -> bool {
        self.installer.as_ref().is_some_and(|i| !i.reported)
    }

    /// The machine as the API shows it: without its installer token, which only the machine
    /// itself is given (in its answer file).
    pub fn shown(mut self) -> Machine {
        if let Some(i) = &mut self.installer {
            i.token.clear();
        }
        self
    }

    /// A new `discovered` machine with nothing known but its MACs.
    pub fn new(id: u64, macs: Vec<Mac>, now: u64) -> Machine {
        Machine {
            v: SCHEMA_VERSION,
            id,
            macs,
            hostname: None,
            reserved_ip: None,
            serial: None,
            vendor: None,
            model: None,
            tags: Vec::new(),
            state: MachineState::Discovered,
            circuit_id: None,
            remote_id: None,
            last_arch: None,
            created_at: now,
            updated_at: now,
            last_seen_at: None,
            boot_profile: None,
            inventory: None,
            installer: None,
            rack: None,
            slot: None,
            placement: None,
            uefi_loader: None,
            network: None,
            network_problems: None,
            pool: crate::pools::default_pool(),
        }
    }
}

/// An address lease.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Lease {
    pub v: u64,
    #[schema(value_type = String, format = Ipv4)]
    pub ip: Ipv4Addr,
    pub mac: Mac,
    pub hostname: Option<String>,
    /// The hostname the client itself sent (option 12), if any (schema 3).
    #[serde(default)]
    pub client_hostname: Option<String>,
    /// Unix seconds; the address is free again after this.
    pub expires_at: u64,
    pub state: LeaseState,
    pub updated_at: u64,
}

/// Lease status as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LeaseState {
    Active,
    Released,
    /// The client reported the address in use (DHCPDECLINE); held until `expires_at`.
    Declined,
}

/// One step on a machine's timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Event {
    pub seq: u64,
    pub machine_id: u64,
    /// Unix milliseconds.
    pub at_ms: u64,
    /// What happened.
    pub kind: EventKind,
    /// Kind-specific facts (see [`EventKind`]).
    pub detail: serde_json::Value,
    /// The machine's state when the event was recorded (schema 6; absent on older events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<MachineState>,
}

/// Fields an operator sets when registering a machine.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMachine {
    #[schema(min_items = 1)]
    pub macs: Vec<Mac>,
    #[serde(default)]
    #[schema(pattern = r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")]
    pub hostname: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, format = Ipv4)]
    pub reserved_ip: Option<Ipv4Addr>,
    #[serde(default)]
    pub serial: Option<String>,
    #[serde(default)]
    #[schema(value_type = Vec<Tag>)]
    pub tags: Vec<String>,
}

/// A tag, as the document shows one: 1-64 characters.
#[derive(ToSchema)]
#[schema(min_length = 1, max_length = 64)]
pub struct Tag(pub String);

/// A partial update; `Some(None)` clears an optional field.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MachinePatch {
    #[serde(default, with = "double_option")]
    #[schema(pattern = r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")]
    pub hostname: Option<Option<String>>,
    #[serde(default, with = "double_option")]
    #[schema(value_type = Option<String>, format = Ipv4)]
    pub reserved_ip: Option<Option<Ipv4Addr>>,
    #[serde(default, with = "double_option")]
    pub serial: Option<Option<String>>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<Tag>>)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    pub macs: Option<Vec<Mac>>,
    #[serde(default)]
    pub state: Option<MachineState>,
    /// A boot profile's name (`null` unpins).
    #[serde(default, with = "double_option")]
    #[schema(pattern = r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")]
    pub boot_profile: Option<Option<String>>,
    /// `"ipxe"`, `"shim"` or `"https"`; `null` follows the subnet and the config again.
    #[serde(default, with = "double_option")]
    pub uefi_loader: Option<Option<crate::boot::UefiLoader>>,
}

impl MachinePatch {
    /// Sets every field the patch names on `m`.
    pub fn apply_to(self, m: &mut Machine) {
        let MachinePatch { hostname, reserved_ip, serial, tags, macs, state, boot_profile, uefi_loader } = self;
        if let Some(v) = hostname {
            m.hostname = v;
        }
        if let Some(v) = reserved_ip {
            m.reserved_ip = v;
        }
        if let Some(v) = serial {
            m.serial = v;
        }
        if let Some(v) = tags {
            m.tags = v;
        }
        if let Some(v) = macs {
            m.macs = v;
        }
        if let Some(v) = state {
            m.state = v;
        }
        if let Some(v) = boot_profile {
            m.boot_profile = v;
        }
        if let Some(v) = uefi_loader {
            m.uefi_loader = v;
        }
    }
}

mod double_option {
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }
}

/// A boot profile defined through the API (config-defined ones live in the config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StoredProfile {
    #[serde(default)]
    pub name: String,
    /// A path in the boot directory or an `http(s)://` URL (not blank).
    #[schema(pattern = r"\S")]
    pub kernel: String,
    #[schema(pattern = r"\S")]
    pub initrd: String,
    #[serde(default)]
    pub cmdline: String,
    /// For an installer: the answer file it reads (see `Profile::answer` in the config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^(kickstart|preseed|autoinstall)$")]
    pub answer: Option<String>,
    /// The resource pool whose machines and tasks may use it (and whose users see it); none:
    /// every pool's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")]
    pub pool: Option<String>,
}

/// What the DHCP server learned about a client from one packet.
#[derive(Debug, Clone, Default)]
pub struct Sighting {
    pub mac: Option<Mac>,
    pub arch: Option<String>,
    pub circuit_id: Option<String>,
    pub remote_id: Option<String>,
}

/// Validates a hostname label (RFC 1123), as used in DHCP option 12 and DNS.
pub fn valid_hostname(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 63
        && h.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !h.starts_with('-')
        && !h.ends_with('-')
}

/// Names a client's own DHCP hostname (option 12) never gets in DNS: what browsers and stacks
/// look up to configure themselves (WPAD, ISATAP), `localhost`, and the appliance's own name.
pub const RESERVED_CLIENT_NAMES: &[&str] = &["wpad", "isatap", "localhost", "rackboot"];

/// Whether the name a client sent for itself (option 12) may be published for it: a valid label
/// that is none of [`RESERVED_CLIENT_NAMES`].
pub fn publishable_client_name(h: &str) -> bool {
    valid_hostname(h) && !RESERVED_CLIENT_NAMES.iter().any(|r| h.eq_ignore_ascii_case(r))
}

/// Machines nobody has claimed that the store keeps before evicting the oldest
/// (`[server] max_unclaimed_machines`).
pub const DEFAULT_UNCLAIMED_CAP: usize = 10_000;
