//! A disk's persistent path as udev's `path_id` names it under `/dev/disk/by-path/` (without
//! that prefix), read from where the disk sits in sysfs. BootOS has no udev, so the names are
//! made here, for the controllers a server boots from: virtio-blk (`pci-0000:00:05.0`), NVMe
//! (`pci-0000:01:00.0-nvme-1`), SATA/AHCI (`pci-0000:00:1f.2-ata-1.0`, systemd 250's form) and
//! SCSI: virtio-scsi, HBAs and RAID controllers in SCSI mode (`pci-0000:00:04.0-scsi-0:0:0:0`,
//! the host counted from the controller's first). SAS expanders and USB are not named (udev
//! names those by SAS address and USB port).

use std::path::{Component, Path, PathBuf};

use super::{entries, read};

/// `0000:00:1f.2`
fn is_pci(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && s.chars().filter(|c| c.is_ascii_hexdigit()).count() == 9
}

/// `0:0:0:0`
fn is_hctl(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    parts.len() == 4 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Disk `name`'s by-path name, where its controller is one named here.
pub fn by_path(root: &Path, name: &str) -> Option<String> {
    let link = root.join("sys/block").join(name);
    let target = std::fs::read_link(&link).ok()?;
    // The device's directory, `..` resolved without following links (sysfs' own layout).
    let mut dir = PathBuf::new();
    for c in link.parent()?.join(target).components() {
        match c {
            Component::ParentDir => {
                dir.pop();
            }
            Component::CurDir => {}
            other => dir.push(other),
        }
    }
    let parts: Vec<String> = dir.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    let at = parts.iter().rposition(|p| is_pci(p))?;
    let pci = format!("pci-{}", parts[at]);
    let rest = &parts[at + 1..];
    let has = |prefix: &str| rest.iter().any(|p| p.starts_with(prefix));
    if has("end_device-") || has("usb") || has("port-") {
        return None;
    }
    if name.starts_with("nvme") {
        let nsid = read(root, &format!("sys/block/{name}/nsid"))
            .or_else(|| name.rsplit_once('n').map(|(_, n)| n.to_string()))
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))?;
        return Some(format!("{pci}-nvme-{nsid}"));
    }
    let Some(hctl) = rest.iter().position(|p| is_hctl(p)) else {
        // virtio-blk: the disk is the PCI function itself.
        return has("virtio").then_some(pci);
    };
    if let Some(ata) = rest.iter().find(|p| p.strip_prefix("ata").is_some_and(|n| n.parse::<u32>().is_ok())) {
        let port = read(root, &format!("sys/class/ata_port/{ata}/port_no"))?;
        return Some(format!("{pci}-ata-{port}.0"));
    }
    let host = rest.iter().rposition(|p| p.strip_prefix("host").is_some_and(|n| n.parse::<u32>().is_ok()))?;
    let number = |p: &str| p.strip_prefix("host").and_then(|n| n.parse::<u32>().ok());
    let here = number(&rest[host])?;
    // The first SCSI host on the same controller counts as 0.
    let parent: PathBuf = parts[..at + 1 + host].iter().collect();
    let parent = parent.strip_prefix(root).map(Path::to_path_buf).unwrap_or(parent);
    let first = entries(root, &parent.to_string_lossy()).iter().filter_map(|e| number(e)).min().unwrap_or(here);
    let (_, ctl) = rest[hctl].split_once(':')?;
    Some(format!("{pci}-scsi-{}:{ctl}", here - first))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;

    /// Disk `name` at sysfs device path `dev` (under sys/devices/).
    fn disk(root: &Path, name: &str, dev: &str) {
        fs::create_dir_all(root.join("sys/devices").join(dev).join("block").join(name)).unwrap();
        fs::create_dir_all(root.join("sys/block")).unwrap();
        symlink(format!("../devices/{dev}/block/{name}"), root.join("sys/block").join(name)).unwrap();
    }

    #[test]
    fn the_controllers_a_server_boots_from_are_named_as_udev_names_them() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        disk(r, "vda", "pci0000:00/0000:00:05.0/virtio2");
        disk(r, "nvme0n1", "pci0000:00/0000:00:1c.0/0000:01:00.0/nvme/nvme0");
        fs::write(r.join("sys/block/nvme0n1/nsid"), "1\n").ok();
        disk(r, "sda", "pci0000:00/0000:00:1f.2/ata3/host2/target2:0:0/2:0:0:0");
        fs::create_dir_all(r.join("sys/class/ata_port/ata3")).unwrap();
        fs::write(r.join("sys/class/ata_port/ata3/port_no"), "3\n").unwrap();
        // virtio-scsi: its hosts are numbered after the SATA controller's.
        disk(r, "sdb", "pci0000:00/0000:00:04.0/virtio1/host7/target7:0:1/7:0:1:0");
        disk(r, "sdc", "pci0000:00/0000:00:04.0/virtio1/host8/target8:0:0/8:0:0:0");
        disk(r, "sdd", "pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host9/target9:0:0/9:0:0:0");
        let got = |n| by_path(r, n);
        assert_eq!(got("vda").as_deref(), Some("pci-0000:00:05.0"));
        assert_eq!(got("nvme0n1").as_deref(), Some("pci-0000:01:00.0-nvme-1"));
        assert_eq!(got("sda").as_deref(), Some("pci-0000:00:1f.2-ata-3.0"));
        assert_eq!(got("sdb").as_deref(), Some("pci-0000:00:04.0-scsi-0:0:1:0"));
        assert_eq!(got("sdc").as_deref(), Some("pci-0000:00:04.0-scsi-1:0:0:0"));
        assert_eq!(got("sdd"), None, "USB is named by its port: not here");
        assert_eq!(got("vdz"), None, "no such disk");
    }
}
