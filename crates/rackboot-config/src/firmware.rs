//! `[firmware]`: the firmware baselines hardware profiles name, where their images are kept
//! (`<tftp root>/firmware/<sha256>`, served to BMCs at `/boot/files/firmware/<sha256>`), how
//! large an uploaded image may be, how it reaches a BMC and how long a BMC's flash is followed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rackboot_model::baseline::{self, Baseline, Transfer};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireFirmware {
    pub max_image_mb: u64,
    pub update_timeout_secs: u64,
    pub transfer: Transfer,
    pub baselines: Vec<Baseline>,
}

impl Default for WireFirmware {
    fn default() -> Self {
        WireFirmware { max_image_mb: 2048, update_timeout_secs: 3600, transfer: Transfer::Auto, baselines: Vec::new() }
    }
}

/// Validated `[firmware]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FirmwareConfig {
    /// Where uploaded images are kept, by SHA-256 (in the boot directory, so that
    /// `/boot/files/firmware/` serves them to BMCs).
    pub dir: PathBuf,
    /// An uploaded image's size, at most (bytes).
    pub max_image_bytes: u64,
    /// How long one component's update (the BMC's task) is followed before it counts as failed.
    pub update_timeout: std::time::Duration,
    /// How images reach Redfish BMCs.
    pub transfer: Transfer,
    pub baselines: BTreeMap<String, Baseline>,
}

impl FirmwareConfig {
    pub fn from_wire(w: WireFirmware, tftp_root: &Path) -> anyhow::Result<Self> {
        let WireFirmware { max_image_mb, update_timeout_secs, transfer, baselines: wire } = w;
        anyhow::ensure!((1..=65_536).contains(&max_image_mb), "firmware.max_image_mb must be 1..=65536");
        anyhow::ensure!(
            (60..=86_400).contains(&update_timeout_secs),
            "firmware.update_timeout_secs must be 60..=86400"
        );
        let mut baselines = BTreeMap::new();
        for mut b in wire {
            anyhow::ensure!(
                rackboot_model::records::valid_hostname(&b.name),
                "firmware baseline name {:?} must be letters, digits and '-'",
                b.name
            );
            baseline::check(&b).map_err(|e| anyhow::anyhow!("{e}"))?;
            for c in &mut b.components {
                c.image = c.sha256();
                c.version = c.version.trim().to_string();
            }
            let name = b.name.clone();
            anyhow::ensure!(baselines.insert(name.clone(), b).is_none(), "firmware baseline {name} is defined twice");
        }
        Ok(FirmwareConfig {
            dir: tftp_root.join("firmware"),
            max_image_bytes: max_image_mb << 20,
            update_timeout: std::time::Duration::from_secs(update_timeout_secs),
            transfer,
            baselines,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> anyhow::Result<FirmwareConfig> {
        FirmwareConfig::from_wire(toml::from_str(text)?, Path::new("/srv/tftp"))
    }

    #[test]
    fn baselines_are_checked_and_images_kept_as_bare_hex() {
        let hex = "AB".repeat(32);
        let c = parse(&format!(
            "[[baselines]]\nname = \"r650\"\ncomponents = [{{ component = \"bios\", version = \" 1.1.0 \", image = \"sha256:{hex}\" }}]\n"
        ))
        .unwrap();
        let b = &c.baselines["r650"];
        assert_eq!(b.components[0].image, "ab".repeat(32));
        assert_eq!(b.components[0].version, "1.1.0");
        assert_eq!(c.dir, Path::new("/srv/tftp/firmware"));
        let e = parse(
            "[[baselines]]\nname = \"x\"\ncomponents = [{ component = \"bios\", version = \"1\", image = \"nope\" }]\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("image must be a SHA-256"), "{e}");
        let e = parse(
            "[[baselines]]\nname = \"x\"\ncomponents = [{ component = \"gpu\", version = \"1\", image = \"a\" }]\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("gpu"), "{e}");
        assert!(parse("max_image_mb = 0").is_err());
        assert_eq!(parse("transfer = \"push\"").unwrap().transfer, Transfer::Push);
        assert_eq!(parse("").unwrap().transfer, Transfer::Auto);
        assert!(parse("transfer = \"ftp\"").is_err());
    }
}
