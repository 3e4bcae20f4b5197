//! Disk layouts for image deploys: instead of the image as it is on one disk, its root file
//! system copied into a declared layout: mirrored across a second disk (software RAID 1), on
//! LVM with root growing to the space, with extra file systems beside it.

use serde::{Deserialize, Serialize};

use super::RootDeviceHints;

/// At most this many extra file systems.
pub const MAX_FILESYSTEMS: usize = 16;
/// The volume group a layout makes.
pub const VOLUME_GROUP: &str = "rackboot";
/// The root's logical volume there (`templates/provision/layout.sh` names it too).
pub const ROOT_VOLUME: &str = "root";
/// The mirror's RAID device.
pub const MIRROR_DEVICE: &str = "/dev/md100";

/// How an image deploy lays out its disks. The root disk is the task's (`disk` or
/// `root_device`); the image's ESP and BIOS boot partition are kept (on both disks when
/// mirrored) and the boot loader is installed so the machine boots BIOS and UEFI.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    /// The second disk of a software RAID 1 (mdadm, metadata 1.2) with the root disk: exactly
    /// one disk of the inventory must meet these hints, and it must not be the root disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<RootDeviceHints>,
    /// Root on LVM (volume group `rackboot`, logical volume `root`), growing to the space the
    /// extra file systems leave.
    #[serde(default)]
    pub lvm: bool,
    /// Extra file systems, each a logical volume (so `lvm` must be on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filesystems: Vec<FileSystem>,
}

/// An extra file system: made fresh, mounted through `/etc/fstab` by UUID; or, `encrypted`,
/// on LUKS2 bound with Clevis to the appliance's Tang server (see [`crate::tang`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FileSystem {
    /// Where it is mounted: an absolute path such as `/srv/data`.
    pub mount: String,
    pub fstype: FsType,
    /// Its size in MiB (with an encrypted one's 16 MiB LUKS2 header).
    pub size_mib: u64,
    /// On LUKS2, unlocked at boot only while the appliance's Tang server answers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub encrypted: bool,
}

/// The room an encrypted file system's LUKS2 header takes.
pub const LUKS_HEADER_MIB: u64 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FsType {
    Ext4,
    Xfs,
}

impl FsType {
    pub fn as_str(self) -> &'static str {
        match self {
            FsType::Ext4 => "ext4",
            FsType::Xfs => "xfs",
        }
    }

    /// The smallest file system its mkfs makes (xfsprogs 5.19 and later refuse under 300 MiB).
    pub fn min_mib(self) -> u64 {
        match self {
            FsType::Ext4 => 16,
            FsType::Xfs => 300,
        }
    }
}

/// Mount points the system itself owns.
const RESERVED: [&str; 9] = ["/", "/boot", "/boot/efi", "/dev", "/proc", "/sys", "/run", "/tmp", "/etc"];

impl Layout {
    /// Why this layout cannot be laid down, naming the field.
    pub fn check(&self) -> Result<(), String> {
        if let Some(m) = &self.mirror {
            m.check().map_err(|e| format!("layout.mirror: {e}"))?;
        }
        if !self.filesystems.is_empty() && !self.lvm {
            return Err("layout.filesystems need layout.lvm: each extra file system is a logical volume".into());
        }
        if self.filesystems.len() > MAX_FILESYSTEMS {
            return Err(format!("layout.filesystems: at most {MAX_FILESYSTEMS}"));
        }
        for (i, fs) in self.filesystems.iter().enumerate() {
            let at = format!("layout.filesystems[{i}]");
            let m = fs.mount.as_str();
            let safe = m.chars().all(|c| c.is_ascii_alphanumeric() || "/_.-".contains(c));
            if !m.starts_with('/') || m.len() > 128 || !safe || m.split('/').any(|p| p == "." || p == "..") {
                return Err(format!("{at}.mount {m:?}: an absolute path of letters, digits and / _ . -"));
            }
            let m = m.trim_end_matches('/');
            if RESERVED.contains(&if m.is_empty() { "/" } else { m }) {
                return Err(format!("{at}.mount {:?} belongs to the system", fs.mount));
            }
            if self.filesystems[..i].iter().any(|o| o.mount.trim_end_matches('/') == m) {
                return Err(format!("{at}.mount {:?} is given twice", fs.mount));
            }
            let volume = fs.volume();
            if volume == ROOT_VOLUME {
                return Err(format!("{at}.mount {:?}: its volume name {volume:?} is the root's", fs.mount));
            }
            if let Some(o) = self.filesystems[..i].iter().find(|o| o.volume() == volume) {
                return Err(format!(
                    "{at}.mount {:?}: its volume name {volume:?} is {:?}'s too (/ . - all become _)",
                    fs.mount, o.mount
                ));
            }
            let header = if fs.encrypted { LUKS_HEADER_MIB } else { 0 };
            if fs.size_mib < fs.fstype.min_mib() + header || fs.size_mib > 1 << 30 {
                return Err(format!(
                    "{at}.size_mib {}: {}{} needs at least {} MiB (and at most 1 PiB)",
                    fs.size_mib,
                    fs.fstype.as_str(),
                    if fs.encrypted { " on LUKS2" } else { "" },
                    fs.fstype.min_mib() + header
                ));
            }
        }
        Ok(())
    }

