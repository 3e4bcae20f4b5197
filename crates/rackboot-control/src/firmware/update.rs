//! One machine brought to its baseline through its BMC: its firmware read, each drifting
//! component flashed (`UpdateService.SimpleUpdate` with the image's URL on this appliance, the
//! BMC's task followed with its progress on the timeline), the machine restarted where a
//! component waits for it (only a machine that is on, and only when allowed), and the versions
//! read back until they are the baseline's or `firmware.update_timeout_secs` passed. A failed
//! flash ends the update with the BMC's message; nothing is tried again by itself.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::{By, Firmware};
use crate::bmc::power::{Caller, PowerError};
use crate::bmc::{PowerAction, PowerState};
use crate::cmdb::{now_ms, CmdbError, EventKind};
use rackboot_model::baseline::{self, Baseline, Component, ComponentDrift, Drift, Standing};

/// How often the versions are read back after a flash.
const READ_BACK_EVERY: Duration = Duration::from_secs(5);

/// Why an update could not start.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    #[error("machine {0} is held to no firmware baseline: no hardware profile that fits it names one")]
    NoBaseline(u64),
    #[error("machine {0} is being updated already")]
    Busy(u64),
    #[error("firmware baseline {baseline}: the {component} image {sha256} is not uploaded (rackboot firmware upload)")]
    MissingImage { baseline: String, component: &'static str, sha256: String },
    #[error(transparent)]
    Cmdb(#[from] CmdbError),
}

/// How an update ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The components flashed.
    pub flashed: Vec<Component>,
    /// Where the machine stands after (read back).
    pub drift: Drift,
    /// When the machine was restarted for it (Unix ms).
    pub restarted_ms: Option<u64>,
    /// A restart is still needed for the versions to show (not allowed, or the machine is off).
    pub pending: bool,
}

/// Restarts machine `id` for its new firmware: `true` when it was restarted (`false`: left so).
pub type Restarter =
    Arc<dyn Fn(u64) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool, String>> + Send>> + Send + Sync>;

/// Whether an update may restart the machine where a component waits for it.
#[derive(Clone)]
pub enum Restart {
    /// Never: the versions show after its next start.
    Never,
    /// A power cycle, if the machine is on (an operator's update).
    IfOn,
    /// This way (provisioning: PXE once into BootOS, then a cycle).
    With(Restarter),
}

impl Firmware {
    /// Checks that machine `id` can be updated and starts the update in the background; its
    /// course is on the machine's timeline (`firmware.*`).
    pub async fn start(self: &Arc<Self>, id: u64, restart: Restart, by: By) -> Result<Baseline, UpdateError> {
        let m = self.cmdb.machine(id).await?;
        let b = self.baseline_for(&m).cloned().ok_or(UpdateError::NoBaseline(id))?;
        if let Some(c) = b.components.iter().find(|c| !self.images.has(&c.image)) {
            let (component, sha256) = (c.component.as_str(), c.image.clone());
            return Err(UpdateError::MissingImage { baseline: b.name.clone(), component, sha256 });
        }
        let claim = self.claim(id).ok_or(UpdateError::Busy(id))?;
        let (me, baseline) = (self.clone(), b.clone());
        tokio::spawn(async move {
            let _claim = claim;
            if let Err(e) = me.update(id, &baseline, &restart, by).await {
                tracing::warn!(machine = id, error = %e, "firmware update failed");
            }
        });
        Ok(b)
    }

    /// [`Firmware::update`] unless an update of machine `id` runs already (an operator's and a
    /// provisioning run's never overlap).
    pub async fn update_exclusive(
        self: &Arc<Self>,
        id: u64,
        baseline: &Baseline,
        restart: &Restart,
        by: By,
    ) -> Result<Outcome, String> {
        let Some(_claim) = self.claim(id) else { return Err(UpdateError::Busy(id).to_string()) };
        self.update(id, baseline, restart, by).await
    }

    /// Brings machine `id` to `baseline` (see the module); the error is the reason, also on the
    /// timeline as `firmware.failed`.
    pub async fn update(&self, id: u64, baseline: &Baseline, restart: &Restart, by: By) -> Result<Outcome, String> {
        let report = self.power.firmware(id).await.map_err(|e| e.to_string());
        let report = self.or_failed(id, None, by, report).await?;
        let before = baseline::drift(baseline, Some(&report));
        let todo: Vec<ComponentDrift> = before.drifting().cloned().collect();
        for c in &todo {
            self.flash(id, c, by).await?;
        }
        if todo.is_empty() {
            let outcome = Outcome { flashed: vec![], drift: before, restarted_ms: None, pending: false };
            self.note(id, EventKind::FirmwareUpdated, self.summary(&outcome, by)).await;
            return Ok(outcome);
        }
        let flashed: Vec<Component> = todo.iter().map(|c| c.component).collect();
        let deadline = tokio::time::Instant::now() + self.cfg.update_timeout;
        let mut restarted_ms = None;
        loop {
            let read = self.power.firmware(id).await;
            match read {
                Ok(report) => {
                    let drift = baseline::drift(baseline, Some(&report));
                    let left: Vec<&ComponentDrift> = drift
                        .components
                        .iter()
                        .filter(|c| flashed.contains(&c.component))
                        .filter(|c| c.standing != Standing::Current)
                        .collect();
                    let host_waits = left.iter().any(|c| c.component != Component::Bmc);
                    let may_restart = !matches!(restart, Restart::Never);
                    if left.is_empty() || (host_waits && restarted_ms.is_none() && !may_restart) {
                        let pending = !left.is_empty();
                        let outcome = Outcome { flashed, drift, restarted_ms, pending };
                        self.note(id, EventKind::FirmwareUpdated, self.summary(&outcome, by)).await;
                        return Ok(outcome);
                    }
                    if host_waits && restarted_ms.is_none() {
                        let at = now_ms();
                        let done = match restart {
                            Restart::With(f) => f(id).await,
                            _ => self.restart(id).await.map_err(|e| e.to_string()),
                        };
                        match done {
                            Ok(true) => restarted_ms = Some(at),
                            Ok(false) => {
                                // Off: the new firmware takes over at its next start.
                                let outcome = Outcome { flashed, drift, restarted_ms, pending: true };
                                self.note(id, EventKind::FirmwareUpdated, self.summary(&outcome, by)).await;
                                return Ok(outcome);
                            }
                            Err(e) => {
                                return self.failed(id, None, by, format!("restarting after the update: {e}")).await
                            }
                        }
                    } else if tokio::time::Instant::now() >= deadline {
                        let now: Vec<String> = left.iter().map(|c| describe(c)).collect();
                        let why = format!("after the update the BMC reports {}", now.join(", "));
                        return self.failed(id, None, by, why).await;
                    }
                }
                // The BMC restarts after its own update: unreachable for a while.
                Err(e) if e.transient() && tokio::time::Instant::now() < deadline => {}
                Err(e) => return self.failed(id, None, by, format!("reading the versions back: {e}")).await,
            }
            tokio::time::sleep(READ_BACK_EVERY).await;
        }
    }

