//! The disk layout the provisioned VMs of `provision` came up on: the root on LVM on a RAID 1
//! across the two disks the task's hints named (vda, by the root-device hint; vdd, by the
//! layout's mirror hint), an extra XFS file system beside it and an encrypted one
//! ([`super::disk_crypt`]), and the disk no hint named
//! untouched; and each disk's `by_path` in the inventory is a name udev gives it there. The machine booting from it and answering jobs is the rest of the proof.

use super::provision::job_output;
use crate::netns::Net;

/// The task's layout (with `root_device` {"serial": "RBLAB-VDA"}).
pub(super) const LAYOUT: &str = r#"{"mirror":{"serial":"RBLAB-VDD"},"lvm":true,"filesystems":[{"mount":"/srv/data","fstype":"xfs","size_mib":320},{"mount":"/srv/secret","fstype":"ext4","size_mib":64,"encrypted":true}]}"#;

/// The disks: vda and vdd carry the layout, vdb and vdc the hardware profile's RAID, vde
/// nothing.
pub(super) const DISKS: [u64; 5] = [2 << 30, 256 << 20, 256 << 20, 2 << 30, 256 << 20];

/// Checks on the installed system `name` that it runs on the declared layout.
pub(super) fn check(net: &Net, name: &str, mac: &str) {
    let out = job_output(
        net,
        mac,
        "cat /proc/mdstat; mdadm --detail /dev/md100; lvs --noheadings -o vg_name,lv_name; \
         echo root: $(findmnt -n -o SOURCE,FSTYPE /); echo data: $(findmnt -n -o SOURCE,FSTYPE /srv/data); \
         cmp -n $(blockdev --getsize64 /dev/vde) /dev/vde /dev/zero && echo vde: untouched; \
         for p in /dev/disk/by-path/*; do echo by-path: $(basename $p); done",
    );
    eprintln!("{name}: the disk layout:\n{out}");
    assert!(out.contains("Raid Level : raid1"), "{name}: {out}");
    for member in ["/dev/vda3", "/dev/vdd3"] {
        assert!(out.lines().any(|l| l.trim_end().ends_with(member)), "{name}: {member} is not in the mirror: {out}");
    }
    let volumes: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    for lv in ["root", "srv_data", "srv_secret"] {
        assert!(volumes.contains(&vec!["rackboot", lv]), "{name}: no logical volume rackboot/{lv}: {out}");
    }
    assert!(out.contains("root: /dev/mapper/rackboot-root ext4"), "{name}: {out}");
    assert!(out.contains("data: /dev/mapper/rackboot-srv_data xfs"), "{name}: {out}");
    assert!(out.contains("vde: untouched"), "{name}: the disk no hint named was written: {out}");
    // The agent names each disk's by-path as udev does there (a `by_path` hint's value).
    let m = net.api("GET", &format!("/machines/{mac}"), None);
    for disk in m["inventory"]["disks"].as_array().unwrap() {
        let path = disk["by_path"].as_str().unwrap_or_else(|| panic!("{name}: no by_path: {disk}"));
        assert!(out.lines().any(|l| l == format!("by-path: {path}")), "{name}: {path} is not udev's: {out}");
    }
    super::disk_crypt::check_bound(net, name, mac);
}
