//! BMC records as stored and shown: address, protocol, user, the sealed password, the Redfish
//! TLS policy and the last power reading; and the power actions and states.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Longest BMC address, user name and password accepted.
pub const MAX_FIELD: usize = 255;

/// How rackboot speaks to a BMC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// DMTF Redfish over HTTPS.
    Redfish,
    /// IPMI 2.0 over LAN (lanplus), through Debian's `ipmitool`.
    Ipmi,
}

/// How a Redfish BMC's certificate is checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum TlsPolicy {
    /// The certificate's SHA-256 (DER, lower-case hex) must be this one.
    Fingerprint { sha256: String },
    /// The certificate must chain to the appliance CA (and name the address).
    Ca,
    /// Any certificate is accepted: the password can be read by whoever answers at the address.
    Insecure,
}

/// The firmware mode a machine network-boots in, as its BMC's boot override sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BootMode {
    Uefi,
    Legacy,
}

/// How the machine is booted into BootOS through its BMC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BootVia {
    /// From the network once (PXE), DHCP answering it.
    #[default]
    Pxe,
    /// From a small ISO the BMC inserts as a virtual CD (Redfish VirtualMedia): BootOS with the
    /// machine's static address, for a segment where no DHCP answers it.
    VirtualMedia,
}

impl BootVia {
    pub fn is_pxe(&self) -> bool {
        *self == BootVia::Pxe
    }
}

/// A power state read from a BMC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PowerState {
    On,
    Off,
    PoweringOn,
    PoweringOff,
    Unknown,
}

/// What an operator (or a provisioning run) asks a BMC to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PowerAction {
    On,
    /// Graceful shutdown, then forced off after `bmc.soft_off_timeout_secs`.
    Off,
    /// Restart (the BMC's own reset type, or off + on).
    Cycle,
    /// Read the power state.
    Status,
    /// Boot from the network once at the next start (no power change).
    PxeOnce,
}

impl PowerAction {
    /// The lower-case name (`pxe-once`).
    pub fn as_str(self) -> &'static str {
        match self {
            PowerAction::On => "on",
            PowerAction::Off => "off",
            PowerAction::Cycle => "cycle",
            PowerAction::Status => "status",
            PowerAction::PxeOnce => "pxe-once",
        }
    }
}

/// The last power state read, with when and, if the read failed, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PowerReading {
    pub state: PowerState,
    /// When it was read (Unix milliseconds).
    pub at_ms: u64,
    /// Why the last attempt failed (the state is then the one before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A machine's BMC as stored (table `bmcs`, keyed by machine id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bmc {
    pub machine_id: u64,
    /// `host` or `host:port` (an IPv6 host in brackets).
    pub address: String,
    pub protocol: Protocol,
    pub username: String,
    /// The password sealed with the appliance's data key for `bmc:<machine id>`.
    pub password_sealed: String,
    /// Redfish only (IPMI has no TLS).
    pub tls: TlsPolicy,
    /// Redfish system id; `None`: the only system in the Systems collection.
    #[serde(default)]
    pub system_id: Option<String>,
    /// The mode a PXE boot override asks for; `None`: the mode DHCP last saw the machine in,
    /// UEFI for a machine never seen.
    #[serde(default)]
    pub boot_mode: Option<BootMode>,
    #[serde(default)]
    pub power: Option<PowerReading>,
    pub updated_at: u64,
    /// The last read of its firmware (BIOS attributes, inventory), on an operator's request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<crate::firmware::FirmwareReport>,
    /// Set when the account is the appliance's own, set up in band by the machine's agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inband: Option<InbandAccount>,
    /// How provisioning boots it into BootOS.
    #[serde(default, skip_serializing_if = "BootVia::is_pxe")]
    pub boot_via: BootVia,
}

/// The appliance's own BMC account, set up in band (IPMI through `/dev/ipmi0`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InbandAccount {
    /// The IPMI user slot and LAN channel.
    pub user_id: u8,
    pub channel: u8,
    /// The BMC's MAC address as it reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// The agent job that set the password, and when (Unix ms).
    pub job: u64,
    pub set_at_ms: u64,
}

impl Bmc {
    /// What the sealed password is bound to.
    pub fn seal_binding(machine_id: u64) -> String {
        format!("bmc:{machine_id}")
    }

