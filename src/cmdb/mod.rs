//! The CMDB: one redb file holding machines, leases, the per-machine event timeline, agents,
//! jobs, provisioning, users with their tokens, and the audit log.
//!
//! [`Cmdb`] is a cheap `Clone` handle. Reads run on the blocking pool; every write goes through
//! one writer thread that batches queued writes into group commits (see `writer`).

mod agents;
mod audit;
mod cascade;
mod events;
mod index;
mod jobs;
mod machines;
pub mod model;
mod nonces;
mod profiles;
mod provision;
mod racks;
mod store;
mod unclaimed;
mod users;
mod whereabouts;
mod writer;

use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::{mpsc, Arc, RwLock};

use redb::{Database, ReadableDatabase};
use tokio::sync::oneshot;

pub use agents::{Admission, EnrollOutcome, Enrolled};
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
pub use unclaimed::{Growth, DEFAULT_CAP as DEFAULT_UNCLAIMED_CAP};
pub use users::{
    AuthError, Caller, Import, TokenRecord, TokenView, User, UserChange, UserView, MAX_SESSIONS_PER_USER,
    MAX_TOKENS_PER_USER,
};
pub use whereabouts::peer_v4;
use writer::{Completion, Job, WriteCtx};

/// Committed events a slow stream subscriber may fall behind by before it must re-read them
/// from the CMDB.
const EVENT_BACKLOG: usize = 4096;

/// Errors a caller can branch on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CmdbError {
    #[error("not found: {0}")]
    NotFound(String),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("invalid: {0}")]
    Invalid(String),
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("storage: {0}")]
    Storage(String),
}

/// Handle to the CMDB.
#[derive(Clone)]
pub struct Cmdb {
    inner: Arc<Inner>,
}

struct Inner {
    db: Arc<Database>,
    index: Arc<RwLock<Index>>,
    tx: Option<mpsc::Sender<Job>>,
    changed: tokio::sync::watch::Receiver<u64>,
    /// Committed events, for the event stream.
    events: tokio::sync::broadcast::Sender<Arc<Event>>,
    writer: Option<std::thread::JoinHandle<()>>,
    /// Addresses seen in DHCP requests another server answers (see `whereabouts`).
    seen: std::sync::Mutex<whereabouts::Seen>,
    /// The cap on unclaimed machines and its evictions.
    growth: Arc<Growth>,
    /// The racks as committed (see `racks`).
    racks: racks::RackCache,
    /// The provisioning networks rack address plans must lie in.
    networks: RwLock<Vec<ipnet::Ipv4Net>>,
}

use index::Index;

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the queue lets the writer finish and commit what is queued before we return.
        drop(self.tx.take());
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

impl Cmdb {
    /// Opens (creating or migrating) the CMDB file and starts its writer thread.
    pub fn open(path: &Path, commit_batch: usize) -> Result<Cmdb, CmdbError> {
        let db = Arc::new(store::open(path)?);
        let index = Arc::new(RwLock::new(Index::default()));
        let all: Vec<Machine> = {
            let rtx = db.begin_read()?;
            store::scan(&rtx.open_table(store::MACHINES)?)?
        };
        let leases: Vec<Lease> = {
            let rtx = db.begin_read()?;
            store::scan(&rtx.open_table(store::LEASES)?)?
        };
        let now = now_secs();
        let mut start: Vec<_> = all.iter().map(|m| index::Delta::Upsert(Brief::from(m))).collect();
        start.extend(
            leases
                .iter()
                .filter(|l| l.state == LeaseState::Active && l.expires_at > now)
                .map(|l| index::Delta::Lease(l.ip, Some(index::LeaseBrief::from(l)))),
        );
        index.write().expect("fresh lock").apply(start);
        let rack_cache = racks::load(&db)?;
        let (tx, rx) = mpsc::channel();
        let (changed_tx, changed) = tokio::sync::watch::channel(0);
        let (events, _) = tokio::sync::broadcast::channel(EVENT_BACKLOG);
        let writer = {
            let (db, index, events) = (db.clone(), index.clone(), events.clone());
            std::thread::Builder::new()
                .name("cmdb-writer".into())
                .spawn(move || writer::run(db, index, changed_tx, events, rx, commit_batch.max(1)))
                .map_err(|e| CmdbError::Storage(format!("spawning writer: {e}")))?
        };
        Ok(Cmdb {
            inner: Arc::new(Inner {
                db,
                index,
                tx: Some(tx),
                changed,
                events,
                writer: Some(writer),
                seen: Default::default(),
                growth: Arc::default(),
                racks: rack_cache,
                networks: RwLock::default(),
            }),
        })
    }

