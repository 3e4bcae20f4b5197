//! What a node reports of itself (`PUT /agent/v1/inventory`): hardware, firmware, links and
//! their LLDP neighbours.

use serde::{Deserialize, Serialize};

/// What a node is made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Inventory {
    pub cpu: Cpu,
    pub memory_bytes: u64,
    pub disks: Vec<Disk>,
    pub nics: Vec<Nic>,
    pub dmi: Dmi,
    pub pci: Vec<PciDevice>,
    #[serde(default)]
    pub bmc: Option<Bmc>,
    #[serde(default)]
    pub lldp: Vec<LldpNeighbor>,
    #[serde(default)]
    pub kernel: String,
    /// The machine's architecture as the kernel names it (`x86_64`, `aarch64`); empty from
    /// agents older than this field.
    #[serde(default)]
    pub arch: String,
    /// How the node booted (absent from agents older than this field).
    #[serde(default)]
    pub firmware: Firmware,
    /// The network devices as they came up: ports, bonds and VLANs with their IPv4 addresses
    /// (absent from agents older than this field).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
}

/// A network device as the node has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Link {
    pub name: String,
    /// `ether` (a physical port), `bond`, `vlan` or `other`.
    pub kind: String,
    pub mac: String,
    /// Its operational state is up.
    pub up: bool,
    /// IPv4 addresses as `address/prefix`.
    #[serde(default)]
    pub addresses: Vec<String>,
    /// A bond's mode (`active-backup`, `802.3ad`, ...), members and active member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bond_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_member: Option<String>,
    /// A VLAN's id and the device it is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan_id: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// The firmware the node booted through, from `/sys/firmware/efi`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Firmware {
    /// Booted through UEFI (else legacy BIOS).
    pub uefi: bool,
    /// UEFI Secure Boot was enforcing at boot (the `SecureBoot` variable); `None` on BIOS or
    /// when the variable cannot be read.
    pub secure_boot: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Cpu {
    pub model: String,
    /// Physical cores (distinct core ids per package), at least 1.
    pub cores: u32,
    /// Logical CPUs.
    pub threads: u32,
    pub sockets: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Disk {
    /// Kernel name, e.g. "vda", "sda", "nvme0n1".
    pub name: String,
    pub size_bytes: u64,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub rotational: bool,
    /// World wide name (`wwid` in sysfs: `naa.`, `eui.` or `t10.` and the id), where the disk has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Its name under `/dev/disk/by-path/`, as udev names it (`pci-0000:00:05.0`), for the
    /// controllers the agent knows (virtio, NVMe, SATA, SCSI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Nic {
    pub name: String,
    pub mac: String,
    pub driver: Option<String>,
    /// Carrier detected.
    pub link: bool,
    pub speed_mbps: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Dmi {
    pub vendor: Option<String>,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub uuid: Option<String>,
    pub bios_vendor: Option<String>,
    pub bios_version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PciDevice {
    /// Bus address, e.g. "0000:00:03.0".
    pub address: String,
    /// Hex ids without 0x, e.g. "1af4".
    pub vendor: String,
    pub device: String,
    /// Class code, e.g. "020000" (Ethernet controller).
    pub class: String,
    pub driver: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Bmc {
    pub ip: Option<String>,
    pub mac: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LldpNeighbor {
    /// Our interface the frame arrived on.
    pub interface: String,
    pub chassis_id: String,
    pub port_id: String,
    pub system_name: Option<String>,
    pub port_description: Option<String>,
}