    /// A layout from the CLI's and the UI's words: the mirror's hints (`KEY=VALUE`), LVM, and
    /// file systems (`MOUNT:FSTYPE:SIZE_MIB[:encrypted]`); None when none is given. Checked.
    pub fn from_words<'a>(
        mirror: impl IntoIterator<Item = &'a str>,
        lvm: bool,
        filesystems: impl IntoIterator<Item = &'a str>,
    ) -> Result<Option<Layout>, String> {
        let mirror: Vec<&str> = mirror.into_iter().filter(|w| !w.trim().is_empty()).collect();
        let filesystems = filesystems
            .into_iter()
            .filter(|w| !w.trim().is_empty())
            .map(FileSystem::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if mirror.is_empty() && !lvm && filesystems.is_empty() {
            return Ok(None);
        }
        let mirror = match mirror.is_empty() {
            true => None,
            false => Some(RootDeviceHints::from_pairs(mirror).map_err(|e| format!("mirror: {e}"))?),
        };
        let layout = Layout { mirror, lvm, filesystems };
        layout.check()?;
        Ok(Some(layout))
    }

    /// Whether a file system is encrypted (bound to the appliance's Tang server).
    pub fn encrypts(&self) -> bool {
        self.filesystems.iter().any(|f| f.encrypted)
    }

    /// Whether the image is laid down as it is (no mirror, no LVM).
    pub fn is_plain(&self) -> bool {
        self.mirror.is_none() && !self.lvm
    }

    /// The device that holds the root file system once laid out; None for a plain layout.
    pub fn root_device(&self) -> Option<String> {
        match (self.lvm, &self.mirror) {
            (true, _) => Some(format!("/dev/{VOLUME_GROUP}/{ROOT_VOLUME}")),
            (false, Some(_)) => Some(MIRROR_DEVICE.into()),
            (false, None) => None,
        }
    }
}

impl FileSystem {
    /// `MOUNT:FSTYPE:SIZE_MIB[:encrypted]`, e.g. `/srv/data:xfs:512` (the CLI's `--fs`, the
    /// UI's field).
    pub fn parse(s: &str) -> Result<FileSystem, String> {
        let usage = || format!("file system {s:?}: MOUNT:FSTYPE:SIZE_MIB[:encrypted], e.g. /srv/data:xfs:512");
        let mut parts = s.trim().split(':');
        let (Some(mount), Some(fstype), Some(size), flag, None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(usage());
        };
        let encrypted = match flag.map(str::trim) {
            None => false,
            Some("encrypted") => true,
            Some(_) => return Err(usage()),
        };
        let fstype = match fstype.trim() {
            "ext4" => FsType::Ext4,
            "xfs" => FsType::Xfs,
            other => return Err(format!("file system {s:?}: {other:?} is not ext4 or xfs")),
        };
        let size_mib = size.trim().parse().map_err(|_| usage())?;
        Ok(FileSystem { mount: mount.trim().to_string(), fstype, size_mib, encrypted })
    }

