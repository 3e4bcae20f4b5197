//! The CMDB file's health. When a write cannot be made durable (the data disk is full, an I/O
//! error), redb refuses every later write until the file is reopened. Here that becomes a
//! *fault*: writes are refused at once with [`CmdbError::Unavailable`] naming the data dir
//! (API 503, DHCP withholds its ACK), `/healthz` says so, reads keep working on the open
//! file, and the writer reopens the file by itself once there is room again.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use redb::Database;

use super::kv::Db;

use super::CmdbError;

/// Free space the data dir needs before the file is reopened (redb grows the file in steps).
const ROOM_NEEDED: u64 = 16 << 20;
/// How often a faulted writer looks for room again.
const RETRY_EVERY: Duration = Duration::from_secs(1);

/// The open database and its fault, shared by readers and the writer.
pub struct Storage {
    path: PathBuf,
    /// `None` only while the file is being reopened.
    db: RwLock<Option<Db>>,
    /// A shared store's name (PostgreSQL host and database), for messages.
    remote: Option<String>,
    fault: Mutex<Option<Fault>>,
    /// Whether `fault` is set: every write asks, and while healthy it takes no lock.
    faulted: AtomicBool,
    /// 1 while healthy, 0 while faulted (`rackboot_cmdb_storage_ok`).
    pub ok: prometheus_client::metrics::gauge::Gauge,
}

struct Fault {
    reason: String,
    last_try: Instant,
}

impl Storage {
    pub fn new(path: &Path, db: Db) -> Arc<Storage> {
        let ok = prometheus_client::metrics::gauge::Gauge::default();
        ok.set(1);
        Arc::new(Storage {
            path: path.to_path_buf(),
            remote: match &db {
                Db::Pg(pg) => Some(pg.label.clone()),
                Db::Redb(_) => None,
            },
            db: RwLock::new(Some(db)),
            fault: Mutex::new(None),
            faulted: AtomicBool::new(false),
            ok,
        })
    }

    /// Whether other appliances share the store (PostgreSQL).
    pub fn shared(&self) -> bool {
        self.remote.is_some()
    }

    /// The open database.
    pub fn db(&self) -> Result<Db, CmdbError> {
        self.db.read().expect("storage lock").clone().ok_or_else(|| self.unavailable("it is being reopened"))
    }

    /// Why writes are refused, if they are.
    pub fn fault(&self) -> Option<String> {
        if !self.faulted.load(Ordering::Acquire) {
            return None;
        }
        self.fault.lock().expect("fault lock").as_ref().map(|f| f.reason.clone())
    }

    /// The refusal a write gets while the storage is faulted.
    pub fn refusal(&self) -> Option<CmdbError> {
        self.fault().map(|reason| self.unavailable(&reason))
    }

    fn unavailable(&self, why: &str) -> CmdbError {
        if let Some(store) = &self.remote {
            return CmdbError::Unavailable(format!(
                "changes cannot be stored: {why} ({store}); writes resume by themselves once it answers"
            ));
        }
        let dir = self.path.parent().unwrap_or(Path::new(".")).display().to_string();
        CmdbError::Unavailable(format!(
            "changes cannot be stored: {why} (data dir {dir}); reads still work, writes resume by themselves once there is room"
        ))
    }

    /// Notes a failed commit; returns whether it faulted the storage.
    pub fn failed(&self, error: &CmdbError) -> bool {
        let CmdbError::Unavailable(reason) = error else { return false };
        let mut fault = self.fault.lock().expect("fault lock");
        if fault.is_none() {
            tracing::error!(file = %self.path.display(), %reason, "cmdb writes failing: storage fault; reads go on, writes refused until it clears");
            self.ok.set(0);
            *fault = Some(Fault { reason: reason.clone(), last_try: Instant::now() });
            self.faulted.store(true, Ordering::Release);
        }
        true
    }

    /// While faulted, at most once a [`RETRY_EVERY`]: if the data dir has room, reopens the
    /// file (redb repairs it from the last durable commit) and clears the fault. Returns
    /// whether the storage is healthy. Runs on the writer thread, between batches.
    pub fn try_recover(&self) -> bool {
        {
            let mut fault = self.fault.lock().expect("fault lock");
            let Some(f) = fault.as_mut() else { return true };
            if f.last_try.elapsed() < RETRY_EVERY {
                return false;
            }
            f.last_try = Instant::now();
        }
        if let Ok(Db::Pg(pg)) = self.db() {
            return match pg.ping() {
                Ok(()) => {
                    self.cleared();
                    true
                }
                Err(error) => {
                    tracing::warn!(store = %pg.label, %error, "cmdb store still unreachable");
                    false
                }
            };
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let room = nix::sys::statvfs::statvfs(dir).map(|s| s.blocks_available() * s.fragment_size());
        if !room.is_ok_and(|r| r >= ROOM_NEEDED) {
            return false;
        }
        match self.reopen() {
            Ok(()) => {
                self.cleared();
                true
            }
            Err(error) => {
                tracing::warn!(file = %self.path.display(), %error, "cmdb storage still failing");
                false
            }
        }
    }

    fn cleared(&self) {
        *self.fault.lock().expect("fault lock") = None;
        self.faulted.store(false, Ordering::Release);
        self.ok.set(1);
        tracing::info!(file = %self.path.display(), "cmdb storage recovered; writes resume");
    }

    /// Closes the file (once no read holds it) and opens it again.
    fn reopen(&self) -> Result<(), CmdbError> {
        let mut slot = self.db.write().expect("storage lock");
        let Some(Db::Redb(old)) = slot.take() else { return Err(self.unavailable("no open file")) };
        // Reads in flight hold the old handle a moment longer; redb allows one handle per file.
        match wait_unshared(old) {
            Ok(db) => drop(db),
            Err(still_shared) => {
                *slot = Some(Db::Redb(still_shared));
                return Err(self.unavailable("reads keep the file open"));
            }
        }
        match super::schema::open(&self.path) {
            Ok(db) => {
                *slot = Some(Db::Redb(Arc::new(db)));
                Ok(())
            }
            Err(e) => {
                // Back to something readers can use, so a failed reopen costs them nothing.
                if let Ok(db) = super::schema::open(&self.path) {
                    *slot = Some(Db::Redb(Arc::new(db)));
                }
                Err(e)
            }
        }
    }
}

/// The database once no other handle to it is left (reads finish within moments), or the
/// handle back after 5 s.
fn wait_unshared(mut db: Arc<Database>) -> Result<Database, Arc<Database>> {
    for _ in 0..500 {
        match Arc::try_unwrap(db) {
            Ok(inner) => return Ok(inner),
            Err(shared) => db = shared,
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(db)
}
