//! The power service: runs power actions on machines' BMCs with at most one command per BMC
//! at a time and `bmc.max_concurrent` over all of them, inside `bmc.action_deadline_secs`;
//! records each action's outcome (power reading, timeline event); holds off a BMC that refused
//! the credentials; and refreshes every BMC's power state every `bmc.refresh_interval_secs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use super::actions::{perform, Pace};
use super::driver::{Driver, Settings};
use super::model::{Bmc, PowerAction, PowerReading, PowerState};
use super::BmcError;
use crate::cmdb::{now_ms, Cmdb, CmdbError, EventKind};
use crate::config::BmcConfig;
use crate::secrets::Sealer;
use rackboot_model::firmware::FirmwareReport;

/// Why a power action did not happen or failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PowerError {
    #[error("machine {0} has no BMC")]
    NoBmc(u64),
    #[error(transparent)]
    Cmdb(#[from] CmdbError),
    #[error("the stored BMC password does not open ({0}); set the BMC again")]
    Sealed(String),
    #[error("{action} on machine {machine}: {error}")]
    Bmc { machine: u64, action: &'static str, error: BmcError },
}

/// What a verified power action found.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PowerOutcome {
    pub machine_id: u64,
    pub action: PowerAction,
    /// The power state read back at the end.
    pub state: PowerState,
    /// Requests sent to the BMC, retries and read-backs included.
    pub attempts: u32,
    /// Set when the direct way failed and another was taken (e.g. off + on for a restart).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// The boot override read back (Redfish `pxe-once`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_mode: Option<String>,
    pub ms: u64,
}

/// Who asked (an event's `by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    Operator,
    Provision,
    /// The periodic refresh: no event, only the reading.
    Refresh,
}

/// The power service handle.
pub struct Power {
    cfg: BmcConfig,
    cmdb: Cmdb,
    sealer: Arc<Sealer>,
    ca_pem: String,
    global: Semaphore,
    /// One lock per BMC address, dropped when nobody holds or waits for it.
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Machines whose BMC refused the credentials: the record's version then, and when.
    refused: Mutex<HashMap<u64, (String, Instant)>>,
}

impl Power {
    /// A power service over `cmdb`'s BMCs; `ca_pem` is the appliance CA (Redfish `ca` policy).
    pub fn new(cfg: BmcConfig, cmdb: Cmdb, sealer: Arc<Sealer>, ca_pem: String) -> Power {
        let global = Semaphore::new(cfg.max_concurrent);
        Power { cfg, cmdb, sealer, ca_pem, global, locks: Mutex::default(), refused: Mutex::default() }
    }

    /// The `[bmc]` settings it runs with.
    pub fn config(&self) -> &BmcConfig {
        &self.cfg
    }

    /// Seals a BMC password for machine `id`.
    pub fn seal(&self, id: u64, password: &str) -> Result<String, crate::secrets::SealError> {
        self.sealer.seal(password.as_bytes(), &Bmc::seal_binding(id))
    }

    /// Runs `action` on machine `id`'s BMC and verifies it; records the outcome.
    pub async fn act(&self, id: u64, action: PowerAction, uefi: bool, by: Caller) -> Result<PowerOutcome, PowerError> {
        let bmc = self.cmdb.bmc(id).await?.ok_or(PowerError::NoBmc(id))?;
        let fail = |error| PowerError::Bmc { machine: id, action: action.as_str(), error };
        if let Some(why) = self.held(&bmc) {
            return Err(fail(BmcError::Auth(why)));
        }
        let password = self.password(&bmc)?;

        let lock = self.lock_for(&bmc.address);
        let guard = lock.lock().await;
        // An action queued behind one that was just refused does not try again.
        if let Some(why) = self.held(&bmc) {
            drop(guard);
            drop(lock);
            self.unlock_unused(&bmc.address);
            return Err(fail(BmcError::Auth(why)));
        }
        let permit = self.global.acquire().await.expect("the semaphore is never closed");
        let started = Instant::now();
        let result = tokio::time::timeout(self.cfg.action_deadline, self.run(&bmc, &password, action, uefi))
            .await
            .unwrap_or(Err(BmcError::Timeout(self.cfg.action_deadline)));
        drop(permit);
        drop(guard);
        drop(lock);
        self.unlock_unused(&bmc.address);

        let ms = started.elapsed().as_millis() as u64;
        let by_name = match by {
            Caller::Operator => "operator",
            Caller::Provision => "provision",
            Caller::Refresh => "refresh",
        };
        match result {
            Ok(done) => {
                let state = done.state.unwrap_or(PowerState::Unknown);
                let reading = PowerReading { state, at_ms: now_ms(), error: None };
                let event = (by != Caller::Refresh).then(|| {
                    let detail = json!({"action": action, "state": state, "uefi": uefi, "attempts": done.attempts,
                        "fallback": done.fallback, "ms": ms, "by": by_name});
                    (EventKind::PowerAction, detail)
                });
                self.cmdb.record_power(id, bmc.password_sealed.clone(), reading, event).await?;
                Ok(PowerOutcome {
                    machine_id: id,
                    action,
                    state,
                    attempts: done.attempts,
                    fallback: done.fallback,
                    boot_target: done.boot.as_ref().and_then(|b| b.target.clone()),
                    boot_mode: done.boot.and_then(|b| b.mode),
                    ms,
                })
            }
            Err(error) => {
                if matches!(error, BmcError::Auth(_)) {
                    self.refused.lock().expect("refused lock").insert(id, (version(&bmc), Instant::now()));
                }
                tracing::warn!(machine = id, action = action.as_str(), %error, "power action failed");
                let reading =
                    PowerReading { state: PowerState::Unknown, at_ms: now_ms(), error: Some(error.to_string()) };
                let detail = json!({"action": action, "error": error.to_string(), "kind": error.kind(), "ms": ms, "by": by_name});
                let event = (by != Caller::Refresh).then_some((EventKind::PowerFailed, detail));
                self.cmdb.record_power(id, bmc.password_sealed.clone(), reading, event).await?;
                Err(fail(error))
            }
        }
    }

