use super::*;
use crate::bootnext::parse_load_option;
use std::io::Cursor;

const GUID: [u8; 16] = [0xa1, 0xb2, 0xc3, 0xd4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];

/// A disk of `block`-byte blocks whose GPT has 128 entries at LBA 2: a BIOS boot partition
/// first, then an EFI system partition (blocks 2048-4095) with [`GUID`].
fn gpt_disk(block: usize) -> Vec<u8> {
    let mut disk = vec![0u8; block * 2 + 128 * 128];
    let h = block;
    disk[h..h + 8].copy_from_slice(b"EFI PART");
    disk[h + 72..h + 80].copy_from_slice(&2u64.to_le_bytes());
    disk[h + 80..h + 84].copy_from_slice(&128u32.to_le_bytes());
    disk[h + 84..h + 88].copy_from_slice(&128u32.to_le_bytes());
    let entry = |i: usize| block * 2 + i * 128;
    // BIOS boot (21686148-6449-6E6F-744E-656564454649).
    disk[entry(0)..entry(0) + 16].copy_from_slice(b"Hah!IdontNeedEFI");
    disk[entry(0) + 32..entry(0) + 40].copy_from_slice(&34u64.to_le_bytes());
    disk[entry(0) + 40..entry(0) + 48].copy_from_slice(&2047u64.to_le_bytes());
    disk[entry(1)..entry(1) + 16].copy_from_slice(&ESP_TYPE);
    disk[entry(1) + 16..entry(1) + 32].copy_from_slice(&GUID);
    disk[entry(1) + 32..entry(1) + 40].copy_from_slice(&2048u64.to_le_bytes());
    disk[entry(1) + 40..entry(1) + 48].copy_from_slice(&4095u64.to_le_bytes());
    disk
}

fn esp() -> Esp {
    Esp { number: 2, start: 2048, blocks: 2048, guid: GUID }
}

#[test]
fn the_esp_is_found_in_the_gpt_with_its_number_extent_and_guid() {
    assert_eq!(find_esp(&mut Cursor::new(gpt_disk(512)), 512), Ok(esp()));
    assert_eq!(find_esp(&mut Cursor::new(gpt_disk(4096)), 4096), Ok(esp()), "4Kn disks count 4 KiB blocks");
}

#[test]
fn a_disk_without_a_gpt_or_esp_and_a_hostile_gpt_are_refused_with_the_reason() {
    let err = find_esp(&mut Cursor::new(vec![0u8; 4096]), 512).unwrap_err();
    assert!(err.contains("no GPT"), "{err}");
    let mut no_esp = gpt_disk(512);
    no_esp[1024 + 128..1024 + 144].fill(0);
    assert!(find_esp(&mut Cursor::new(no_esp), 512).unwrap_err().contains("no EFI system partition"));
    // A header claiming a million entries is not read (no allocation of its size).
    let mut huge = gpt_disk(512);
    huge[512 + 80..512 + 84].copy_from_slice(&1_000_000u32.to_le_bytes());
    assert!(find_esp(&mut Cursor::new(huge), 512).unwrap_err().contains("not read"));
    // Entries past the end of the disk, or a table past any disk: an error, no panic.
    let mut past = gpt_disk(512);
    past[512 + 72..512 + 80].copy_from_slice(&1_000u64.to_le_bytes());
    assert!(find_esp(&mut Cursor::new(past), 512).is_err());
    let mut overflow = gpt_disk(512);
    overflow[512 + 72..512 + 80].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(find_esp(&mut Cursor::new(overflow), 512).unwrap_err().contains("past any disk"));
    assert!(find_esp(&mut Cursor::new(vec![0u8; 100]), 512).is_err(), "a disk shorter than its header");
    // An ESP spanning every block there could be: skipped, not an overflow.
    let mut whole = gpt_disk(512);
    whole[1024 + 128 + 32..1024 + 128 + 40].copy_from_slice(&0u64.to_le_bytes());
    whole[1024 + 128 + 40..1024 + 128 + 48].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(find_esp(&mut Cursor::new(whole), 512).unwrap_err().contains("no EFI system partition"));
}

#[test]
fn the_device_path_is_a_gpt_hard_drive_node_and_the_end() {
    let p = device_path(&esp());
    assert_eq!(p.len(), 46);
    assert_eq!(&p[..4], &[4, 1, 42, 0]);
    assert_eq!(&p[4..8], &2u32.to_le_bytes());
    assert_eq!(&p[8..16], &2048u64.to_le_bytes());
    assert_eq!(&p[16..24], &2048u64.to_le_bytes());
    assert_eq!(&p[24..40], &GUID);
    assert_eq!(&p[40..], &[2, 2, 0x7f, 0xff, 4, 0]);
    let e = parse_load_option(5, &load_option(&esp())).unwrap();
    assert_eq!((e.description.as_str(), e.partition, e.mac), (DESCRIPTION, Some(GUID), None));
}

fn var(dir: &Path, name: &str, data: &[u8]) {
    let mut v = ATTRIBUTES.to_le_bytes().to_vec();
    v.extend(data);
    std::fs::write(dir.join(format!("{name}-{GLOBAL}")), v).unwrap();
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(format!("{name}-{GLOBAL}"))).unwrap()
}

/// A load option with `description` and the device path `path` (nodes and end).
fn option(description: &str, path: &[u8]) -> Vec<u8> {
    let mut d = 1u32.to_le_bytes().to_vec();
    d.extend(u16::try_from(path.len()).unwrap().to_le_bytes());
    for c in description.encode_utf16().chain([0]) {
        d.extend(c.to_le_bytes());
    }
    d.extend(path);
    d
}

