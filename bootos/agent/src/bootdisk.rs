//! Boot the newly installed disk once, on a UEFI machine that boots the network first (as a
//! server set to "network, then disk" does): `BootNext` names a boot entry for the disk's EFI
//! system partition, so after the install's reboot the firmware starts the new system at once
//! instead of walking its network entries (PXE and HTTP, IPv4 and IPv6), each waiting for an
//! answer, before its disk. The boot order itself is left as it is: the next boot after that one
//! is the network's again, which is how the machine gets back into BootOS later.
//!
//! The entry is, in this order: one the installed system made for that partition (GRUB's
//! `debian`, an OS's own loader); the firmware's own entry for the disk (the one entry whose PCI
//! nodes are the disk controller's, as sysfs shows its path: OVMF's `UEFI Misc Device`, a
//! server's `UEFI: <disk model>`), which boots the removable-media path; else rackboot's own:
//! the partition alone as a short-form hard drive device path (its GPT GUID, no file), which the
//! firmware expands by connecting every device to find the partition (tens of seconds under
//! emulation) and boots through the removable-media path (`\EFI\BOOT\BOOTX64.EFI`,
//! `BOOTAA64.EFI`). At most one rackboot entry exists; a reinstall rewrites it.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::bootnext::{read_entries, set_boot_next, with_efivars, ATTRIBUTES, GLOBAL};

/// The EFI system partition's GPT type GUID (C12A7328-F81F-11D2-BA4B-00A0C93EC93B), as stored.
const ESP_TYPE: [u8; 16] =
    [0x28, 0x73, 0x2a, 0xc1, 0x1f, 0xf8, 0xd2, 0x11, 0xba, 0x4b, 0x00, 0xa0, 0xc9, 0x3e, 0xc9, 0x3b];
/// The description of rackboot's own entry.
pub const DESCRIPTION: &str = "rackboot installed disk";
/// Partition entries read at most (the GPT default is 128).
const MAX_ENTRIES: u32 = 1024;

/// An EFI system partition, as its disk's GPT describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Esp {
    /// 1-based, as the device path counts.
    pub number: u32,
    /// First block and length, in the disk's logical blocks.
    pub start: u64,
    pub blocks: u64,
    /// The partition's unique GUID, as stored.
    pub guid: [u8; 16],
}

/// The first EFI system partition in the GPT of `disk` (logical blocks of `block` bytes).
pub fn find_esp(disk: &mut (impl Read + Seek), block: u64) -> Result<Esp, String> {
    let mut read = |at: u64, len: usize| -> Result<Vec<u8>, String> {
        let mut buf = vec![0; len];
        disk.seek(SeekFrom::Start(at)).and_then(|_| disk.read_exact(&mut buf)).map_err(|e| e.to_string())?;
        Ok(buf)
    };
    let header = read(block, 92)?;
    if &header[..8] != b"EFI PART" {
        return Err("no GPT (an MBR disk, or none)".into());
    }
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let (entries_lba, count, size) = (u64_at(&header, 72), u32_at(&header, 80), u32_at(&header, 84));
    if count > MAX_ENTRIES || !(128..=4096).contains(&size) || size % 8 != 0 {
        return Err(format!("a GPT with {count} entries of {size} bytes: not read"));
    }
    let table = read(entries_lba.checked_mul(block).ok_or("a GPT past any disk")?, (count * size) as usize)?;
    for (i, entry) in table.chunks_exact(size as usize).enumerate() {
        if entry[..16] == ESP_TYPE {
            let (first, last) = (u64_at(entry, 32), u64_at(entry, 40));
            let Some(blocks) = last.checked_sub(first).and_then(|d| d.checked_add(1)) else { continue };
            let guid = entry[16..32].try_into().expect("16 bytes");
            return Ok(Esp { number: i as u32 + 1, start: first, blocks, guid });
        }
    }
    Err("no EFI system partition in its GPT".into())
}

/// The device path of `esp`: a hard drive node (GPT, GUID signature), then the end node.
pub fn device_path(esp: &Esp) -> Vec<u8> {
    let mut p = vec![0x04, 0x01, 42, 0];
    p.extend(esp.number.to_le_bytes());
    p.extend(esp.start.to_le_bytes());
    p.extend(esp.blocks.to_le_bytes());
    p.extend(esp.guid);
    p.extend([0x02, 0x02]);
    p.extend([0x7f, 0xff, 4, 0]);
    p
}