    /// Reads machine `id`'s firmware through its BMC (Redfish), under the same one-at-a-time
    /// lock, global cap, deadline and credential hold as power actions, and keeps the report on
    /// the BMC record.
    pub async fn firmware(&self, id: u64) -> Result<FirmwareReport, PowerError> {
        let (bmc, report) = self.with_driver(id, "firmware", |d| async move { d.firmware(now_ms()).await }).await?;
        self.cmdb.record_bmc_firmware(id, bmc.password_sealed.clone(), report.clone()).await?;
        Ok(report)
    }

    /// Runs `f` on machine `id`'s connected BMC under the same one-at-a-time lock, global cap,
    /// deadline and credential hold as power actions (a refusal of the credentials holds the
    /// BMC off); returns the record it used with `f`'s result.
    pub(super) async fn with_driver<T, Fut>(
        &self,
        id: u64,
        what: &'static str,
        f: impl FnOnce(Arc<Driver>) -> Fut,
    ) -> Result<(Bmc, T), PowerError>
    where
        Fut: std::future::Future<Output = Result<T, BmcError>>,
    {
        self.with_driver_for(id, what, self.cfg.action_deadline, f).await
    }

    /// [`Power::with_driver`] with another deadline (a firmware flash takes longer than a power
    /// action; the lock keeps power actions off the machine meanwhile).
    pub(super) async fn with_driver_for<T, Fut>(
        &self,
        id: u64,
        what: &'static str,
        deadline: std::time::Duration,
        f: impl FnOnce(Arc<Driver>) -> Fut,
    ) -> Result<(Bmc, T), PowerError>
    where
        Fut: std::future::Future<Output = Result<T, BmcError>>,
    {
        let bmc = self.cmdb.bmc(id).await?.ok_or(PowerError::NoBmc(id))?;
        let fail = |error| PowerError::Bmc { machine: id, action: what, error };
        if let Some(why) = self.held(&bmc) {
            return Err(fail(BmcError::Auth(why)));
        }
        let password = self.password(&bmc)?;
        let lock = self.lock_for(&bmc.address);
        let guard = lock.lock().await;
        let result = match self.held(&bmc) {
            // A call queued behind one that was just refused does not try again.
            Some(why) => Err(BmcError::Auth(why)),
            None => {
                let permit = self.global.acquire().await.expect("the semaphore is never closed");
                let work = async {
                    let driver = Arc::new(Driver::open(&bmc, &password, &self.settings()).await?);
                    let result = f(driver.clone()).await;
                    if let Ok(d) = Arc::try_unwrap(driver) {
                        d.close().await;
                    }
                    result
                };
                let result = tokio::time::timeout(deadline, work).await.unwrap_or(Err(BmcError::Timeout(deadline)));
                drop(permit);
                if matches!(result, Err(BmcError::Auth(_))) {
                    self.refused.lock().expect("refused lock").insert(id, (version(&bmc), Instant::now()));
                }
                result
            }
        };
        drop(guard);
        drop(lock);
        self.unlock_unused(&bmc.address);
        result.map(|v| (bmc, v)).map_err(fail)
    }

    /// The BMC's password, opened.
    fn password(&self, bmc: &Bmc) -> Result<String, PowerError> {
        let plain = self
            .sealer
            .open(&bmc.password_sealed, &Bmc::seal_binding(bmc.machine_id))
            .map_err(|e| PowerError::Sealed(e.to_string()))?;
        String::from_utf8(plain).map_err(|_| PowerError::Sealed("not UTF-8".into()))
    }

    fn settings(&self) -> Settings {
        Settings {
            timeout: self.cfg.request_timeout,
            tls: tls_for(self.ca_pem.clone()),
            ipmitool: self.cfg.ipmitool.clone(),
            cipher_suite: self.cfg.ipmi_cipher_suite,
        }
    }

