//! The firmware step's update, in the background: the machine brought to its hardware
//! profile's baseline by the firmware service, restarted into BootOS (PXE once and a cycle, or
//! its virtual CD) where a component waits for a restart. The run's next pass reads where it is
//! (see `decide::firmware`); an update lost to a restart of the appliance is not in the map,
//! which fails the step rather than flash again. Without a Redfish BMC, what the plugins' road
//! reads (see `decide::firmware_inband`).

use std::sync::Arc;

use super::decide::firmware::{FirmwareCall, FirmwareOutcome};
use super::decide::Observed;
use super::engine::{into_bootos, Engine};
use super::Run;
use crate::cmdb::EventKind;
use crate::firmware::{inband, By, Restart, Restarter};
use crate::jobs::JobState;
use rackboot_model::baseline::FirmwarePhase;

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

impl Engine {
    /// What a firmware step without a Redfish BMC looks at: which components plugins flash,
    /// the phase's job and what its plugin reported, or the action to queue.
    pub(super) async fn observe_inband_firmware(&self, run: &Run, o: &mut Observed) -> anyhow::Result<()> {
        let (Some(fw), Some(f), Some(m)) = (self.firmware.get(), o.firmware.as_mut(), o.machine.as_ref()) else {
            return Ok(());
        };
        let Some(b) = fw.baselines().get(&f.baseline) else { return Ok(()) };
        let plan = inband::plan(b, m);
        (f.plugins, f.stuck, f.left) = (plan.plugins, plan.stuck, plan.left);
        f.components = b.components.iter().map(|c| c.component.as_str().to_string()).collect();
        f.versions = b.components.iter().map(|c| c.version.clone()).collect();
        let cmdb = &self.hub.cmdb;
        let (component, check_only) = match run.firmware {
            Some(FirmwarePhase::Flash { component, .. }) => (component, false),
            Some(FirmwarePhase::Verify { component, .. }) => (component, true),
            _ => return Ok(()),
        };
        match run.job {
            None => o.action = Some(inband::plugin_action(fw, cmdb, b, component, check_only, m).await),
            Some(jid) => {
                let job = cmdb.job(jid).await?;
                if !matches!(job.state, JobState::Queued | JobState::Running) {
                    let ev = cmdb.last_event_of(m.id, EventKind::PluginResult, 64).await?;
                    f.plugin_result = ev
                        .filter(|e| e.detail["job"] == jid)
                        .and_then(|e| e.detail["result"].as_str().map(str::to_string));
                }
                o.job = Some(job);
            }
        }
        Ok(())
    }
}