/// A PXE entry: a PCI node, a MAC node and the end.
fn pxe() -> Vec<u8> {
    let mut p = vec![1, 1, 6, 0, 0, 3, 3, 11, 37, 0, 0x52, 0x54, 0, 0xe6, 0, 2];
    p.resize(p.len() + 27, 0);
    p.extend([0x7f, 0xff, 4, 0]);
    option("UEFI PXEv4", &p)
}

#[test]
fn without_an_entry_for_the_partition_rackboots_own_is_made_and_booted_next_only() {
    let dir = tempfile::tempdir().unwrap();
    let disk = option("UEFI Misc Device", &[1, 1, 6, 0, 0, 4, 0x7f, 0xff, 4, 0]);
    // Boot0000 is gone but BootOrder still names it: the new entry must not take that number.
    var(dir.path(), "BootOrder", &[0, 0, 1, 0, 2, 0]);
    var(dir.path(), "Boot0001", &pxe());
    var(dir.path(), "Boot0002", &disk);
    // The firmware's entry is for another controller's disk.
    let said = disk_once(dir.path(), &esp(), &[(2, 0)]).unwrap();
    assert_eq!(said, "BootNext = Boot0003 (rackboot installed disk: partition 2 of the disk)");
    let written = read(dir.path(), "Boot0003");
    assert_eq!(&written[..4], &[7, 0, 0, 0]);
    assert_eq!(&written[4..], load_option(&esp()).as_slice());
    assert_eq!(read(dir.path(), "BootNext"), [7, 0, 0, 0, 3, 0]);
    assert_eq!(read(dir.path(), "BootOrder"), [7, 0, 0, 0, 0, 0, 1, 0, 2, 0], "the boot order is the operator's");
}

#[test]
fn the_installed_systems_own_entry_is_preferred_and_a_stale_rackboot_entry_is_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let mut grub = device_path(&esp());
    grub.truncate(42);
    grub.extend([4, 4, 8, 0, b'\\', 0]);
    grub.extend([0x7f, 0xff, 4, 0]);
    let other = Esp { guid: [9; 16], ..esp() };
    var(dir.path(), "BootOrder", &[1, 0]);
    var(dir.path(), "Boot0001", &pxe());
    var(dir.path(), "Boot0003", &load_option(&other));
    var(dir.path(), "Boot0004", &option("debian", &grub));
    let said = disk_once(dir.path(), &esp(), &[]).unwrap();
    assert_eq!(said, "BootNext = Boot0004 (debian: the installed system's entry for partition 2)");
    assert_eq!(read(dir.path(), "BootNext"), [7, 0, 0, 0, 4, 0]);
    assert_eq!(&read(dir.path(), "Boot0003")[4..], load_option(&other).as_slice(), "nothing rewritten");

    std::fs::remove_file(dir.path().join(format!("Boot0004-{GLOBAL}"))).unwrap();
    let said = disk_once(dir.path(), &esp(), &[]).unwrap();
    assert!(said.starts_with("BootNext = Boot0003 (rackboot installed disk"), "{said}");
    assert_eq!(&read(dir.path(), "Boot0003")[4..], load_option(&esp()).as_slice(), "rewritten for this partition");
    assert!(!dir.path().join(format!("Boot0000-{GLOBAL}")).exists(), "one rackboot entry at most");
}

#[test]
fn without_efivarfs_nothing_is_written_and_it_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let err = disk_once(&dir.path().join("none"), &esp(), &[]).unwrap_err();
    assert!(err.contains("not a UEFI boot"), "{err}");
}

#[test]
fn the_firmwares_own_entry_for_the_disks_controller_is_booted_when_it_is_the_only_one() {
    let dir = tempfile::tempdir().unwrap();
    // PciRoot(0x0)/Pci(0x2,0x3)/Pci(0x0,0x0): a virtio disk behind a PCIe root port.
    let acpi = [2, 1, 12, 0, 0xd0, 0x41, 0x03, 0x0a, 0, 0, 0, 0];
    let disk_path = |dev: u8| [&acpi[..], &[1, 1, 6, 0, 3, 2], &[1, 1, 6, 0, 0, dev], &[0x7f, 0xff, 4, 0]].concat();
    var(dir.path(), "BootOrder", &[1, 0, 2, 0, 5, 0]);
    var(dir.path(), "Boot0001", &pxe());
    var(dir.path(), "Boot0002", &option("UEFI Misc Device", &disk_path(0)));
    var(dir.path(), "Boot0005", &option("UEFI Misc Device 2", &disk_path(1)));
    let said = disk_once(dir.path(), &esp(), &[(2, 3), (0, 0)]).unwrap();
    assert_eq!(said, "BootNext = Boot0002 (UEFI Misc Device: the firmware's entry for the disk)");
    assert_eq!(read(dir.path(), "BootNext"), [7, 0, 0, 0, 2, 0]);
    assert!(!dir.path().join(format!("Boot0000-{GLOBAL}")).exists(), "no entry of rackboot's written");
    // A second entry behind the same controller: which is the disk is not known.
    var(dir.path(), "Boot0006", &option("UEFI QEMU DVD-ROM", &disk_path(0)));
    let said = disk_once(dir.path(), &esp(), &[(2, 3), (0, 0)]).unwrap();
    assert!(said.contains("rackboot installed disk"), "{said}");
}

#[test]
fn the_pci_chain_is_read_from_the_disks_sysfs_path() {
    assert_eq!(pci_chain("/sys/devices/pci0000:00/0000:00:02.3/0000:04:00.0/virtio3/block/vda"), [(2, 3), (0, 0)]);
    assert_eq!(pci_chain("/sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda"), [(0x1f, 2)]);
    assert_eq!(pci_chain("/sys/devices/virtual/block/loop0"), []);
    assert_eq!(pci_chain(""), []);
}
