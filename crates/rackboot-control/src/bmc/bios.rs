//! BIOS settings, firmware certificates and firmware updates through the power service: written
//! or flashed (Redfish) under the same lock, cap and credential hold as power actions (a flash
//! under a deadline of its own; the engine then restarts the machine into BootOS), and read back
//! after it booted.

use super::power::PowerError;
use super::{BmcError, Power};
use rackboot_model::bios::{self, FirmwareCert, Settings};

impl Power {
    /// Writes the declared attributes that differ on machine `id`'s BMC and puts in the
    /// certificates its firmware lacks; returns what changed (empty: all were so already).
    /// They apply at the next restart.
    pub async fn bios_apply(
        &self,
        id: u64,
        want: &Settings,
        certs: &[(FirmwareCert, String)],
    ) -> Result<Vec<String>, PowerError> {
        let (want, certs) = (want.clone(), certs.to_vec());
        let (_, changed) = self.with_driver(id, "bios", |d| async move { d.bios_apply(&want, &certs).await }).await?;
        Ok(changed)
    }

    /// Reads machine `id`'s firmware (kept on its BMC record) and names the declared
    /// attributes it does not report as declared and the certificates it lacks (empty: all
    /// are as declared).
    pub async fn bios_verify(
        &self,
        id: u64,
        want: &Settings,
        certs: &[(FirmwareCert, String)],
    ) -> Result<String, PowerError> {
        let mut differing = Vec::new();
        if !want.is_empty() {
            let report = self.firmware(id).await?;
            let Some(current) = report.bios else {
                let error = BmcError::Other("the BMC offers no Bios resource to read back".into());
                return Err(PowerError::Bmc { machine: id, action: "bios", error });
            };
            let diff = bios::differing(want, &current);
            if !diff.is_empty() {
                differing.push(bios::describe(&diff));
            }
        }
        if !certs.is_empty() {
            let certs = certs.to_vec();
            let (_, missing) = self.with_driver(id, "bios", |d| async move { d.certs_missing(&certs).await }).await?;
            differing.extend(missing.iter().map(|c| format!("no {} ({})", c.describe(), c.as_str())));
        }
        Ok(differing.join(", "))
    }
}

impl PowerError {
    /// Whether trying the same call again may help (no answer, a server error, the store).
    pub fn transient(&self) -> bool {
        match self {
            PowerError::Bmc { error, .. } => error.transient(),
            PowerError::Cmdb(_) => true,
            PowerError::NoBmc(_) | PowerError::Sealed(_) => false,
        }
    }
}

impl Power {
    /// Flashes `image` into `targets` on machine `id` (Redfish `UpdateService`) and follows
    /// the BMC's task for at most `wait`, under the machine's BMC lock (no power action reaches
    /// it meanwhile).
    pub async fn firmware_update(
        &self,
        id: u64,
        image: &crate::bmc::redfish::update::Image<'_>,
        targets: &[String],
        wait: std::time::Duration,
        progress: &mut (dyn FnMut(crate::bmc::redfish::update::Progress) + Send),
    ) -> Result<crate::bmc::redfish::update::Updated, PowerError> {
        let deadline = wait + std::time::Duration::from_secs(60);
        let (_, updated) = self
            .with_driver_for(id, "firmware-update", deadline, |d| async move {
                d.firmware_update(image, targets, wait, progress).await
            })
            .await?;
        Ok(updated)
    }
}
