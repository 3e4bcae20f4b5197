//! The CMDB: one redb file holding machines, leases, the per-machine event timeline, agents,
//! jobs, provisioning, users with their tokens, and the audit log.
//!
//! [`Cmdb`] is a cheap `Clone` handle. Reads run on the blocking pool; every write goes through
//! one writer thread that batches queued writes into group commits (see `writer`).

mod agents;
mod audit;
pub mod backup;
mod blobs;
mod bmcs;
mod cascade;
pub mod copy;
mod estate;
mod events;
mod fold;
mod follow;
pub mod health;
mod index;
mod jobs;
pub use rackboot_kv as kv;
mod leases;
mod leases6;
mod machines;
pub use rackboot_model::records as model;
mod network;
mod nonces;
mod open;
mod plugins;
mod profiles;
mod provision;
pub mod quarantine;
mod racks;
mod schema;
mod store;
mod tasks;
pub use schema::open_file;
pub mod tang;
mod templates;
mod tokens;
mod unclaimed;
pub mod userdata;
mod users;
pub mod webhooks;
mod whereabouts;
pub mod writer;

pub use estate::{beat as appliance_beats, ApplianceView, PairView, APPLIANCE_BEAT};

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use tokio::sync::oneshot;

pub use agents::{Admission, EnrollOutcome, Enrolled, PerMachine, MAX_MACHINE_MACS};
pub use audit::{AuditEntry, AuditFilter, Outcome};
pub use events::{EventFilter, EventKind, EVENTS_KEPT_PER_MACHINE};
pub use index::{Brief, DnsHosts};
pub use jobs::{JobFilter, StoredChunk};
pub use machines::{MachineFilter, MachinePage};
pub use model::{
    AgentRecord, AgentView, Event, InstallerBoot, Lease, LeaseState, Machine, MachinePatch, MachineState, NewMachine,
    Sighting, StoredProfile,
};
pub use nonces::{nonce_hash, NonceCheck};
pub use provision::{MachineUpdate, NewRun};
use store::WriteCtx;
pub use templates::TemplateOverride;
pub use tokens::{TokenCheck, TokenUse};
pub use unclaimed::{Growth, DEFAULT_CAP as DEFAULT_UNCLAIMED_CAP};
pub use users::{
    AuthError, Caller, Import, TokenRecord, TokenView, User, UserChange, UserView, MAX_SESSIONS_PER_USER,
    MAX_TOKENS_PER_USER,
};
pub use whereabouts::peer_v4;
use writer::{Completion, Job};

/// Jobs in one write batch at most on a shared (PostgreSQL) store.
const SHARED_BATCH: usize = 256;

/// Committed events a slow stream subscriber may fall behind by before it must re-read them
/// from the CMDB.
const EVENT_BACKLOG: usize = 4096;

pub use rackboot_kv::CmdbError;

/// Handle to the CMDB.
#[derive(Clone)]
pub struct Cmdb {
    inner: Arc<Inner>,
}

struct Inner {
    /// The open file and its fault (disk full): reopened by the writer when it clears.
    storage: Arc<health::Storage>,
    /// Records in the quarantine (undecodable at a start), until an admin clears it.
    quarantined: std::sync::atomic::AtomicU64,
    /// The CMDB file (snapshots copy it).
    path: PathBuf,
    index: Arc<RwLock<Index>>,
    tx: Option<tokio::sync::mpsc::Sender<writer::Queued>>,
    /// Queue depth, commit latency, shed writes and caught panics of the writer.
    stats: writer::WriterStats,
    changed: tokio::sync::watch::Receiver<u64>,
    /// Committed events, for the event stream.
    events: tokio::sync::broadcast::Sender<Arc<Event>>,
    writer: Option<std::thread::JoinHandle<()>>,
    /// Awaited writes queued: the writer does not linger while there is one.
    awaited: writer::Awaited,
    /// On a shared store: follows the other appliances' changes (see `follow`).
    follower: Option<follow::Running>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    /// This appliance's name in the change log and DHCP pairs: host name and a random suffix.
    appliance: String,
    /// When this appliance opened its CMDB (Unix seconds).
    started_at: u64,
    /// Where this appliance's API answers and the version it runs (set once it knows, see
    /// `estate`).
    announced: RwLock<(String, String)>,
    /// Addresses seen in DHCP requests another server answers (see `whereabouts`).
    seen: std::sync::Mutex<whereabouts::Seen>,
    /// The cap on unclaimed machines and its evictions.
    growth: Arc<Growth>,
    /// The racks as committed (see `racks`).
    racks: racks::RackCache,
    /// The provisioning networks rack address plans must lie in.
    networks: RwLock<Vec<ipnet::Ipv4Net>>,
    /// Firmware sightings waiting in the writer's queue, in all, per source and per MAC (see
    /// `Cmdb::record_firmware`).
    firmware_queued: Arc<leases::FirmwareBudget>,
    /// Bumped after each commit that made or revoked a token or changed or deleted a user.
    credentials: tokio::sync::watch::Sender<u64>,
}

