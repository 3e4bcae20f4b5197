//! BIOS settings through the power service: written (Redfish) under the same lock, cap,
//! deadline and credential hold as power actions, the machine restarted into BootOS (PXE once
//! and a cycle, both verified and on its timeline), then read back after it booted.

use super::power::{Caller, PowerError};
use super::{BmcError, Power, PowerAction};
use crate::cmdb::now_ms;
use rackboot_model::bios::{self, Settings};

impl Power {
    /// Writes the declared attributes that differ on machine `id`'s BMC and, if any did,
    /// restarts the machine from the network once (in UEFI mode or legacy); returns their names
    /// and when the restart was read back (empty: all were set already, nothing restarted).
    pub async fn bios_apply(&self, id: u64, want: &Settings, uefi: bool) -> Result<(Vec<String>, u64), PowerError> {
        let want2 = want.clone();
        let (_, changed) = self.with_driver(id, "bios", |d| async move { d.bios_apply(&want2).await }).await?;
        if changed.is_empty() {
            return Ok((changed, 0));
        }
        for action in [PowerAction::PxeOnce, PowerAction::Cycle] {
            self.act(id, action, uefi, Caller::Provision).await?;
        }
        Ok((changed, now_ms()))
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