    /// Queues a write and waits until the batch holding it has committed.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut WriteCtx<'_>) -> Result<T, CmdbError> + Send + 'static,
    ) -> Result<T, CmdbError> {
        let (done_tx, done_rx) = oneshot::channel();
        let job: Job = Box::new(move |ctx| {
            let out = f(ctx);
            let completion: Completion = Box::new(move |committed| {
                let _ = done_tx.send(committed.and(out));
            });
            completion
        });
        self.send(job)?;
        done_rx.await.map_err(|_| CmdbError::Storage("cmdb writer stopped".into()))?
    }

    /// Queues a write without waiting for it; failures are logged by the writer.
    fn write_detached(&self, f: impl FnOnce(&mut WriteCtx<'_>) -> Result<(), CmdbError> + Send + 'static) {
        let job: Job = Box::new(move |ctx| {
            if let Err(error) = f(ctx) {
                tracing::warn!(%error, "cmdb write dropped");
            }
            Box::new(|_| {})
        });
        if let Err(error) = self.send(job) {
            tracing::warn!(%error, "cmdb write dropped");
        }
    }

    fn send(&self, job: Job) -> Result<(), CmdbError> {
        let tx = self.inner.tx.as_ref().expect("sender lives as long as the handle");
        tx.send(job).map_err(|_| CmdbError::Storage("cmdb writer stopped".into()))
    }

    /// Runs a read on the blocking pool.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&redb::ReadTransaction) -> Result<T, CmdbError> + Send + 'static,
    ) -> Result<T, CmdbError> {
        let db = self.inner.db.clone();
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
    pub fn brief_by_mac(&self, mac: crate::mac::Mac) -> Option<Brief> {
        self.inner.index.read().expect("index lock").by_mac(mac).cloned()
    }

    /// The id of the machine holding a reservation for `ip`, without touching storage.
    pub fn reserved_owner(&self, ip: Ipv4Addr) -> Option<u64> {
        self.inner.index.read().expect("index lock").reserved_owner(ip)
    }

    /// Hostnames and addresses for DNS as of `now` (Unix seconds), from the index.
    pub fn dns_hosts(&self, now: u64) -> DnsHosts {
        self.inner.index.read().expect("index lock").dns_hosts(now)
    }

    /// A receiver that changes after every commit that changed machines or leases.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changed.clone()
    }

    /// Leases in address order above `after`, at most `limit`, with the address the next page
    /// starts after (`None` on the last page).
    pub async fn lease_page(
        &self,
        after: Option<Ipv4Addr>,
        limit: usize,
    ) -> Result<(Vec<Lease>, Option<Ipv4Addr>), CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(store::LEASES)?;
            let (mut out, mut next) = (Vec::new(), None);
            for row in t.range(after.map_or(0, |a| u32::from(a).saturating_add(1))..)? {
                if out.len() >= limit {
                    next = out.last().map(|l: &Lease| l.ip);
                    break;
                }
                out.push(store::decode(row?.1.value())?);
            }
            Ok((out, next))
        })
        .await
    }

    /// All leases as stored (the DHCP server loads them at start).
    pub async fn leases(&self) -> Result<Vec<Lease>, CmdbError> {
        self.read(|rtx| store::scan(&rtx.open_table(store::LEASES)?)).await
    }

    /// Persists a lease change together with what was learned from the packet, and waits for the
    /// commit: a DHCPACK is only sent once its lease is durable.
    pub async fn commit_lease(
        &self,
        lease: Lease,
        sighting: Sighting,
        events: Vec<(EventKind, serde_json::Value)>,
    ) -> Result<(), CmdbError> {
        let (growth, cache) = (self.inner.growth.clone(), self.inner.racks.clone());
        self.write(move |ctx| {
            // observe can fail on a bad record; put_lease only on storage errors, which fail the
            // whole batch anyway. In this order a refused ACK never leaves a committed lease.
            machines::observe(ctx, &sighting, events, &growth)?;
            racks::place_sighted(ctx, &cache, &sighting)?;
            machines::put_lease(ctx, &lease)
        })
        .await
    }

    /// Records an event for whichever machine holds a lease on `ip`; returns whether one did.
    pub fn record_for_ip(&self, ip: Ipv4Addr, kind: EventKind, detail: serde_json::Value) -> bool {
        let mac = self.inner.index.read().expect("index lock").leased_to(ip);
        if let Some(mac) = mac {
            self.record(Sighting { mac: Some(mac), ..Default::default() }, vec![(kind, detail)]);
        }
        mac.is_some()
    }

    /// Records a sighting and timeline events without waiting (the OFFER path).
    pub fn record(&self, sighting: Sighting, events: Vec<(EventKind, serde_json::Value)>) {
        let (growth, cache) = (self.inner.growth.clone(), self.inner.racks.clone());
        self.write_detached(move |ctx| {
            machines::observe(ctx, &sighting, events, &growth)?;
            racks::place_sighted(ctx, &cache, &sighting)
        });
    }
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
