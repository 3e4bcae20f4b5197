//! The single CMDB writer thread: gathers queued writes into one transaction per batch (group
//! commit), so a burst of DHCP exchanges costs one fsync per batch, not one per packet.

use std::sync::mpsc;
use std::sync::{Arc, RwLock};

use redb::{Database, Table, WriteTransaction};

use super::index::{Delta, Index};
use super::model::Event;
use super::store::{Record, EVENTS, EVENT_LOG, KEY_NEXT_EVENT, KEY_NEXT_MACHINE, LEASES, MACHINES, MACS, META};
use super::CmdbError;

/// The tables of one batch, opened once for every job in it (opening a table per write costs
/// more than the write).
pub struct Tables<'a> {
    /// The batch's transaction, for tables off the hot path.
    pub tx: &'a WriteTransaction,
    pub machines: Table<'a, u64, &'static [u8]>,
    pub macs: Table<'a, u64, u64>,
    pub leases: Table<'a, u32, &'static [u8]>,
    pub events: Table<'a, (u64, u64), &'static [u8]>,
    pub event_log: Table<'a, u64, u64>,
}

impl<'a> Tables<'a> {
    fn open(tx: &'a WriteTransaction) -> Result<Self, CmdbError> {
        Ok(Tables {
            tx,
            machines: tx.open_table(MACHINES)?,
            macs: tx.open_table(MACS)?,
            leases: tx.open_table(LEASES)?,
            events: tx.open_table(EVENTS)?,
            event_log: tx.open_table(EVENT_LOG)?,
        })
    }
}

/// What a job sees: the batch's tables, id counters, and index changes to apply on commit.
pub struct WriteCtx<'a> {
    pub t: Tables<'a>,
    pub next_machine_id: &'a mut u64,
    pub next_event_seq: &'a mut u64,
    pub delta: &'a mut Vec<Delta>,
    pub index: &'a Index,
    /// Events written in this batch, published to stream subscribers once it commits.
    pub published: &'a mut Vec<Event>,
}

impl WriteCtx<'_> {
    /// The record under `id` as this batch sees it, if any.
    pub fn find<T: Record>(&self, id: u64) -> Result<Option<T>, CmdbError> {
        T::find_in(self, id)
    }

    /// The record under `id` as this batch sees it; `NotFound` without one.
    pub fn get<T: Record>(&self, id: u64) -> Result<T, CmdbError> {
        self.find(id)?.ok_or_else(|| CmdbError::NotFound(format!("{} {id}", T::NAME)))
    }

    /// Stores a record in this batch.
    pub fn put<T: Record>(&mut self, rec: &T) -> Result<(), CmdbError> {
        rec.put_in(self)
    }
}

/// Called once the batch holding a job has committed (or failed to).
pub type Completion = Box<dyn FnOnce(Result<(), CmdbError>) + Send>;
/// A queued write. It must check everything that can fail before it writes anything, because a
/// job's error does not roll back the batch it shares with other jobs.
pub type Job = Box<dyn FnOnce(&mut WriteCtx<'_>) -> Completion + Send>;

/// Runs the writer loop until every sender is gone.
/// After each commit that changed the index, `changed` is bumped so watchers (DNS) can refresh.
pub fn run(
    db: Arc<Database>,
    index: Arc<RwLock<Index>>,
    changed: tokio::sync::watch::Sender<u64>,
    events: tokio::sync::broadcast::Sender<Arc<Event>>,
    rx: mpsc::Receiver<Job>,
    batch: usize,
) {
    let (mut next_machine_id, mut next_event_seq) = match read_counters(&db) {
        Ok(c) => c,
        Err(error) => {
            tracing::error!(%error, "cmdb writer cannot read counters");
            return;
        }
    };
    let mut jobs = Vec::with_capacity(batch);
    while let Ok(first) = rx.recv() {
        jobs.push(first);
        while jobs.len() < batch {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let (ids_before, seq_before) = (next_machine_id, next_event_seq);
        let mut delta = Vec::new();
        let mut published = Vec::new();
        let mut completions = Vec::with_capacity(jobs.len());
        let result = (|| -> Result<(), CmdbError> {
            let tx = db.begin_write()?;
            {
                let snapshot = index.read().expect("index lock poisoned");
                let mut ctx = WriteCtx {
                    t: Tables::open(&tx)?,
                    next_machine_id: &mut next_machine_id,
                    next_event_seq: &mut next_event_seq,
                    delta: &mut delta,
                    index: &snapshot,
                    published: &mut published,
                };
                for job in jobs.drain(..) {
                    completions.push(job(&mut ctx));
                }
            }
            if next_machine_id != ids_before || next_event_seq != seq_before {
                let mut meta = tx.open_table(META)?;
                meta.insert(KEY_NEXT_MACHINE, next_machine_id)?;
                meta.insert(KEY_NEXT_EVENT, next_event_seq)?;
            }
            tx.commit()?;
            Ok(())
        })();
        match &result {
            Ok(()) if delta.is_empty() => {}
            Ok(()) => {
                index.write().expect("index lock poisoned").apply(delta);
                changed.send_modify(|generation| *generation += 1);
            }
            Err(error) => {
                tracing::error!(%error, jobs = completions.len(), "cmdb batch commit failed");
                jobs.clear();
                (next_machine_id, next_event_seq) = (ids_before, seq_before);
            }
        }
        if result.is_ok() {
            // In sequence order, after the commit and the index update: a subscriber never sees
            // an event that a read of the CMDB (or a lookup by MAC) could not find.
            for e in published.drain(..) {
                let _ = events.send(Arc::new(e));
            }
        }
        for done in completions {
            done(result.clone());
        }
    }
    tracing::debug!("cmdb writer stopped");
}

fn read_counters(db: &Database) -> Result<(u64, u64), CmdbError> {
    use redb::ReadableDatabase;
    let rtx = db.begin_read()?;
    let meta = rtx.open_table(META)?;
    let get = |k| -> Result<u64, CmdbError> { Ok(meta.get(k)?.map(|v| v.value()).unwrap_or(1)) };
    Ok((get(KEY_NEXT_MACHINE)?, get(KEY_NEXT_EVENT)?))
}
