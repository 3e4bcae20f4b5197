//! Root-device hints: which disk a task installs on, by what the machine's inventory says of
//! it. Every hint given must match, and exactly one disk may: none or several fail the run
//! before anything is written, naming the disks the inventory has.

use rackboot_agent::wire::Disk;
use serde::{Deserialize, Serialize};

const GIB: u64 = 1 << 30;

/// What the install disk must be. Text hints compare without case and surrounding blanks; a
/// WWN also without its `0x`, `naa.`, `eui.` or `t10.` prefix.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RootDeviceHints {
    /// Kernel name: `sda`, `vdb`, `nvme0n1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// World wide name, as `/sys/block/<disk>/wwid` or `device/wwid` give it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Size bounds in GiB (1 GiB = 2^30 bytes), both inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_size_gib: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size_gib: Option<u64>,
    /// true: spinning disks only; false: solid state only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// The disk's name under `/dev/disk/by-path/` (with or without that prefix), e.g.
    /// `pci-0000:00:1f.2-ata-1.0`; a SATA path also in its older form without `.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_path: Option<String>,
}

fn same(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// A by-path name without `/dev/disk/by-path/`, and a SATA device 0 in systemd's older form
/// (`...-ata-1.0` and `...-ata-1` are the same disk).
fn by_path(s: &str) -> String {
    let s = s.trim();
    let s = s.strip_prefix("/dev/disk/by-path/").unwrap_or(s);
    match s.rsplit_once("-ata-") {
        Some((pci, port)) => format!("{pci}-ata-{}", port.strip_suffix(".0").unwrap_or(port)),
        None => s.to_string(),
    }
}

fn wwn(s: &str) -> String {
    let s = s.trim().to_ascii_lowercase();
    ["0x", "naa.", "eui.", "t10."].iter().find_map(|p| s.strip_prefix(p)).unwrap_or(&s).to_string()
}

impl RootDeviceHints {
    /// Hints from `KEY=VALUE` words (the CLI's `--root-device`, the UI's field).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = &'a str>) -> Result<RootDeviceHints, String> {
        let mut h = RootDeviceHints::default();
        for pair in pairs {
            let (k, v) = pair.split_once('=').ok_or_else(|| format!("root-device hint {pair:?}: KEY=VALUE"))?;
            let (k, v) = (k.trim(), v.trim());
            let text = Some(v.to_string());
            let gib = || v.parse::<u64>().map_err(|_| format!("root-device {k}: a number of GiB, not {v:?}"));
            match k {
                "name" => h.name = text,
                "serial" => h.serial = text,
                "wwn" => h.wwn = text,
                "model" => h.model = text,
                "vendor" => h.vendor = text,
                "by_path" => h.by_path = text,
                "min_size_gib" => h.min_size_gib = Some(gib()?),
                "max_size_gib" => h.max_size_gib = Some(gib()?),
                "rotational" => {
                    h.rotational = Some(v.parse().map_err(|_| format!("root-device {k}: true or false, not {v:?}"))?)
                }
                _ => {
                    return Err(format!(
                        "{k:?} is not a root-device hint (name, serial, wwn, model, vendor, by_path, min_size_gib, max_size_gib, rotational)"
                    ))
                }
            }
        }
        Ok(h)
    }

    /// Why these hints cannot be met by any disk, or can be told from nothing (an empty set).
    pub fn check(&self) -> Result<(), String> {
        if *self == RootDeviceHints::default() {
            return Err(
                "root_device has no hint: give at least one (name, serial, wwn, model, vendor, by_path, size, rotational)"
                    .into(),
            );
        }
        let texts = [
            ("name", &self.name),
            ("serial", &self.serial),
            ("wwn", &self.wwn),
            ("model", &self.model),
            ("vendor", &self.vendor),
            ("by_path", &self.by_path),
        ];
        for (field, v) in texts {
            if let Some(v) = v {
                if v.trim().is_empty() || v.len() > 128 || v.chars().any(char::is_control) {
                    return Err(format!("root_device.{field} must be 1-128 printable characters"));
                }
            }
        }
        if let (Some(min), Some(max)) = (self.min_size_gib, self.max_size_gib) {
            if min > max {
                return Err(format!("root_device.min_size_gib ({min}) is above max_size_gib ({max})"));
            }
        }
        Ok(())
    }

    /// Whether `disk` meets every hint given.
    pub fn matches(&self, disk: &Disk) -> bool {
        let text = |hint: &Option<String>, have: Option<&str>| {
            hint.as_deref().is_none_or(|h| have.is_some_and(|v| same(h, v)))
        };
        text(&self.name, Some(&disk.name))
            && text(&self.serial, disk.serial.as_deref())
            && text(&self.model, disk.model.as_deref())
            && text(&self.vendor, disk.vendor.as_deref())
            && self.wwn.as_deref().is_none_or(|h| disk.wwn.as_deref().is_some_and(|v| wwn(h) == wwn(v)))
            && self.by_path.as_deref().is_none_or(|h| disk.by_path.as_deref().is_some_and(|v| by_path(h) == by_path(v)))
            && self.min_size_gib.is_none_or(|min| disk.size_bytes >= min.saturating_mul(GIB))
            && self.max_size_gib.is_none_or(|max| disk.size_bytes <= max.saturating_mul(GIB))
            && self.rotational.is_none_or(|r| disk.rotational == r)
    }

    /// The one disk of `disks` that meets the hints, or why there is not exactly one.
    pub fn pick<'a>(&self, disks: &'a [Disk]) -> Result<&'a Disk, String> {
        let found: Vec<&Disk> = disks.iter().filter(|d| self.matches(d)).collect();
        match found.as_slice() {
            [one] => Ok(one),
            [] => Err(format!(
                "no disk matches the root-device hints {}; the inventory has {}",
                self.describe(),
                list(disks)
            )),
            many => Err(format!(
                "{} disks match the root-device hints {}: {}; add a hint that tells them apart",
                many.len(),
                self.describe(),
                list(&many.iter().map(|d| (*d).clone()).collect::<Vec<_>>())
            )),
        }
    }

    /// The hints as `serial=... min_size_gib=...`, for messages.
    fn describe(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .map(|o| {
                o.iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().map_or(v.to_string(), str::to_string)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    }
}

/// `vda (QEMU HARDDISK, serial S1, 2 GiB)`, ...
fn list(disks: &[Disk]) -> String {
    if disks.is_empty() {
        return "no disk".into();
    }
    let one = |d: &Disk| {
        let mut what = vec![];
        what.extend(d.model.clone());
        what.extend(d.serial.as_ref().map(|s| format!("serial {s}")));
        what.extend(d.wwn.as_ref().map(|w| format!("wwn {w}")));
        what.extend(d.by_path.as_ref().map(|p| format!("by-path {p}")));
        what.push(format!("{:.1} GiB", d.size_bytes as f64 / GIB as f64));
        format!("{} ({})", d.name, what.join(", "))
    };
    disks.iter().map(one).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(name: &str, serial: &str, gib: u64, rotational: bool) -> Disk {
        Disk {
            name: name.into(),
            size_bytes: gib * GIB,
            model: Some("QEMU HARDDISK".into()),
            serial: Some(serial.into()),
            rotational,
            wwn: Some(format!("naa.5000c500{serial}")),
            vendor: Some("QEMU".into()),
            by_path: None,
        }
    }

    fn hints(json: &str) -> RootDeviceHints {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn exactly_one_disk_or_a_reason_naming_the_disks() {
        let disks = [disk("vda", "aa01", 2, false), disk("vdb", "bb02", 8, true), disk("vdc", "cc03", 8, true)];
        assert_eq!(hints(r#"{"serial":" BB02 "}"#).pick(&disks).unwrap().name, "vdb");
        assert_eq!(hints(r#"{"wwn":"0x5000C500cc03"}"#).pick(&disks).unwrap().name, "vdc");
        assert_eq!(hints(r#"{"rotational":false}"#).pick(&disks).unwrap().name, "vda");
        assert_eq!(hints(r#"{"max_size_gib":2}"#).pick(&disks).unwrap().name, "vda");
        assert_eq!(
            hints(r#"{"name":"vdc","model":"qemu harddisk","vendor":"QEMU"}"#).pick(&disks).unwrap().name,
            "vdc"
        );

        let err = hints(r#"{"serial":"nope"}"#).pick(&disks).unwrap_err();
        assert!(err.starts_with("no disk matches the root-device hints serial=nope; the inventory has vda ("), "{err}");
        assert!(err.contains("vdc (QEMU HARDDISK, serial cc03, wwn naa.5000c500cc03, 8.0 GiB)"), "{err}");
        let err = hints(r#"{"min_size_gib":4}"#).pick(&disks).unwrap_err();
        assert!(err.starts_with("2 disks match the root-device hints min_size_gib=4: vdb ("), "{err}");
        assert!(err.ends_with("add a hint that tells them apart"), "{err}");
        // A hint the inventory cannot answer (no serial reported) does not match.
        let bare = Disk { name: "sda".into(), size_bytes: GIB, ..Default::default() };
        assert!(hints(r#"{"serial":"x"}"#).pick(std::slice::from_ref(&bare)).is_err());
        assert!(hints(r#"{"name":"sda"}"#).pick(&[bare]).is_ok());
    }

    #[test]
    fn a_by_path_hint_takes_the_prefix_and_satas_older_form() {
        let sata = |name: &str, path: &str| Disk { by_path: Some(path.into()), ..disk(name, name, 8, false) };
        let disks = [sata("sda", "pci-0000:00:1f.2-ata-1.0"), sata("sdb", "pci-0000:00:1f.2-ata-2.0")];
        for h in ["pci-0000:00:1f.2-ata-2.0", "/dev/disk/by-path/pci-0000:00:1f.2-ata-2.0", "pci-0000:00:1f.2-ata-2"] {
            let got = RootDeviceHints::from_pairs([format!("by_path={h}").as_str()]).unwrap().pick(&disks);
            assert_eq!(got.map(|d| d.name.as_str()), Ok("sdb"), "{h}");
        }
        let err = hints(r#"{"by_path":"pci-0000:00:1f.2-ata-3"}"#).pick(&disks).unwrap_err();
        assert!(
            err.contains("sda (QEMU HARDDISK, serial sda, wwn naa.5000c500sda, by-path pci-0000:00:1f.2-ata-1.0"),
            "{err}"
        );
    }

    #[test]
    fn key_value_words_make_typed_hints() {
        let h = RootDeviceHints::from_pairs(["model=QEMU HARDDISK", " min_size_gib = 4", "rotational=false"]).unwrap();
        assert_eq!(h, hints(r#"{"model":"QEMU HARDDISK","min_size_gib":4,"rotational":false}"#));
        for (bad, why) in [
            ("serial", "KEY=VALUE"),
            ("max_size_gib=big", "a number of GiB"),
            ("rotational=yes", "true or false"),
            ("size=4", "not a root-device hint"),
        ] {
            let err = RootDeviceHints::from_pairs([bad]).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn hints_that_cannot_be_met_are_refused() {
        assert!(RootDeviceHints::default().check().unwrap_err().contains("no hint"));
        let err = hints(r#"{"min_size_gib":10,"max_size_gib":2}"#).check().unwrap_err();
        assert_eq!(err, "root_device.min_size_gib (10) is above max_size_gib (2)");
        assert!(hints(r#"{"serial":"  "}"#).check().unwrap_err().starts_with("root_device.serial"));
        assert!(hints(&format!(r#"{{"model":"{}"}}"#, "m".repeat(129))).check().is_err());
        assert!(serde_json::from_str::<RootDeviceHints>(r#"{"size":4}"#).is_err(), "unknown hints are refused");
        hints(r#"{"serial":"S1","min_size_gib":1,"max_size_gib":1}"#).check().unwrap();
    }
}
