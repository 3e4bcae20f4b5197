//! The appliances of an estate. Each appliance on a shared store beats in `appliances` every
//! few seconds with where its API answers, and any of them lists them all (with which DHCP
//! pair each is in and whether it answers there). On the embedded store the estate is this
//! appliance.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Cmdb, CmdbError};

/// How often an appliance beats.
pub const APPLIANCE_BEAT: Duration = Duration::from_secs(5);
/// An appliance whose last beat is older than this is shown as not alive.
const ALIVE_SECS: f64 = 15.0;

/// One appliance of the estate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ApplianceView {
    /// Its name in the change log and DHCP pairs: host name and a random suffix per start.
    pub id: String,
    pub hostname: String,
    /// Where its API, UI and agents' endpoints answer.
    pub https_base: String,
    /// The rackboot version it runs.
    pub version: String,
    /// When it started (Unix seconds).
    pub started_at: u64,
    /// Seconds since its last beat (on the store's clock; 0 for the appliance answering).
    pub last_seen_secs: f64,
    /// It beat within the last 15 s.
    pub alive: bool,
    /// It is the appliance answering this call.
    pub this: bool,
    /// The DHCP pair it is a member of, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair: Option<PairView>,
}

/// An appliance's place in its DHCP pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PairView {
    pub name: String,
    /// `primary` or `standby`.
    pub role: String,
    /// It answers DHCP for the pair now.
    pub active: bool,
}

impl Cmdb {
    /// This appliance's id (see [`ApplianceView::id`]).
    pub fn appliance_id(&self) -> &str {
        &self.inner.appliance
    }

    /// Where this appliance's API answers and the version it runs (the binary's), for the list
    /// of appliances.
    pub fn announce(&self, https_base: &str, version: &str) {
        *self.inner.announced.write().expect("announced lock") = (https_base.to_string(), version.to_string());
    }

    fn https_base(&self) -> String {
        self.inner.announced.read().expect("announced lock").0.clone()
    }

    fn version(&self) -> String {
        self.inner.announced.read().expect("announced lock").1.clone()
    }

    /// Records in a shared store that this appliance is up and where it answers (a no-op on
    /// the embedded store).
    pub async fn appliance_beat(&self) -> Result<(), CmdbError> {
        let (id, base, started) = (self.inner.appliance.clone(), self.https_base(), self.inner.started_at);
        let version = self.version();
        self.on_pg(move |pg| pg.appliance_beat(&id, &super::open::hostname(), &base, &version, started as i64))
            .await
            .map(|_| ())
    }

    /// Every appliance of the estate (on the embedded store, this one).
    pub async fn appliances(&self) -> Result<Vec<ApplianceView>, CmdbError> {
        let me = self.inner.appliance.clone();
        let this = ApplianceView {
            id: me.clone(),
            hostname: super::open::hostname(),
            https_base: self.https_base(),
            version: self.version(),
            started_at: self.inner.started_at,
            last_seen_secs: 0.0,
            alive: true,
            this: true,
            pair: None,
        };
        let Some(rows) = self.on_pg(|pg| pg.appliances()).await? else { return Ok(vec![this]) };
        // Before its first beat, the appliance answering is listed all the same.
        let missing = !rows.iter().any(|r| r.id == me);
        let mut all: Vec<ApplianceView> = rows
            .into_iter()
            .map(|r| ApplianceView {
                this: r.id == me,
                alive: r.id == me || r.age_secs < ALIVE_SECS,
                last_seen_secs: if r.id == me { 0.0 } else { r.age_secs.max(0.0) },
                id: r.id,
                hostname: r.hostname,
                https_base: r.https_base,
                version: r.version,
                started_at: r.started_at.max(0) as u64,
                pair: r.pair.map(|(name, role, active)| PairView { name, role, active }),
            })
            .collect();
        if missing {
            all.insert(0, this);
        }
        Ok(all)
    }
}

/// Beats for this appliance every [`APPLIANCE_BEAT`] until `token` is cancelled (a shared
/// store; a failed beat is logged and the next one tries again).
pub async fn beat(cmdb: Cmdb, token: tokio_util::sync::CancellationToken) -> anyhow::Result<()> {
    let mut every = tokio::time::interval(APPLIANCE_BEAT);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = token.cancelled() => return Ok(()),
            _ = every.tick() => {}
        }
        if let Err(error) = cmdb.appliance_beat().await {
            tracing::warn!(%error, "recording this appliance in the shared store failed; retrying");
        }
    }
}