    /// The record as the API shows it: everything but the password.
    pub fn view(&self, now_ms: u64) -> BmcView {
        BmcView {
            machine_id: self.machine_id,
            address: self.address.clone(),
            protocol: self.protocol,
            username: self.username.clone(),
            password_set: !self.password_sealed.is_empty(),
            tls: (self.protocol == Protocol::Redfish).then(|| self.tls.clone()),
            warning: (self.protocol == Protocol::Redfish && self.tls == TlsPolicy::Insecure).then(|| {
                "tls insecure: the BMC's certificate is not checked; its password goes to whoever answers".into()
            }),
            system_id: self.system_id.clone(),
            boot_mode: self.boot_mode,
            power: self.power.clone(),
            power_age_secs: self.power.as_ref().map(|p| now_ms.saturating_sub(p.at_ms) / 1000),
            updated_at: self.updated_at,
            inband: self.inband.clone(),
            boot_via: self.boot_via,
        }
    }
}

impl BmcView {
    /// `redfish` or `ipmi`.
    pub fn protocol_name(&self) -> &'static str {
        match self.protocol {
            Protocol::Redfish => "redfish",
            Protocol::Ipmi => "ipmi",
        }
    }
}

/// A machine's BMC as the API shows it (never the password).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BmcView {
    pub machine_id: u64,
    pub address: String,
    pub protocol: Protocol,
    pub username: String,
    /// Whether a password is stored (it is never shown).
    pub password_set: bool,
    /// Redfish's certificate check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsPolicy>,
    /// Set when the certificate is not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_id: Option<String>,
    /// The boot mode set for PXE overrides (absent: the mode DHCP last saw, else UEFI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_mode: Option<BootMode>,
    /// The last power state read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerReading>,
    /// How old that reading is, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_age_secs: Option<u64>,
    pub updated_at: u64,
    /// The account is the appliance's own, set up in band (its password rotated by the same job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inband: Option<InbandAccount>,
    /// How provisioning boots the machine into BootOS.
    pub boot_via: BootVia,
}

/// `PUT /machines/{id}/bmc`: a machine's BMC. The certificate check is `fingerprint`, else
/// `insecure: true`, else the appliance CA.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BmcInput {
    /// `host` or `host:port` (`[v6]:port`).
    #[schema(
        max_length = 255,
        pattern = r"^([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$"
    )]
    pub address: String,
    pub protocol: Protocol,
    #[schema(pattern = r"^[^\u0000-\u001f\u007f-\u009f]{1,255}$")]
    pub username: String,
    /// Required the first time; left out, the stored one is kept.
    #[serde(default)]
    #[schema(pattern = r"^[^\n\r\u0000]{1,255}$")]
    pub password: Option<String>,
    /// SHA-256 of the BMC's certificate (hex, colons allowed, optional `sha256:` prefix).
    #[serde(default)]
    #[schema(pattern = "^(sha256:)?(:*[0-9A-Fa-f]){64}:*$")]
    pub fingerprint: Option<String>,
    /// Accept any certificate (shown as a warning).
    #[serde(default)]
    pub insecure: bool,
    /// Redfish system id when the BMC has several systems.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9._-]{1,128}$")]
    pub system_id: Option<String>,
    /// `uefi` or `legacy`: the mode a PXE boot override asks for. Left out, the mode DHCP last
    /// saw the machine in (UEFI for a machine never seen).
    #[serde(default)]
    pub boot_mode: Option<BootMode>,
    /// `pxe` (the default) or `virtual-media`: how provisioning boots it into BootOS (Redfish).
    #[serde(default)]
    pub boot_via: BootVia,
}

impl BmcInput {
    /// Checks every field; returns the TLS policy. Errors name the field.
    pub fn validate(&self) -> Result<TlsPolicy, (&'static str, String)> {
        let bad = |field, why: &str| Err((field, why.to_string()));
        if self.address.is_empty() || self.address.len() > MAX_FIELD {
            return bad("address", "must be 1-255 characters");
        }
        if !self.address.chars().all(|c| c.is_ascii_alphanumeric() || ".-:[]_".contains(c)) {
            return bad("address", "must be host or host:port (no scheme, path or spaces)");
        }
        if split_address(&self.address, 0).is_none() {
            return bad("address", "must be host or host:port with a port of 1-65535");
        }
        let chars = |s: &str| s.chars().count();
        if self.username.is_empty() || chars(&self.username) > MAX_FIELD || self.username.chars().any(char::is_control)
        {
            return bad("username", "must be 1-255 printable characters");
        }
        if let Some(p) = &self.password {
            if p.is_empty() || chars(p) > MAX_FIELD || p.contains(['\n', '\r', '\0']) {
                return bad("password", "must be 1-255 characters without line breaks");
            }
        }
        if let Some(id) = &self.system_id {
            if id.is_empty() || id.len() > 128 || !id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
                return bad("system_id", "must be 1-128 of [A-Za-z0-9-_.]");
            }
        }
        if self.boot_via == BootVia::VirtualMedia && self.protocol != Protocol::Redfish {
            return bad("boot_via", "virtual media needs a Redfish BMC");
        }
        match (&self.fingerprint, self.insecure) {
            (Some(_), true) => bad("insecure", "give a fingerprint or insecure, not both"),
            (Some(f), false) => match normalize_fingerprint(f) {
                Some(sha256) => Ok(TlsPolicy::Fingerprint { sha256 }),
                None => bad("fingerprint", "must be a SHA-256: 64 hex digits (colons allowed)"),
            },
            (None, true) => Ok(TlsPolicy::Insecure),
            (None, false) => Ok(TlsPolicy::Ca),
        }
    }
}