/// An active `EFI_LOAD_OPTION` for `esp`, with no optional data.
pub fn load_option(esp: &Esp) -> Vec<u8> {
    let path = device_path(esp);
    let mut d = 1u32.to_le_bytes().to_vec();
    d.extend(u16::try_from(path.len()).expect("a short path").to_le_bytes());
    for c in DESCRIPTION.encode_utf16().chain([0]) {
        d.extend(c.to_le_bytes());
    }
    d.extend(path);
    d
}

/// The (device, function) of each PCI device on the way from the root to a block device, from
/// its sysfs path (`/sys/devices/pci0000:00/0000:00:02.3/0000:04:00.0/virtio3/block/vda`).
pub fn pci_chain(sysfs: &str) -> Vec<(u8, u8)> {
    sysfs
        .split('/')
        .filter_map(|c| {
            let b = c.as_bytes();
            let ok = b.len() == 12 && b[4] == b':' && b[7] == b':' && b[10] == b'.';
            let dev = u8::from_str_radix(c.get(8..10)?, 16).ok()?;
            let func = u8::from_str_radix(c.get(11..12)?, 16).ok()?;
            (ok && u16::from_str_radix(&c[..4], 16).is_ok() && dev < 32 && func < 8).then_some((dev, func))
        })
        .collect()
}

/// Sets `BootNext` under `efivars` to an entry for `esp` on the disk behind PCI devices `pci`
/// (see the module's order; rackboot's own is written, or rewritten, first). Says which, or why
/// nothing was set.
pub fn disk_once(efivars: &Path, esp: &Esp, pci: &[(u8, u8)]) -> Result<String, String> {
    if !efivars.is_dir() {
        return Err("not a UEFI boot (no efivarfs): the firmware's boot order decides".into());
    }
    let (entries, taken) = read_entries(efivars);
    let ours = |d: &str| d == DESCRIPTION;
    let os = entries.iter().find(|e| e.partition == Some(esp.guid) && !ours(&e.description));
    let firmware = || {
        let whole_disk = |e: &&crate::bootnext::Entry| e.mac.is_none() && e.partition.is_none() && e.pci == pci;
        let found: Vec<_> = entries.iter().filter(whole_disk).collect();
        // Two entries behind one controller (a SATA disk and a DVD drive) cannot be told apart.
        (!pci.is_empty() && found.len() == 1).then(|| found[0])
    };
    let (found, whose) = match os {
        Some(e) => (Some(e), format!("the installed system's entry for partition {}", esp.number)),
        None => (firmware(), "the firmware's entry for the disk".to_string()),
    };
    let number = match found {
        Some(e) => e.number,
        None => {
            // Rackboot's entry where there is one (for another partition after a reinstall),
            // else the first unused number.
            let number = entries
                .iter()
                .find(|e| ours(&e.description))
                .map(|e| e.number)
                .or_else(|| (0..=u16::MAX).find(|n| !taken.contains(n)))
                .ok_or("every boot entry number is taken")?;
            let mut data = ATTRIBUTES.to_le_bytes().to_vec();
            data.extend(load_option(esp));
            // efivarfs takes a variable in one write.
            std::fs::write(efivars.join(format!("Boot{number:04X}-{GLOBAL}")), &data)
                .map_err(|e| format!("writing Boot{number:04X}: {e}"))?;
            number
        }
    };
    set_boot_next(efivars, number)?;
    Ok(match found {
        Some(e) => format!("BootNext = Boot{number:04X} ({}: {whose})", e.description.trim()),
        None => format!("BootNext = Boot{number:04X} ({DESCRIPTION}: partition {} of the disk)", esp.number),
    })
}

/// [`disk_once`] for `disk` (`/dev/vda`) on this machine: what was done, or why nothing was.
pub fn disk_next(disk: &str) -> String {
    // A by-id or by-path link names the disk its sysfs entry is under.
    let disk =
        std::fs::canonicalize(disk).map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|_| disk.to_string());
    let disk = disk.as_str();
    let name = disk.trim_start_matches("/dev/");
    let block = std::fs::read_to_string(format!("/sys/class/block/{name}/queue/logical_block_size"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(512);
    let sysfs = std::fs::canonicalize(format!("/sys/class/block/{name}")).unwrap_or_default();
    let pci = pci_chain(&sysfs.to_string_lossy());
    with_efivars(|efivars| {
        let esp = std::fs::File::open(disk)
            .map_err(|e| e.to_string())
            .and_then(|mut f| find_esp(&mut f, block))
            .map_err(|why| format!("{disk}: {why}: the firmware's boot order decides"))?;
        disk_once(efivars, &esp, &pci)
    })
}

#[cfg(test)]
mod tests;
