//! Boot from the network once, on a UEFI machine whose boot order puts its disk first (a
//! distribution's installer puts itself first): the firmware's network boot entry is found among
//! the `Boot####` variables and named in `BootNext`, which the firmware uses for the next boot
//! only and then deletes. This is how an installed machine with no BMC gets back into BootOS for
//! a release, a rescue or a reinstall. Read and written through efivarfs, no efibootmgr needed.
//!
//! An entry is a network one when its device path has a MAC address node (messaging, subtype
//! 11). Among those, one whose MAC is this machine's and that boots over IPv4 (PXE) is taken
//! first, then IPv4 on any NIC, then any network entry, each in `BootOrder`'s order.

use std::path::Path;

/// EFI's global variable GUID, the suffix of every `Boot*` file in efivarfs.
pub(crate) const GLOBAL: &str = "8be4df61-93ca-11d2-aa0d-00e098032b8c";
/// Non-volatile, boot service and runtime access.
pub(crate) const ATTRIBUTES: u32 = 0x7;

/// A boot entry's description and what its device path says of the network.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub number: u16,
    pub description: String,
    /// The MAC of its MAC address node, if it boots from the network.
    pub mac: Option<[u8; 6]>,
    pub ipv4: bool,
    /// The GUID of its hard drive node's GPT partition, if it boots from one.
    pub partition: Option<[u8; 16]>,
    /// Its PCI nodes' (device, function), from the root: the controller it boots from.
    pub pci: Vec<(u8, u8)>,
}

/// Parses an `EFI_LOAD_OPTION` (the variable's data, without efivarfs' 4 attribute bytes).
pub fn parse_load_option(number: u16, data: &[u8]) -> Option<Entry> {
    let path_len = usize::from(u16::from_le_bytes(data.get(4..6)?.try_into().ok()?));
    let mut description = Vec::new();
    let mut at = 6;
    loop {
        let c = u16::from_le_bytes(data.get(at..at + 2)?.try_into().ok()?);
        at += 2;
        if c == 0 {
            break;
        }
        description.push(c);
    }
    let path = data.get(at..at + path_len)?;
    let (mut mac, mut ipv4, mut partition, mut pci, mut node) = (None, false, None, Vec::new(), 0);
    while node + 4 <= path.len() {
        let (kind, sub) = (path[node], path[node + 1]);
        let len = usize::from(u16::from_le_bytes([path[node + 2], path[node + 3]]));
        if len < 4 || node + len > path.len() || (kind == 0x7f && sub == 0xff) {
            break;
        }
        match (kind, sub) {
            (0x03, 0x0b) if len >= 4 + 32 => mac = path[node + 4..node + 10].try_into().ok(),
            (0x01, 0x01) if len == 6 => pci.push((path[node + 5], path[node + 4])),
            (0x03, 0x0c) => ipv4 = true,
            // Hard drive, GPT (MBR type 2) with a GUID signature (type 2).
            (0x04, 0x01) if len == 42 && path[node + 40] == 2 && path[node + 41] == 2 => {
                partition = path[node + 24..node + 40].try_into().ok();
            }
            _ => {}
        }
        node += len;
    }
    Some(Entry { number, description: String::from_utf16_lossy(&description), mac, ipv4, partition, pci })
}

/// The entry to boot next: this machine's MAC over IPv4, then IPv4, then any network entry.
pub fn pick(entries: &[Entry], macs: &[[u8; 6]]) -> Option<u16> {
    let ours = |e: &&Entry| e.mac.is_some_and(|m| macs.contains(&m));
    let net = || entries.iter().filter(|e| e.mac.is_some());
    net().find(|e| ours(e) && e.ipv4).or_else(|| net().find(|e| e.ipv4)).or_else(|| net().next()).map(|e| e.number)
}

fn read_var(efivars: &Path, name: &str) -> Option<Vec<u8>> {
    let data = std::fs::read(efivars.join(format!("{name}-{GLOBAL}"))).ok()?;
    data.get(4..).map(<[u8]>::to_vec)
}

/// Where the kernel shows EFI variables.
pub const EFIVARS: &str = "/sys/firmware/efi/efivars";