/// `sha256:AA:BB...` or plain hex -> 64 lower-case hex digits.
pub fn normalize_fingerprint(f: &str) -> Option<String> {
    let hex: String = f.trim().trim_start_matches("sha256:").chars().filter(|c| *c != ':').collect();
    (hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit())).then(|| hex.to_ascii_lowercase())
}

/// Splits `host[:port]` (`[v6]:port` for IPv6) into host and port (`default` without one).
pub fn split_address(address: &str, default: u16) -> Option<(String, u16)> {
    if let Some(rest) = address.strip_prefix('[') {
        let (host, tail) = rest.split_once(']')?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p.parse().ok().filter(|p| *p != 0)?,
            None if tail.is_empty() => default,
            None => return None,
        };
        return Some((host.to_string(), port));
    }
    match address.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && !host.is_empty() => {
            Some((host.to_string(), port.parse().ok().filter(|p| *p != 0)?))
        }
        Some(_) => None,
        None => Some((address.to_string(), default)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(address: &str) -> BmcInput {
        BmcInput {
            address: address.into(),
            protocol: Protocol::Redfish,
            username: "admin".into(),
            password: Some("pw".into()),
            fingerprint: None,
            insecure: false,
            system_id: None,
            boot_mode: None,
            boot_via: Default::default(),
        }
    }

    #[test]
    fn addresses_and_fingerprints_are_checked() {
        assert_eq!(split_address("10.0.0.1", 443), Some(("10.0.0.1".into(), 443)));
        assert_eq!(split_address("bmc-7:8000", 443), Some(("bmc-7".into(), 8000)));
        assert_eq!(split_address("[fd00::1]:623", 443), Some(("fd00::1".into(), 623)));
        assert_eq!(split_address("bmc:0", 443), None);
        assert_eq!(split_address("fd00::1", 443), None, "IPv6 needs brackets");
        assert_eq!(input("198.18.0.9:8443").validate(), Ok(TlsPolicy::Ca));
        assert_eq!(input("https://198.18.0.9/").validate().unwrap_err().0, "address");
        assert_eq!(input("a b").validate().unwrap_err().0, "address");
        let mut i = input("bmc");
        i.fingerprint = Some(format!("sha256:{}", "AB:".repeat(31) + "AB"));
        assert_eq!(i.validate(), Ok(TlsPolicy::Fingerprint { sha256: "ab".repeat(32) }));
        i.insecure = true;
        assert_eq!(i.validate().unwrap_err().0, "insecure");
        i.fingerprint = Some("abcd".into());
        i.insecure = false;
        assert_eq!(i.validate().unwrap_err().0, "fingerprint");
        let mut i = input("bmc");
        i.password = Some("a\nb".into());
        assert_eq!(i.validate().unwrap_err().0, "password");
    }

    #[test]
    fn the_view_never_carries_the_password_and_warns_when_insecure() {
        let b = Bmc {
            machine_id: 3,
            address: "bmc".into(),
            protocol: Protocol::Redfish,
            username: "root".into(),
            password_sealed: "v1.00.secret".into(),
            tls: TlsPolicy::Insecure,
            system_id: None,
            boot_mode: Some(BootMode::Legacy),
            power: Some(PowerReading { state: PowerState::On, at_ms: 1_000, error: None }),
            updated_at: 1,
            firmware: None,
            inband: None,
            boot_via: Default::default(),
        };
        let v = b.view(61_000);
        let json = serde_json::to_string(&v).unwrap();
        assert!(!json.contains("secret") && !json.contains("sealed"), "{json}");
        assert!(v.warning.unwrap().contains("insecure"));
        assert_eq!(v.power_age_secs, Some(60));
        assert!(json.contains(r#""boot_mode":"legacy""#), "{json}");
        let old: Bmc =
            serde_json::from_str(&serde_json::to_string(&b).unwrap().replace(r#","boot_mode":"legacy""#, "")).unwrap();
        assert_eq!(old.boot_mode, None, "a record stored before boot modes reads back without one");
    }
}
