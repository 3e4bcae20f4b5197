//! BIOS settings through the power service: written (Redfish) under the same lock, cap,
//! deadline and credential hold as power actions (the engine then restarts the machine into
//! BootOS), and read back after it booted.

use super::power::PowerError;
use super::{BmcError, Power};
use rackboot_model::bios::{self, Settings};

impl Power {
    /// Writes the declared attributes that differ on machine `id`'s BMC; returns their names
    /// (empty: all were set already). They apply at the next restart.
    pub async fn bios_apply(&self, id: u64, want: &Settings) -> Result<Vec<String>, PowerError> {
        let want = want.clone();
        let (_, changed) = self.with_driver(id, "bios", |d| async move { d.bios_apply(&want).await }).await?;
        Ok(changed)
    }

    /// Reads machine `id`'s firmware (kept on its BMC record) and names the declared
    /// attributes it does not report as declared (empty: all are).
    pub async fn bios_verify(&self, id: u64, want: &Settings) -> Result<String, PowerError> {
        let report = self.firmware(id).await?;
        let Some(current) = report.bios else {
            let error = BmcError::Other("the BMC offers no Bios resource to read back".into());
            return Err(PowerError::Bmc { machine: id, action: "bios", error });
        };
        Ok(bios::describe(&bios::differing(want, &current)))
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