/// Runs `f` on this machine's efivarfs, writable for it: BootOS mounts it read-only (nothing
/// there deletes a variable by mistake), so it is remounted read-write for `f` and read-only
/// again after. Returns what `f` did, or why nothing was: not a UEFI boot, no efivarfs, one that
/// cannot be made writable, or `f`'s own reason.
pub(crate) fn with_efivars(f: impl FnOnce(&Path) -> Result<String, String>) -> String {
    use nix::mount::{mount, MsFlags};
    if let Err(why) = efivarfs() {
        return why;
    }
    let read_only =
        nix::sys::statvfs::statvfs(EFIVARS).is_ok_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY));
    let remount =
        |flags: MsFlags| mount(None::<&str>, EFIVARS, None::<&str>, MsFlags::MS_REMOUNT | flags, None::<&str>);
    if read_only {
        if let Err(e) = remount(MsFlags::empty()) {
            return format!(
                "efivarfs is read-only and could not be made writable ({e}): the firmware's boot order decides"
            );
        }
    }
    let said = f(Path::new(EFIVARS)).unwrap_or_else(|why| why);
    if read_only {
        if let Err(e) = remount(MsFlags::MS_RDONLY) {
            tracing::warn!(error = %e, "efivarfs left writable");
        }
    }
    said
}

/// [`network_once`] on this machine, for its MACs as text (`52:54:00:...`): what was done, or why
/// nothing was.
pub fn network_next(macs: &[String]) -> String {
    let macs: Vec<[u8; 6]> = macs
        .iter()
        .filter_map(|m| {
            let bytes: Vec<u8> = m.split(':').map(|b| u8::from_str_radix(b, 16)).collect::<Result<_, _>>().ok()?;
            bytes.try_into().ok()
        })
        .collect();
    with_efivars(|efivars| network_once(efivars, &macs))
}

/// The entry numbers `BootOrder` lists under `efivars`.
fn boot_order(efivars: &Path) -> Vec<u16> {
    read_var(efivars, "BootOrder")
        .unwrap_or_default()
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

/// Whether this machine's efivarfs is mounted at [`EFIVARS`]: why not, when it is not (a BIOS
/// boot has no such directory; a UEFI one whose mount failed has the bare sysfs directory).
fn efivarfs() -> Result<(), String> {
    /// efivarfs' file system magic (`EFIVARFS_MAGIC` in linux/magic.h).
    const MAGIC: u64 = 0xde5e_81e4;
    if !Path::new(EFIVARS).is_dir() {
        return Err("not a UEFI boot (no efivarfs): the firmware's boot order decides".into());
    }
    match nix::sys::statfs::statfs(EFIVARS) {
        Ok(fs) if fs.filesystem_type().0 as u64 == MAGIC => Ok(()),
        _ => Err(format!("efivarfs is not mounted on {EFIVARS}: the firmware's boot order decides")),
    }
}

/// The boot entries under `efivars` that parse, in `BootOrder`'s order and then the others',
/// and every number taken: a `Boot####` variable's, or one `BootOrder` still names with its
/// variable gone (a new entry there would join the permanent boot order).
pub(crate) fn read_entries(efivars: &Path) -> (Vec<Entry>, Vec<u16>) {
    let order = boot_order(efivars);
    let mut present: Vec<u16> = std::fs::read_dir(efivars)
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    let hex = name.strip_prefix("Boot")?.strip_suffix(&format!("-{GLOBAL}"))?;
                    (hex.len() == 4).then(|| u16::from_str_radix(hex, 16).ok()).flatten()
                })
                .collect()
        })
        .unwrap_or_default();
    present.sort_unstable();
    let numbers = order.iter().copied().chain(present.iter().copied().filter(|n| !order.contains(n)));
    let entries = numbers.filter_map(|n| parse_load_option(n, &read_var(efivars, &format!("Boot{n:04X}"))?)).collect();
    present.extend(order);
    (entries, present)
}

/// Names entry `number` in `BootNext` under `efivars`: the firmware boots it next, once.
pub(crate) fn set_boot_next(efivars: &Path, number: u16) -> Result<(), String> {
    let mut data = ATTRIBUTES.to_le_bytes().to_vec();
    data.extend(number.to_le_bytes());
    // efivarfs takes a variable in one write.
    std::fs::write(efivars.join(format!("BootNext-{GLOBAL}")), &data)
        .map_err(|e| format!("setting BootNext to Boot{number:04X}: {e}"))
}

