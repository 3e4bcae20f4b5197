//! Opening the CMDB: the embedded file or PostgreSQL, the quarantine sweep, the in-memory index
//! and rack cache, the follower of the other appliances (shared store) and the writer thread.

use std::path::Path;
use std::sync::{Arc, RwLock};

use super::*;

impl Cmdb {
    /// Opens (creating or migrating) the CMDB file and starts its writer thread.
    pub fn open(path: &Path, commit_batch: usize) -> Result<Cmdb, CmdbError> {
        Self::open_on(path, None, commit_batch)
    }

    /// Opens the CMDB on PostgreSQL when `pg` is given (connecting, migrating its schema),
    /// else the file at `path`, and starts the writer thread.
    pub fn open_on(path: &Path, pg: Option<&kv::PgConfig>, commit_batch: usize) -> Result<Cmdb, CmdbError> {
        let Some(cfg) = pg else {
            return Self::start(path, kv::Db::Redb(Arc::new(schema::open(path)?)), commit_batch);
        };
        // The PostgreSQL driver is waited on synchronously, which an async context forbids:
        // the opening runs on a thread of its own.
        std::thread::scope(|s| {
            s.spawn(|| Self::start(path, kv::Db::Pg(kv::pg::Pg::connect(cfg)?), commit_batch))
                .join()
                .unwrap_or_else(|_| Err(CmdbError::Storage("opening the PostgreSQL store panicked".into())))
        })
    }

    /// A CMDB for a unit test: on the PostgreSQL named by `RACKBOOT_TEST_POSTGRES` (a fresh
    /// schema each time) when it is set, so the same tests run against both stores.
    #[doc(hidden)]
    pub fn open_for_test(path: &Path, commit_batch: usize) -> Result<Cmdb, CmdbError> {
        match kv::pg::test_config() {
            Some(cfg) => Self::open_on(path, Some(&cfg), commit_batch),
            None => Self::open(path, commit_batch),
        }
    }

    fn start(path: &Path, db: kv::Db, commit_batch: usize) -> Result<Cmdb, CmdbError> {
        // Undecodable records go to the quarantine rather than stop the start. Not on a shared
        // store: PostgreSQL checks every record is JSON, and an appliance of an older version
        // must not take away records a newer one wrote for the whole estate.
        let moved = if db.shared() { Vec::new() } else { quarantine::sweep(&db)? };
        for q in &moved {
            tracing::error!(table = %q.table, key = q.key, bytes = q.bytes, error = %q.error,
                "cmdb record does not decode: moved to the quarantine (GET /api/v1/quarantine)");
        }
        let quarantined = quarantine::count(&db)?;
        // Sharing the store: the change log is followed from here, so nothing another appliance
        // commits while this one loads is missed (re-applying what it already read is harmless).
        let followed = match &db {
            kv::Db::Pg(pg) => Some(pg.newest_change()?),
            kv::Db::Redb(_) => None,
        };
        let index = Arc::new(RwLock::new(Index::default()));
        index.write().expect("fresh lock").apply(follow::everything(&db, now_secs())?);
        let rack_cache = racks::load(&db)?;
        let (tx, rx) = tokio::sync::mpsc::channel(writer::QUEUE_CAP);
        let (events, _) = tokio::sync::broadcast::channel(EVENT_BACKLOG);
        let (changed_tx, changed) = tokio::sync::watch::channel(0);
        let changed_tx = Arc::new(changed_tx);
        let appliance = format!("{}-{:08x}", hostname(), getrandom::u32().unwrap_or_default());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let own = follow::OwnEvents::default();
        let follower = match (&db, followed) {
            (kv::Db::Pg(pg), Some(last)) => Some(
                follow::Follower {
                    own: own.clone(),
                    pg: pg.clone(),
                    db: db.clone(),
                    appliance: appliance.clone(),
                    index: index.clone(),
                    racks: rack_cache.clone(),
                    changed: changed_tx.clone(),
                    events: events.clone(),
                    last,
                    stop: stop.clone(),
                }
                .start()
                .map_err(|e| CmdbError::Storage(format!("spawning the follower: {e}")))?,
            ),
            _ => None,
        };
        let counters = writer::read_counters(&db)?;
        let stats = writer::WriterStats::default();
        let awaited = writer::Awaited::default();
        let storage = health::Storage::new(path, db);
        let writer = {
            let (storage, index, events, stats) = (storage.clone(), index.clone(), events.clone(), stats.clone());
            // A PostgreSQL batch costs round trips per job: a smaller one keeps its ACKs' wait
            // for the commit under client timeouts when the writer is saturated.
            let batch = if storage.shared() { commit_batch.clamp(1, SHARED_BATCH) } else { commit_batch.max(1) };
            let appliance = appliance.clone();
            let own = own.clone();
            let awaited = awaited.clone();
            let w =
                writer::Writer { storage, index, changed: changed_tx, events, stats, batch, appliance, own, awaited };
            std::thread::Builder::new()
                .name("cmdb-writer".into())
                .spawn(move || w.run(rx, counters))
                .map_err(|e| CmdbError::Storage(format!("spawning writer: {e}")))?
        };
        let cmdb = Cmdb {
            inner: Arc::new(Inner {
                storage,
                quarantined: quarantined.into(),
                path: path.to_path_buf(),
                index,
                tx: Some(tx),
                stats,
                changed,
                events,
                writer: Some(writer),
                follower,
                stop,
                appliance,
                started_at: now_secs(),
                announced: RwLock::default(),
                seen: Default::default(),
                growth: Arc::default(),
                racks: rack_cache,
                networks: RwLock::default(),
                firmware_queued: Arc::default(),
                credentials: tokio::sync::watch::channel(0).0,
                awaited,
            }),
        };
        if !moved.is_empty() {
            cmdb.write_detached(move |ctx| {
                for q in moved {
                    let detail =
                        serde_json::json!({"table": q.table, "key": q.key, "bytes": q.bytes, "error": q.error});
                    events::push_event(ctx, 0, EventKind::CmdbQuarantined, detail)?;
                }
                Ok(())
            });
        }
        Ok(cmdb)
    }
}

/// This machine's name, for the change log of a shared store.
pub(super) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "rackboot".into())
}