use index::Index;

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the queue lets the writer finish and commit what is queued before we return.
        drop(self.tx.take());
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(f) = self.follower.take() {
            f.join();
        }
    }
}

impl Cmdb {
    /// Queues a write and waits until the batch holding it has committed.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut WriteCtx<'_>) -> Result<T, CmdbError> + Send + 'static,
    ) -> Result<T, CmdbError> {
        if let Some(refused) = self.inner.storage.refusal() {
            return Err(refused);
        }
        let (done_tx, done_rx) = oneshot::channel();
        let awaited = self.inner.awaited.enter();
        let job: Job = Box::new(move |ctx| {
            let _awaited = awaited;
            let out = f(ctx);
            let completion: Completion = Box::new(move |committed| {
                let _ = done_tx.send(committed.and(out));
            });
            completion
        });
        self.send(job).await?;
        done_rx.await.map_err(|_| self.dropped())?.map_err(|e| self.explained(e))
    }

    /// Why a queued write was dropped unrun: the storage's fault, or the writer is gone.
    fn dropped(&self) -> CmdbError {
        self.inner.storage.refusal().unwrap_or_else(|| CmdbError::Storage("cmdb writer stopped".into()))
    }

    /// A storage failure as the caller should see it: what it means and where (the data dir).
    fn explained(&self, e: CmdbError) -> CmdbError {
        match e {
            CmdbError::Unavailable(_) => self.inner.storage.refusal().unwrap_or(e),
            e => e,
        }
    }

    /// Queues a write without waiting for it; failures are logged by the writer. With the
    /// queue full the write is shed and counted (`rackboot_cmdb_writes_shed_total`): these are
    /// sightings, stats and last-use times, never something a caller was promised.
    fn write_detached(&self, f: impl FnOnce(&mut WriteCtx<'_>) -> Result<(), CmdbError> + Send + 'static) {
        self.write_detached_as(false, f)
    }

    /// [`Cmdb::write_detached`], behind every other write when `low` (see `writer::Queued`).
    fn write_detached_as(
        &self,
        low: bool,
        f: impl FnOnce(&mut WriteCtx<'_>) -> Result<(), CmdbError> + Send + 'static,
    ) {
        let job: Job = Box::new(move |ctx| {
            if let Err(error) = f(ctx) {
                tracing::warn!(%error, "cmdb write dropped");
            }
            Box::new(|_| {})
        });
        if self.inner.storage.fault().is_some() {
            self.inner.stats.shed.inc();
            return;
        }
        self.queue_detached(writer::Queued { job, low });
    }

    /// Queues a detached job, or sheds and counts it when the queue is full.
    fn queue_detached(&self, q: writer::Queued) {
        let tx = self.inner.tx.as_ref().expect("sender lives as long as the handle");
        match tx.try_send(q) {
            Ok(()) => {}
            Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => {
                self.inner.stats.shed.inc();
                tracing::debug!("cmdb write queue full; a detached write was shed");
            }
            Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => {
                tracing::warn!("cmdb writer stopped; write dropped")
            }
        }
    }

    /// Queues `job`, waiting while the queue is full (back-pressure on the caller).
    async fn send(&self, job: Job) -> Result<(), CmdbError> {
        let tx = self.inner.tx.as_ref().expect("sender lives as long as the handle");
        tx.send(writer::Queued::normal(job)).await.map_err(|_| CmdbError::Storage("cmdb writer stopped".into()))
    }

    /// Runs `f` on the PostgreSQL store from the blocking pool (its driver is waited on
    /// synchronously); `None` on the embedded store.
    async fn on_pg<T: Send + 'static>(
        &self,
        f: impl FnOnce(&kv::pg::Pg) -> Result<T, CmdbError> + Send + 'static,
    ) -> Result<Option<T>, CmdbError> {
        let kv::Db::Pg(pg) = self.inner.storage.db()? else { return Ok(None) };
        tokio::task::spawn_blocking(move || f(&pg).map(Some))
            .await
            .map_err(|e| CmdbError::Storage(format!("PostgreSQL call: {e}")))?
    }

    /// A beat of this appliance as `role` of DHCP pair `pair` (see `dhcp::pair`): how long ago
    /// the other member beat, and another appliance that beat in this role within
    /// `fresh_secs`, if one did (a misconfigured pair).
    pub async fn dhcp_pair_beat(
        &self,
        pair: &str,
        role: &str,
        active: bool,
        fresh_secs: f64,
    ) -> Result<(Option<f64>, Option<String>), CmdbError> {
        let (pair, role, me) = (pair.to_string(), role.to_string(), self.inner.appliance.clone());
        self.on_pg(move |pg| pg.pair_beat(&pair, &role, &me, active, fresh_secs))
            .await?
            .ok_or_else(|| CmdbError::Invalid("a DHCP pair needs the CMDB on PostgreSQL".into()))
    }

    /// Whether other appliances may share this CMDB (it is on PostgreSQL).
    pub fn shared(&self) -> bool {
        self.inner.storage.shared()
    }

    /// Why changes cannot be stored right now (the data disk is full, an I/O error), if so.
    pub fn storage_fault(&self) -> Option<String> {
        self.inner.storage.fault()
    }

    /// 1 while the CMDB file takes writes, 0 while it is faulted.
    pub fn storage_ok(&self) -> &prometheus_client::metrics::gauge::Gauge {
        &self.inner.storage.ok
    }

    /// Writes queued for the writer and not yet taken.
    pub fn write_backlog(&self) -> usize {
        self.inner.tx.as_ref().map_or(0, |tx| tx.max_capacity() - tx.capacity())
    }

    /// The writer's metrics (registered by the appliance's metrics).
    pub fn writer_stats(&self) -> &writer::WriterStats {
        &self.inner.stats
    }

    /// Runs a read on the blocking pool.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&kv::ReadTx) -> Result<T, CmdbError> + Send + 'static,
    ) -> Result<T, CmdbError> {
        let db = self.inner.storage.db()?;
        tokio::task::spawn_blocking(move || f(&db.begin_read()?))
            .await
            .map_err(|e| CmdbError::Storage(format!("read task: {e}")))?
    }

    /// The cap on unclaimed machines (set it from the config; read its eviction counter).
    pub fn growth(&self) -> &Growth {
        &self.inner.growth
    }

    /// Waits until every write queued before this call has committed.
    pub async fn flush(&self) -> Result<(), CmdbError> {
        self.write(|_| Ok(())).await
    }

    /// The indexed summary of the machine owning `mac`, without touching storage.
    pub fn brief_by_mac(&self, mac: rackboot_model::mac::Mac) -> Option<Brief> {
        self.inner.index.read().expect("index lock").by_mac(mac).cloned()
    }

    /// Machines per state, from the index (no storage read).
    pub fn count_by_state(&self) -> std::collections::HashMap<MachineState, usize> {
        self.inner.index.read().expect("index lock").count_by_state()
    }

    /// Machines per state and resource pool, from the index.
    pub fn count_by_state_and_pool(&self) -> std::collections::HashMap<(MachineState, String), usize> {
        self.inner.index.read().expect("index lock").count_by_state_and_pool()
    }

    /// The id of the machine holding a reservation for `ip`, without touching storage.
    pub fn reserved_owner(&self, ip: Ipv4Addr) -> Option<u64> {
        self.inner.index.read().expect("index lock").reserved_owner(ip)
    }

    /// Hostnames and addresses for DNS as of `now` (Unix seconds), from the index.
    pub fn dns_hosts(&self, now: u64) -> DnsHosts {
        let racks = racks::cached(&self.inner.racks);
        let held = racks.iter().flat_map(|r| r.held_names()).collect();
        self.inner.index.read().expect("index lock").dns_hosts(now, &held)
    }

    /// A receiver that changes after every commit that changed machines or leases.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changed.clone()
    }

    /// A receiver that changes after every commit of this appliance's that made or revoked a
    /// token (a login past the session cap deletes the oldest session) or changed or deleted a
    /// user: what open event streams check their credential again on.
    pub fn credential_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.credentials.subscribe()
    }
}

pub use rackboot_base::clock::{now_ms, now_secs};