/// Sets `BootNext` under `efivars` to the network entry for `macs`; says which, or why none.
pub fn network_once(efivars: &Path, macs: &[[u8; 6]]) -> Result<String, String> {
    if !efivars.is_dir() {
        return Err("not a UEFI boot (no efivarfs): the firmware's boot order decides".into());
    }
    let (entries, _) = read_entries(efivars);
    let Some(next) = pick(&entries, macs) else {
        return Err(format!("no network boot entry among {} (the firmware's boot order decides)", entries.len()));
    };
    set_boot_next(efivars, next)?;
    let name = entries.iter().find(|e| e.number == next).map(|e| e.description.clone()).unwrap_or_default();
    Ok(format!("BootNext = Boot{next:04X} ({name})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `EFI_LOAD_OPTION` with `description` and the device path nodes given.
    fn option(description: &str, nodes: &[(u8, u8, Vec<u8>)]) -> Vec<u8> {
        let mut path = Vec::new();
        for (kind, sub, body) in nodes.iter().chain([&(0x7f, 0xff, vec![])]) {
            path.extend([*kind, *sub]);
            path.extend(u16::try_from(4 + body.len()).unwrap().to_le_bytes());
            path.extend(body);
        }
        let mut d = 1u32.to_le_bytes().to_vec();
        d.extend(u16::try_from(path.len()).unwrap().to_le_bytes());
        for c in description.encode_utf16().chain([0]) {
            d.extend(c.to_le_bytes());
        }
        d.extend(path);
        d
    }

    fn pci() -> (u8, u8, Vec<u8>) {
        (0x01, 0x01, vec![0, 3])
    }

    fn mac_node(mac: [u8; 6]) -> (u8, u8, Vec<u8>) {
        let mut body = mac.to_vec();
        body.resize(32, 0);
        body.push(1);
        (0x03, 0x0b, body)
    }

    const OURS: [u8; 6] = [0x52, 0x54, 0, 0x1a, 0xc0, 2];

    fn efivars(dir: &Path, order: &[u16], entries: &[(u16, Vec<u8>)]) {
        let mut o = ATTRIBUTES.to_le_bytes().to_vec();
        o.extend(order.iter().flat_map(|n| n.to_le_bytes()));
        std::fs::write(dir.join(format!("BootOrder-{GLOBAL}")), o).unwrap();
        for (n, data) in entries {
            let mut v = ATTRIBUTES.to_le_bytes().to_vec();
            v.extend(data);
            std::fs::write(dir.join(format!("Boot{n:04X}-{GLOBAL}")), v).unwrap();
        }
    }

    #[test]
    fn the_machines_own_ipv4_pxe_entry_is_booted_next_even_when_the_disk_comes_first() {
        let dir = tempfile::tempdir().unwrap();
        let disk = option("debian", &[pci(), (0x04, 0x01, vec![0; 38])]);
        let other_nic = option("UEFI PXEv4 (other)", &[pci(), mac_node([2, 0, 0, 0, 0, 9]), (0x03, 0x0c, vec![0; 23])]);
        let v6 = option("UEFI PXEv6", &[pci(), mac_node(OURS), (0x03, 0x0d, vec![0; 56])]);
        let ours = option("UEFI PXEv4 (MAC:5254001AC002)", &[pci(), mac_node(OURS), (0x03, 0x0c, vec![0; 23])]);
        efivars(dir.path(), &[0x4, 0x1, 0x2, 0x3], &[(4, disk), (1, other_nic), (2, v6), (3, ours)]);
        let said = network_once(dir.path(), &[OURS]).unwrap();
        assert_eq!(said, "BootNext = Boot0003 (UEFI PXEv4 (MAC:5254001AC002))");
        let next = std::fs::read(dir.path().join(format!("BootNext-{GLOBAL}"))).unwrap();
        assert_eq!(next, [7, 0, 0, 0, 3, 0], "attributes NV|BS|RT, then Boot0003");
    }

    #[test]
    fn without_a_network_entry_or_efivarfs_nothing_is_written_and_it_says_why() {
        let dir = tempfile::tempdir().unwrap();
        efivars(dir.path(), &[0], &[(0, option("debian", &[pci()])), (5, b"\x01\x00".to_vec())]);
        let err = network_once(dir.path(), &[OURS]).unwrap_err();
        assert!(err.contains("no network boot entry among 1"), "{err}");
        assert!(!dir.path().join(format!("BootNext-{GLOBAL}")).exists());
        assert!(network_once(&dir.path().join("none"), &[OURS]).unwrap_err().contains("not a UEFI boot"));
    }

    #[test]
    fn truncated_and_hostile_load_options_are_skipped_not_trusted() {
        assert_eq!(parse_load_option(1, &[]), None);
        assert_eq!(parse_load_option(1, &[1, 0, 0, 0, 0xff, 0xff, b'a', 0]), None, "path longer than the data");
        // A node claiming a length past the path ends the walk: no MAC read from beyond it.
        let mut d = option("x", &[]);
        let n = d.len();
        d[n - 2] = 0xff;
        assert_eq!(parse_load_option(1, &d).map(|e| e.mac), Some(None));
        let picks = [Entry {
            number: 9,
            description: String::new(),
            mac: Some([1; 6]),
            ipv4: false,
            partition: None,
            pci: vec![],
        }];
        assert_eq!(pick(&picks, &[OURS]), Some(9), "any network entry, when nothing better");
    }
}