    async fn run(
        &self,
        bmc: &Bmc,
        password: &str,
        action: PowerAction,
        uefi: bool,
    ) -> Result<super::actions::Done, BmcError> {
        let settings = self.settings();
        let pace = Pace {
            retries: self.cfg.retries,
            backoff: self.cfg.retry_backoff,
            poll: self.cfg.poll_interval,
            soft_off: self.cfg.soft_off_timeout,
            deadline: tokio::time::Instant::now() + self.cfg.action_deadline,
        };
        // Connecting is retried like any request (a BMC busy with its web UI drops some).
        let mut tries = 0;
        let driver = loop {
            match Driver::open(bmc, password, &settings).await {
                Err(e) if e.transient() && tries < pace.retries => {
                    tokio::time::sleep(pace.backoff * 2u32.pow(tries)).await;
                    tries += 1;
                }
                other => break other?,
            }
        };
        let result = perform(&driver, action, uefi, &pace).await;
        driver.close().await;
        result.map(|mut d| {
            d.attempts += tries + 1;
            d
        })
    }

    /// How many BMCs are held off now because they refused their credentials lately.
    pub fn auth_holds(&self) -> usize {
        let refused = self.refused.lock().expect("refused lock");
        refused.values().filter(|(_, at)| at.elapsed() < self.cfg.auth_hold).count()
    }

    /// Why machine `bmc`'s BMC is not tried now (it refused these credentials lately).
    fn held(&self, bmc: &Bmc) -> Option<String> {
        let mut refused = self.refused.lock().expect("refused lock");
        match refused.get(&bmc.machine_id) {
            Some((v, at)) if *v == version(bmc) && at.elapsed() < self.cfg.auth_hold => Some(format!(
                "refused these credentials {}s ago; not tried again for {}s (bmc.auth_hold_secs) unless the BMC record changes",
                at.elapsed().as_secs(),
                self.cfg.auth_hold.saturating_sub(at.elapsed()).as_secs()
            )),
            Some(_) => {
                refused.remove(&bmc.machine_id);
                None
            }
            None => None,
        }
    }

    fn lock_for(&self, address: &str) -> Arc<tokio::sync::Mutex<()>> {
        let key = address.to_ascii_lowercase();
        self.locks.lock().expect("locks lock").entry(key).or_default().clone()
    }

    fn unlock_unused(&self, address: &str) {
        let key = address.to_ascii_lowercase();
        let mut locks = self.locks.lock().expect("locks lock");
        if locks.get(&key).is_some_and(|l| Arc::strong_count(l) == 1) {
            locks.remove(&key);
        }
    }
}

/// Which version of a BMC record was refused: any PUT (a new password, user or address) makes
/// a new one.
fn version(b: &Bmc) -> String {
    format!("{}@{}", b.password_sealed, b.updated_at)
}

/// The power-state refresh: every `bmc.refresh_interval_secs`, reads every BMC's state (under
/// the same caps as actions) and stores it with its time. A BMC still being read from the last
/// round is skipped, so one dead BMC never holds up the others. Runs until `shutdown`.
pub async fn serve(power: Arc<Power>, shutdown: CancellationToken) -> anyhow::Result<()> {
    let Some(every) = power.cfg.refresh_interval else {
        shutdown.cancelled().await;
        return Ok(());
    };
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Dropped at shutdown, which aborts the reads still running.
    let mut reads = tokio::task::JoinSet::new();
    let busy: Arc<Mutex<std::collections::HashSet<u64>>> = Arc::default();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
        }
        while reads.try_join_next().is_some() {}
        let bmcs = match power.cmdb.bmcs().await {
            Ok(b) => b,
            Err(error) => {
                tracing::warn!(%error, "power refresh: reading the BMCs failed");
                continue;
            }
        };
        for b in bmcs {
            // A held BMC (refused credentials) is skipped; so is one still being read.
            if power.held(&b).is_some() || !busy.lock().expect("busy lock").insert(b.machine_id) {
                continue;
            }
            let (power, busy) = (power.clone(), busy.clone());
            reads.spawn(async move {
                // Failures are stored on the record (and logged).
                let _ = power.act(b.machine_id, PowerAction::Status, false, Caller::Refresh).await;
                busy.lock().expect("busy lock").remove(&b.machine_id);
            });
        }
    }
}

/// The TLS client config for a Redfish BMC's policy: a pinned certificate (SHA-256 of its DER,
/// signatures still checked), the appliance CA, or anything (`insecure`).
fn tls_for(ca_pem: String) -> crate::bmc::driver::TlsFor {
    Arc::new(move |policy: &crate::bmc::TlsPolicy| match policy {
        crate::bmc::TlsPolicy::Ca => crate::tls::client_config(ca_pem.as_bytes()),
        crate::bmc::TlsPolicy::Fingerprint { sha256 } => {
            crate::tls::pinned::client_config(Some(sha256.clone()), "the BMC")
        }
        crate::bmc::TlsPolicy::Insecure => crate::tls::pinned::client_config(None, "the BMC"),
    })
}