    /// The logical volume's name, from the mount point: `/srv/data` -> `srv_data`.
    pub fn volume(&self) -> String {
        self.mount.trim_matches('/').replace(['/', '.', '-'], "_")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(json: &str) -> Result<Layout, String> {
        let l: Layout = serde_json::from_str(json).map_err(|e| e.to_string())?;
        l.check().map(|_| l)
    }

    #[test]
    fn a_mirror_with_lvm_and_an_extra_file_system() {
        let l = layout(
            r#"{"mirror":{"serial":"S2"},"lvm":true,"filesystems":[{"mount":"/srv/data","fstype":"xfs","size_mib":512}]}"#,
        )
        .unwrap();
        assert_eq!(l.mirror.unwrap().serial.as_deref(), Some("S2"));
        assert_eq!(l.filesystems[0].volume(), "srv_data");
        assert!(layout("{}").unwrap().is_plain());
    }

    #[test]
    fn a_layout_from_words() {
        let l = Layout::from_words(
            ["serial=S2"],
            true,
            ["/srv/data:xfs:512", " /var/log : ext4 : 64 ", "/k:ext4:32:encrypted"],
        )
        .unwrap()
        .unwrap();
        assert_eq!(l.mirror.as_ref().unwrap().serial.as_deref(), Some("S2"));
        let log = FileSystem { mount: "/var/log".into(), fstype: FsType::Ext4, size_mib: 64, encrypted: false };
        assert_eq!(l.filesystems[1], log);
        assert!(l.filesystems[2].encrypted && l.encrypts() && !l.filesystems[0].encrypted);
        assert!(!serde_json::to_string(&l.filesystems[0]).unwrap().contains("encrypted"), "false is not written");
        assert_eq!(Layout::from_words([""], false, [""]).unwrap(), None, "blank fields: no layout");
        for (fs, want) in [
            ("/srv:btrfs:64", "not ext4 or xfs"),
            ("/srv:xfs", "MOUNT:FSTYPE:SIZE_MIB"),
            ("/srv:ext4:big", "MOUNT:FSTYPE"),
            ("/srv:ext4:64:secret", "[:encrypted]"),
            ("/srv:ext4:31:encrypted", "ext4 on LUKS2 needs at least 32 MiB"),
        ] {
            let err = Layout::from_words([], true, [fs]).unwrap_err();
            assert!(err.contains(want), "{fs}: {err}");
        }
        assert!(Layout::from_words(["size=4"], false, []).unwrap_err().starts_with("mirror: "));
        assert!(Layout::from_words([], false, ["/srv:ext4:64"]).unwrap_err().contains("need layout.lvm"));
    }

    #[test]
    fn bad_layouts_are_refused_naming_the_field() {
        let cases = [
            (r#"{"mirror":{}}"#, "layout.mirror: root_device has no hint"),
            (r#"{"filesystems":[{"mount":"/srv","fstype":"ext4","size_mib":64}]}"#, "need layout.lvm"),
            (r#"{"lvm":true,"filesystems":[{"mount":"srv","fstype":"ext4","size_mib":64}]}"#, "filesystems[0].mount"),
            (r#"{"lvm":true,"filesystems":[{"mount":"/a/../etc","fstype":"ext4","size_mib":64}]}"#, "absolute path"),
            (r#"{"lvm":true,"filesystems":[{"mount":"/x;reboot","fstype":"ext4","size_mib":64}]}"#, "absolute path"),
            (
                r#"{"lvm":true,"filesystems":[{"mount":"/boot/","fstype":"ext4","size_mib":64}]}"#,
                "belongs to the system",
            ),
            (r#"{"lvm":true,"filesystems":[{"mount":"/srv","fstype":"xfs","size_mib":100}]}"#, "at least 300 MiB"),
            (
                r#"{"lvm":true,"filesystems":[{"mount":"/srv","fstype":"ext4","size_mib":64},{"mount":"/srv/","fstype":"ext4","size_mib":64}]}"#,
                "filesystems[1].mount \"/srv/\" is given twice",
            ),
            (
                r#"{"lvm":true,"filesystems":[{"mount":"/srv/data","fstype":"ext4","size_mib":64},{"mount":"/srv_data","fstype":"ext4","size_mib":64}]}"#,
                "filesystems[1].mount \"/srv_data\": its volume name \"srv_data\" is \"/srv/data\"'s too",
            ),
            (r#"{"lvm":true,"filesystems":[{"mount":"/root","fstype":"ext4","size_mib":64}]}"#, "is the root's"),
            (r#"{"lvm":true,"filesystems":[{"mount":"/srv","fstype":"btrfs","size_mib":64}]}"#, "unknown variant"),
            (r#"{"raid":1}"#, "unknown field"),
        ];
        for (json, want) in cases {
            let err = layout(json).unwrap_err();
            assert!(err.contains(want), "{json}: {err}");
        }
        let many: Vec<_> = (0..17).map(|i| format!(r#"{{"mount":"/d{i}","fstype":"ext4","size_mib":16}}"#)).collect();
        let err = layout(&format!(r#"{{"lvm":true,"filesystems":[{}]}}"#, many.join(","))).unwrap_err();
        assert!(err.contains("at most 16"), "{err}");
    }
}
