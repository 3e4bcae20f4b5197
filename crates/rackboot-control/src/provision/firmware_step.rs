//! The firmware step's update, in the background: the machine brought to its hardware
//! profile's baseline by the firmware service, restarted into BootOS (PXE once and a cycle, or
//! its virtual CD) where a component waits for a restart. The run's next pass reads where it is
//! (see `decide::firmware`); an update lost to a restart of the appliance is not in the map,
//! which fails the step rather than flash again.

use std::sync::Arc;

use super::decide::firmware::{FirmwareCall, FirmwareOutcome};
use super::engine::{into_bootos, Engine};
use crate::firmware::{By, Restart, Restarter};

impl Engine {
    /// Starts the update a firmware step asked for.
    pub(super) fn firmware_call(&self, run: u64, mid: u64, call: FirmwareCall) {
        let outcomes = self.firmware_outcomes.clone();
        let put = move |outcome| outcomes.lock().expect("firmware outcomes lock").insert(run, (call.at_ms, outcome));
        let (Some(fw), Some(power)) = (self.firmware.get().cloned(), self.power.get().cloned()) else {
            put(FirmwareOutcome::Failed("firmware updates are not running on this appliance".into()));
            return;
        };
        put(FirmwareOutcome::Running);
        let (cmdb, vmedia, uefi) = (self.hub.cmdb.clone(), self.vmedia.get().cloned(), call.uefi);
        let restarter: Restarter = Arc::new(move |id| {
            let (power, cmdb, vmedia) = (power.clone(), cmdb.clone(), vmedia.clone());
            Box::pin(async move { into_bootos(&power, &cmdb, vmedia.as_deref(), id, uefi).await.map(|()| true) })
        });
        tokio::spawn(async move {
            let outcome = match fw.baselines().get(&call.baseline).cloned() {
                None => {
                    FirmwareOutcome::Failed(format!("firmware baseline {:?} is gone from the config", call.baseline))
                }
                Some(b) => match fw.update_exclusive(mid, &b, &Restart::With(restarter), By::Provision).await {
                    Ok(o) => FirmwareOutcome::Done {
                        flashed: o.flashed.iter().map(|c| c.as_str().to_string()).collect(),
                        restarted_ms: o.restarted_ms,
                    },
                    Err(e) => FirmwareOutcome::Failed(e),
                },
            };
            if let FirmwareOutcome::Failed(error) = &outcome {
                tracing::warn!(machine = mid, run, %error, "firmware step: the update failed");
            }
            put(outcome);
        });
    }
}
