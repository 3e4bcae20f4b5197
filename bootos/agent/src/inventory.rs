//! Hardware inventory from procfs and sysfs (no external tool needed), plus the BMC address from
//! `ipmitool` when it is installed and finds one. Every reader takes the file-system root, so
//! tests run against a fake tree.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use crate::wire::{Bmc, Cpu, Disk, Dmi, Firmware, Inventory, Link, Nic, PciDevice};

mod by_path;

/// Collects everything (LLDP neighbours are added by the caller).
pub fn collect(root: &Path) -> Inventory {
    let dmi_memory = dmi_memory_bytes(root);
    let meminfo = meminfo(root);
    Inventory {
        cpu: cpu(root),
        // Installed memory as the firmware reports it (what was bought, or what qemu -m set);
        // the kernel's MemTotal is a little less and only the fallback.
        memory_bytes: dmi_memory.unwrap_or(meminfo.0),
        disks: disks(root),
        nics: nics(root),
        dmi: dmi(root),
        pci: pci(root),
        bmc: bmc(),
        lldp: Vec::new(),
        kernel: read(root, "proc/sys/kernel/osrelease").unwrap_or_default(),
        // The agent is built for the machine it runs on (BootOS has one per architecture).
        arch: std::env::consts::ARCH.to_string(),
        firmware: firmware(root),
        links: links(root),
    }
}

/// The global variable GUID of the UEFI specification (`SecureBoot` lives under it).
const EFI_GLOBAL: &str = "8be4df61-93ca-11d2-aa0d-00e098032b8c";

/// UEFI or BIOS, and Secure Boot: efivarfs gives a variable as 4 bytes of attributes, then its
/// value (one byte for `SecureBoot`: 1 enforcing, 0 not).
pub fn firmware(root: &Path) -> Firmware {
    let uefi = root.join("sys/firmware/efi").is_dir();
    let var = format!("sys/firmware/efi/efivars/SecureBoot-{EFI_GLOBAL}");
    let secure_boot = match uefi {
        true => fs::read(root.join(var)).ok().and_then(|v| v.get(4).copied()).map(|b| b == 1),
        false => None,
    };
    Firmware { uefi, secure_boot }
}

fn read(root: &Path, rel: &str) -> Option<String> {
    fs::read_to_string(root.join(rel)).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

fn link_name(root: &Path, rel: &str) -> Option<String> {
    fs::read_link(root.join(rel)).ok()?.file_name().map(|n| n.to_string_lossy().into_owned())
}

fn entries(root: &Path, rel: &str) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(root.join(rel))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

pub fn cpu(root: &Path) -> Cpu {
    let text = read(root, "proc/cpuinfo").unwrap_or_default();
    let mut model = String::new();
    let mut threads = 0;
    let (mut cores, mut sockets) = (BTreeSet::new(), BTreeSet::new());
    let mut physical = String::new();
    let (mut implementer, mut part) = (String::new(), String::new());
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else { continue };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "processor" => threads += 1,
            "model name" if model.is_empty() => model = v.to_string(),
            // arm64 names no model: its implementer and part numbers say which core it is.
            "CPU implementer" if implementer.is_empty() => implementer = v.to_string(),
            "CPU part" if part.is_empty() => part = v.to_string(),
            "physical id" => {
                physical = v.to_string();
                sockets.insert(v.to_string());
            }
            "core id" => {
                cores.insert((physical.clone(), v.to_string()));
            }
            _ => {}
        }
    }
    if model.is_empty() && !implementer.is_empty() {
        model = arm_core(&implementer, &part);
    }
    // Without topology lines (some VMs, some arches) every logical CPU counts as a core.
    let cores = if cores.is_empty() { threads } else { cores.len() as u32 };
    Cpu { model, cores, threads, sockets: (sockets.len() as u32).max(1) }
}

/// An arm64 core's name from `/proc/cpuinfo`'s implementer and part numbers (the common server
/// and emulated ones; others by their numbers).
fn arm_core(implementer: &str, part: &str) -> String {
    let name = match (implementer, part) {
        ("0x41", "0xd03") => "ARM Cortex-A53",
        ("0x41", "0xd07") => "ARM Cortex-A57",
        ("0x41", "0xd08") => "ARM Cortex-A72",
        ("0x41", "0xd0c") => "ARM Neoverse-N1",
        ("0x41", "0xd40") => "ARM Neoverse-V1",
        ("0x41", "0xd49") => "ARM Neoverse-N2",
        ("0x41", "0xd4f") => "ARM Neoverse-V2",
        ("0xc0", "0xac3") => "Ampere-1",
        ("0xc0", "0xac4") => "Ampere-1a",
        ("0x48", "0xd01") => "HiSilicon TaiShan v110",
        _ => "",
    };
    match name {
        "" => format!("arm64 implementer {implementer} part {part}"),
        name => name.to_string(),
    }
}