    /// Flashes one component: the entries that are not at the version (the system, for a BIOS
    /// known only by the system's `BiosVersion`).
    async fn flash(&self, id: u64, c: &ComponentDrift, by: By) -> Result<(), String> {
        let component = c.component.as_str();
        if !self.images.has(&c.image) {
            let why = format!("the image {} is not uploaded", c.image);
            return self.failed(id, Some(component), by, why).await;
        }
        let targets: Vec<String> = c
            .found
            .iter()
            .filter(|f| !f.version.as_deref().is_some_and(|v| baseline::same_version(v, &c.wanted)))
            .filter_map(|f| f.path.clone())
            .collect();
        let url = self.image_url(&c.image);
        let detail = json!({"component": component, "version": c.wanted, "image": c.image, "targets": targets, "by": by.as_str()});
        self.note(id, EventKind::FirmwareUpdating, detail).await;
        // Progress goes to the timeline in order, from the BMC call's callback.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<serde_json::Value>();
        let cmdb = self.cmdb.clone();
        let forward = tokio::spawn(async move {
            while let Some(detail) = rx.recv().await {
                let _ = cmdb.note_event(id, EventKind::FirmwareProgress, detail).await;
            }
        });
        let mut progress = move |p: crate::bmc::redfish::update::Progress| {
            let _ =
                tx.send(json!({"component": component, "state": p.state, "percent": p.percent, "message": p.message}));
        };
        let file = self.images.path(&c.image).unwrap_or_default();
        let image = crate::bmc::redfish::update::Image { url: &url, file: &file, transfer: self.cfg.transfer };
        let result = self.power.firmware_update(id, &image, &targets, self.cfg.update_timeout, &mut progress).await;
        drop(progress);
        let _ = forward.await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => self.failed(id, Some(component), by, e.to_string()).await,
        }
    }

    /// Restarts machine `id` if it is on (`false`: it is off, left so).
    async fn restart(&self, id: u64) -> Result<bool, PowerError> {
        let uefi = !matches!(self.cmdb.bmc(id).await?.and_then(|b| b.boot_mode), Some(crate::bmc::BootMode::Legacy));
        let state = self.power.act(id, PowerAction::Status, uefi, Caller::Operator).await?.state;
        if state != PowerState::On {
            return Ok(false);
        }
        self.power.act(id, PowerAction::Cycle, uefi, Caller::Operator).await?;
        Ok(true)
    }

    fn summary(&self, o: &Outcome, by: By) -> serde_json::Value {
        let components: Vec<&str> = o.flashed.iter().map(|c| c.as_str()).collect();
        json!({"components": components, "standing": o.drift.standing, "restarted": o.restarted_ms.is_some(),
            "pending": o.pending, "by": by.as_str(), "at_ms": now_ms()})
    }

    async fn note(&self, id: u64, kind: EventKind, detail: serde_json::Value) {
        if let Err(e) = self.cmdb.note_event(id, kind, detail).await {
            tracing::warn!(machine = id, error = %e, "a firmware event was not recorded");
        }
    }

    async fn failed<T>(&self, id: u64, component: Option<&str>, by: By, why: String) -> Result<T, String> {
        self.note(id, EventKind::FirmwareFailed, json!({"component": component, "error": why, "by": by.as_str()}))
            .await;
        Err(why)
    }

    async fn or_failed<T>(&self, id: u64, component: Option<&str>, by: By, r: Result<T, String>) -> Result<T, String> {
        match r {
            Ok(v) => Ok(v),
            Err(why) => self.failed(id, component, by, why).await,
        }
    }
}

/// A component as the BMC reports it (`bios at 1.0.0, wanted 1.1.0`).
fn describe(c: &ComponentDrift) -> String {
    let found: Vec<&str> = c.found.iter().map(|f| f.version.as_deref().unwrap_or("no version")).collect();
    match found.is_empty() {
        true => format!("no {} entry (wanted {})", c.component.as_str(), c.wanted),
        false => format!("{} at {} (wanted {})", c.component.as_str(), found.join("/"), c.wanted),
    }
}
