//! Firmware baselines in practice: which baseline a machine is held to, its drift from it
//! (from its BMC's last firmware read), the images kept by SHA-256, and updates through the
//! BMC's `UpdateService` ([`update`]), on an operator's request for a machine or a rack.
//!
//! A machine's baseline is its hardware profile's: the first profile (by name) that names a
//! baseline and whose vendors and models fit the machine.

pub mod images;
pub mod inband;
mod update;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use crate::bmc::Power;
use crate::cmdb::{Cmdb, CmdbError};
use crate::config::{FirmwareConfig, HardwareProfile};
use rackboot_model::baseline::{self, Baseline, Drift};
use rackboot_model::records::Machine;

pub use images::{Image, ImageError, Images};
pub use update::{Outcome, Restart, Restarter, UpdateError};

/// Who asked for an update (the events say).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Operator,
    Provision,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            By::Operator => "operator",
            By::Provision => "provision",
        }
    }
}

/// The firmware service.
pub struct Firmware {
    cmdb: Cmdb,
    power: Arc<Power>,
    cfg: FirmwareConfig,
    profiles: BTreeMap<String, HardwareProfile>,
    /// Where BMCs fetch an image: this, `/`, its SHA-256.
    image_base: String,
    pub images: Images,
    /// Machines being updated now (one update per machine at a time).
    running: Mutex<BTreeSet<u64>>,
}

impl Firmware {
    /// `image_base`: the URL prefix BMCs fetch images under (`<http base>/boot/files/firmware`).
    pub fn new(
        cmdb: Cmdb,
        power: Arc<Power>,
        cfg: FirmwareConfig,
        profiles: BTreeMap<String, HardwareProfile>,
        image_base: String,
    ) -> Firmware {
        let images = Images::new(cfg.dir.clone(), cfg.max_image_bytes);
        images.sweep();
        let image_base = image_base.trim_end_matches('/').to_string();
        Firmware { cmdb, power, cfg, profiles, image_base, images, running: Mutex::new(BTreeSet::new()) }
    }

    pub fn baselines(&self) -> &BTreeMap<String, Baseline> {
        &self.cfg.baselines
    }

    /// The URL a BMC fetches image `sha256` at.
    pub fn image_url(&self, sha256: &str) -> String {
        format!("{}/{sha256}", self.image_base)
    }

    /// The baseline machine `m` is held to, if any.
    pub fn baseline_for(&self, m: &Machine) -> Option<&Baseline> {
        self.profiles
            .values()
            .filter(|p| {
                rackboot_model::provision::profile_fits(&p.vendors, &p.models, m.vendor.as_deref(), m.model.as_deref())
            })
            .find_map(|p| p.firmware_baseline.as_ref())
            .and_then(|b| self.cfg.baselines.get(b))
    }

    /// Machine `m`'s drift from its baseline, from its BMC's last read and, where that says
    /// nothing of the BIOS, BootOS's inventory (`None`: no baseline).
    pub async fn drift(&self, m: &Machine) -> Result<Option<Drift>, CmdbError> {
        let Some(b) = self.baseline_for(m) else { return Ok(None) };
        let report = self.cmdb.bmc(m.id).await?.and_then(|b| b.firmware);
        let inband = m.inventory.as_ref().and_then(|i| i.dmi.bios_version.as_deref());
        Ok(Some(baseline::drift_with(b, report.as_ref(), inband)))
    }

    /// The images of baseline `b` not uploaded yet (SHA-256s).
    pub fn missing_images(&self, b: &Baseline) -> Vec<String> {
        b.components.iter().filter(|c| !self.images.has(&c.image)).map(|c| c.image.clone()).collect()
    }

    /// The baselines that name image `sha256`.
    pub fn used_by(&self, sha256: &str) -> Vec<String> {
        let sha = sha256.to_ascii_lowercase();
        let used = |b: &&Baseline| b.components.iter().any(|c| c.image == sha);
        self.cfg.baselines.values().filter(used).map(|b| b.name.clone()).collect()
    }

    /// Marks machine `id` as being updated; `None` when an update of it runs already.
    fn claim(self: &Arc<Self>, id: u64) -> Option<Claim> {
        self.running.lock().expect("firmware lock").insert(id).then(|| Claim(self.clone(), id))
    }

    /// Whether machine `id` is being updated.
    pub fn updating(&self, id: u64) -> bool {
        self.running.lock().expect("firmware lock").contains(&id)
    }
}

/// An update in progress on one machine; released on drop.
struct Claim(Arc<Firmware>, u64);

impl Drop for Claim {
    fn drop(&mut self) {
        self.0.running.lock().expect("firmware lock").remove(&self.1);
    }
}