/// (MemTotal, MemAvailable) in bytes.
pub fn meminfo(root: &Path) -> (u64, u64) {
    let text = read(root, "proc/meminfo").unwrap_or_default();
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("MemTotal:"), field("MemAvailable:"))
}

/// Installed memory from the SMBIOS type 17 (memory device) entries the kernel exports.
pub fn dmi_memory_bytes(root: &Path) -> Option<u64> {
    let mut total = 0u64;
    for e in entries(root, "sys/firmware/dmi/entries").iter().filter(|e| e.starts_with("17-")) {
        let Ok(raw) = fs::read(root.join("sys/firmware/dmi/entries").join(e).join("raw")) else { continue };
        if raw.len() < 0x0E || raw[0] != 17 {
            continue;
        }
        let len = usize::from(raw[1]);
        let size = u16::from_le_bytes([raw[0x0C], raw[0x0D]]);
        total += match size {
            0 | 0xFFFF => 0,
            0x7FFF if len >= 0x20 && raw.len() >= 0x20 => {
                u64::from(u32::from_le_bytes([raw[0x1C], raw[0x1D], raw[0x1E], raw[0x1F]]) & 0x7FFF_FFFF) << 20
            }
            s if s & 0x8000 != 0 => u64::from(s & 0x7FFF) << 10,
            s => u64::from(s) << 20,
        };
    }
    (total > 0).then_some(total)
}

pub fn disks(root: &Path) -> Vec<Disk> {
    let skip = ["loop", "ram", "zram", "sr", "fd", "md", "dm-", "nbd"];
    entries(root, "sys/block")
        .into_iter()
        .filter(|n| !skip.iter().any(|p| n.starts_with(p)))
        .map(|name| {
            let base = format!("sys/block/{name}");
            let sectors: u64 = read(root, &format!("{base}/size")).and_then(|s| s.parse().ok()).unwrap_or(0);
            Disk {
                size_bytes: sectors * 512,
                model: read(root, &format!("{base}/device/model")),
                serial: read(root, &format!("{base}/device/serial")).or_else(|| read(root, &format!("{base}/serial"))),
                rotational: read(root, &format!("{base}/queue/rotational")).as_deref() == Some("1"),
                wwn: read(root, &format!("{base}/wwid")).or_else(|| read(root, &format!("{base}/device/wwid"))),
                vendor: read(root, &format!("{base}/device/vendor")),
                by_path: by_path::by_path(root, &name),
                name,
            }
        })
        .collect()
}

pub fn nics(root: &Path) -> Vec<Nic> {
    entries(root, "sys/class/net")
        .into_iter()
        // Physical NICs have a device behind them; bridges, bonds, veths and lo do not.
        .filter(|n| root.join(format!("sys/class/net/{n}/device")).exists())
        .map(|name| {
            let base = format!("sys/class/net/{name}");
            Nic {
                // A bond gives its members its own MAC: the port's own is in /proc/net/bonding.
                mac: permanent_mac(root, &name).or_else(|| read(root, &format!("{base}/address"))).unwrap_or_default(),
                driver: link_name(root, &format!("{base}/device/driver")),
                link: read(root, &format!("{base}/carrier")).as_deref() == Some("1"),
                speed_mbps: read(root, &format!("{base}/speed"))
                    .and_then(|s| s.parse::<i64>().ok())
                    .filter(|s| *s > 0)
                    .map(|s| s as u32),
                name,
            }
        })
        .collect()
}

/// Every network device but loopback: its kind, bond and VLAN details from sysfs and
/// `/proc/net/vlan`, and (on the live system only) its IPv4 addresses.
pub fn links(root: &Path) -> Vec<Link> {
    let addresses = if root == Path::new("/") { ipv4_addresses() } else { Vec::new() };
    entries(root, "sys/class/net")
        .into_iter()
        .filter(|n| n != "lo")
        .map(|name| {
            let base = format!("sys/class/net/{name}");
            let bond = format!("{base}/bonding");
            let vlan = read(root, &format!("proc/net/vlan/{name}"));
            let kind = if root.join(&bond).is_dir() {
                "bond"
            } else if vlan.is_some() {
                "vlan"
            } else if root.join(format!("{base}/device")).exists() {
                "ether"
            } else {
                "other"
            };
            // /proc/net/vlan/<dev>: "<dev>  VID: 10  REORDER_HDR: 1 ..." then "Device: bond0".
            let field = |key: &str| {
                let text = vlan.as_deref()?;
                let at = text.find(key)? + key.len();
                text[at..].split_whitespace().next().map(str::to_string)
            };
            Link {
                bond_mode: read(root, &format!("{bond}/mode"))
                    .and_then(|m| m.split_whitespace().next().map(String::from)),
                members: read(root, &format!("{bond}/slaves"))
                    .map(|s| s.split_whitespace().map(String::from).collect())
                    .unwrap_or_default(),
                active_member: read(root, &format!("{bond}/active_slave")),
                vlan_id: field("VID:").and_then(|v| v.parse().ok()),
                parent: field("Device:"),
                kind: kind.into(),
                mac: read(root, &format!("{base}/address")).unwrap_or_default(),
                up: read(root, &format!("{base}/operstate")).as_deref() == Some("up"),
                addresses: addresses.iter().filter(|(n, _)| *n == name).map(|(_, a)| a.clone()).collect(),
                name,
            }
        })
        .collect()
}

/// Every interface's IPv4 addresses as `address/prefix`.
fn ipv4_addresses() -> Vec<(String, String)> {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else { return Vec::new() };
    addrs
        .filter_map(|a| {
            let ip = a.address?.as_sockaddr_in()?.ip();
            let prefix =
                a.netmask.and_then(|m| m.as_sockaddr_in().map(|m| u32::from(m.ip()).count_ones())).unwrap_or(32);
            Some((a.interface_name, format!("{ip}/{prefix}")))
        })
        .collect()
}

/// A bond member's own MAC, from its bond's `/proc/net/bonding/<bond>` ("Slave Interface: X"
/// then "Permanent HW addr: ...").
fn permanent_mac(root: &Path, name: &str) -> Option<String> {
    let bond = link_name(root, &format!("sys/class/net/{name}/master"))?;
    let text = fs::read_to_string(root.join(format!("proc/net/bonding/{bond}"))).ok()?;
    let section = text.split("Slave Interface: ").find(|s| s.lines().next().map(str::trim) == Some(name))?;
    let line = section.lines().find_map(|l| l.trim().strip_prefix("Permanent HW addr: "))?;
    Some(line.trim().to_string())
}

/// MACs of the physical NICs.
pub fn macs(root: &Path) -> Vec<String> {
    nics(root).into_iter().map(|n| n.mac).filter(|m| !m.is_empty() && m != "00:00:00:00:00:00").collect()
}

pub fn dmi(root: &Path) -> Dmi {
    let f = |n: &str| read(root, &format!("sys/class/dmi/id/{n}"));
    Dmi {
        vendor: f("sys_vendor"),
        model: f("product_name"),
        serial: f("product_serial"),
        uuid: f("product_uuid"),
        bios_vendor: f("bios_vendor"),
        bios_version: f("bios_version"),
    }
}

pub fn pci(root: &Path) -> Vec<PciDevice> {
    let hex = |s: Option<String>| s.map(|v| v.trim_start_matches("0x").to_string()).unwrap_or_default();
    entries(root, "sys/bus/pci/devices")
        .into_iter()
        .map(|address| {
            let base = format!("sys/bus/pci/devices/{address}");
            PciDevice {
                vendor: hex(read(root, &format!("{base}/vendor"))),
                device: hex(read(root, &format!("{base}/device"))),
                class: hex(read(root, &format!("{base}/class"))),
                driver: link_name(root, &format!("{base}/driver")),
                address,
            }
        })
        .collect()
}

/// The BMC's LAN address, from `ipmitool lan print` (needs the ipmi_si/ipmi_devintf modules
/// and a BMC; absent on VMs).
pub fn bmc() -> Option<Bmc> {
    let out = std::process::Command::new("ipmitool").args(["lan", "print"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse_ipmitool_lan(&String::from_utf8_lossy(&out.stdout))
}

pub fn parse_ipmitool_lan(text: &str) -> Option<Bmc> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let ip = field("IP Address").filter(|ip| ip != "0.0.0.0");
    let mac = field("MAC Address");
    (ip.is_some() || mac.is_some()).then_some(Bmc { ip, mac })
}

#[cfg(test)]
mod tests;
