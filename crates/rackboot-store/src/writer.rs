//! The single CMDB writer thread: gathers queued writes into one transaction per batch (group
//! commit), so a burst of DHCP exchanges costs one fsync per batch, not one per packet.

use std::sync::{Arc, RwLock};

use super::kv::{Db, WriteTx};

use super::index::{Delta, Index};
use super::model::Event;
use super::store::{Tables, WriteCtx, KEY_NEXT_EVENT, KEY_NEXT_MACHINE, META};
use super::CmdbError;

/// Called once the batch holding a job has committed (or failed to).
pub type Completion = Box<dyn FnOnce(Result<(), CmdbError>) + Send>;
/// A queued write. It must check everything that can fail before it writes anything, because a
/// job's error does not roll back the batch it shares with other jobs.
pub type Job = Box<dyn FnOnce(&mut WriteCtx<'_>) -> Completion + Send>;

/// A job in the writer's queue. A `low` one (a sighting from an unauthenticated firmware
/// request) waits behind every other write: at most [`LOW_PER_BATCH`] of them join a batch.
pub struct Queued {
    pub job: Job,
    pub low: bool,
}

impl Queued {
    /// A write served in queue order.
    pub fn normal(job: Job) -> Queued {
        Queued { job, low: false }
    }
}

/// Low-priority jobs one batch takes at most, after everything else queued: a flood of firmware
/// sightings then costs each of DHCP's batches a bounded extra, whatever its rate.
pub const LOW_PER_BATCH: usize = 16;

/// A batch of low-priority jobs alone starts at most this long after the last commit (with
/// other writes queued, they ride along in those batches instead).
const LOW_ALONE: std::time::Duration = std::time::Duration::from_millis(25);

/// Under load, the writer waits this long after a commit before the next: when jobs came in
/// while the previous batch committed, a batch under [`LINGER_BELOW`] jobs (and under the batch
/// size) waits for the rest of it, gathering more (one commit and one fsync for many DHCP
/// exchanges instead of a few). A batch holding an awaited write ([`Awaited`]: an API call, the
/// provisioning engine) commits at once, as does an idle appliance. 8 ms against the 2 ms
/// linger it replaced: about a quarter less CPU per DHCP exchange at 2,000/s, for a few ms more
/// ACK latency (BENCHMARKS.md).
const CADENCE: std::time::Duration = std::time::Duration::from_millis(8);
/// A batch at least this large commits at once...
const LINGER_BELOW: usize = 32;
/// ...which a lingering batch checks this often.
const LINGER_STEP: std::time::Duration = std::time::Duration::from_millis(1);

/// How many awaited writes are queued or in a batch not yet run: a caller waits for each, so a
/// batch holding one does not linger. DHCP's lease writes and detached writes are not counted:
/// they are what the cadence gathers.
#[derive(Clone, Default)]
pub struct Awaited(Arc<std::sync::atomic::AtomicUsize>);

/// One awaited write, counted until it is dropped: when its job has run, or was dropped unrun.
pub struct AwaitedWrite(Arc<std::sync::atomic::AtomicUsize>);

impl Awaited {
    pub fn enter(&self) -> AwaitedWrite {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        AwaitedWrite(self.0.clone())
    }

    fn any(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed) > 0
    }
}

impl Drop for AwaitedWrite {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Jobs queued at most; past it awaited writes wait (back-pressure) and detached ones are shed.
pub const QUEUE_CAP: usize = 65_536;

pub use rackboot_base::metrics::WriterStats;

/// The writer thread's state.
pub struct Writer {
    pub storage: Arc<super::health::Storage>,
    pub index: Arc<RwLock<Index>>,
    /// Bumped after each commit that changed the index, so watchers (DNS) can refresh.
    pub changed: Arc<tokio::sync::watch::Sender<u64>>,
    /// This appliance's name in the change log of a shared store.
    pub appliance: String,
    /// Its committed batches' events, for the follower (shared store only).
    pub own: super::follow::OwnEvents,
    pub events: tokio::sync::broadcast::Sender<Arc<Event>>,
    pub stats: WriterStats,
    pub batch: usize,
    pub awaited: Awaited,
}

impl Writer {
    /// Runs the writer loop until every sender is gone. A job that panics rolls its batch back
    /// (every job in it gets an error) and is counted; the writer goes on with the next batch.
    pub fn run(self, mut rx: tokio::sync::mpsc::Receiver<Queued>, counters: (u64, u64)) {
        let (mut next_machine_id, mut next_event_seq) = counters;
        let mut jobs = Vec::with_capacity(self.batch);
        // Low-priority jobs taken from the queue, waiting for room in a batch (bounded by their
        // own budget upstream: see `leases::FirmwareBudget`).
        let mut low = std::collections::VecDeque::new();
        let mut last_commit = std::time::Instant::now() - CADENCE;
        // Whether jobs came in while the last batch committed (concurrent writers).
        let mut pressed = false;
        loop {
            use tokio::sync::mpsc::error::TryRecvError;
            // While the storage is faulted, writes are refused before they are queued, so the
            // writer looks for room on its own rather than wait for a job. With low-priority
            // jobs waiting it does not wait either.
            if self.storage.fault().is_some() || !low.is_empty() {
                match rx.try_recv() {
                    Ok(q) => Self::route(q, &mut jobs, &mut low),
                    Err(TryRecvError::Empty) if low.is_empty() => {
                        self.storage.try_recover();
                        std::thread::sleep(std::time::Duration::from_millis(200));
                        continue;
                    }
                    Err(TryRecvError::Disconnected) if low.is_empty() => break,
                    // Only low-priority jobs wait: a batch of them alone at most every
                    // LOW_ALONE, so a flood leaves the writer free for DHCP most of the time.
                    Err(TryRecvError::Empty) if last_commit.elapsed() < LOW_ALONE => {
                        std::thread::sleep(LINGER_STEP);
                        continue;
                    }
                    Err(_) => {}
                }
            } else {
                match rx.blocking_recv() {
                    Some(q) => Self::route(q, &mut jobs, &mut low),
                    None => break,
                }
            };
            self.drain(&mut rx, &mut jobs, &mut low);
            // Under load, a small batch waits for company until the cadence allows the next
            // commit.
            while pressed && jobs.len() < LINGER_BELOW.min(self.batch) && !self.awaited.any() {
                let Some(left) = CADENCE.checked_sub(last_commit.elapsed()) else { break };
                std::thread::sleep(left.min(LINGER_STEP));
                self.drain(&mut rx, &mut jobs, &mut low);
            }
            // Then the low-priority jobs, behind everything else and a few at a time.
            let room = LOW_PER_BATCH.min(self.batch.saturating_sub(jobs.len()).max(1));
            jobs.extend(low.drain(..room.min(low.len())));
            if jobs.is_empty() {
                continue;
            }
            // While the storage is faulted (disk full), queued jobs are refused without
            // touching the file, until it has been reopened.
            if !self.storage.try_recover() {
                // Dropped unrun: each caller sees its answer channel closed and reports the
                // storage's refusal.
                jobs.clear();
                low.clear();
                self.stats.queue_depth.set(rx.len() as i64);
                continue;
            }
            let started = std::time::Instant::now();
            let (ids_before, seq_before) = (next_machine_id, next_event_seq);
            let mut delta = Vec::new();
            let mut published = Vec::new();
            let mut change_seq = None;
            let mut completions = Vec::with_capacity(jobs.len());
            let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.batch_tx(
                    &mut jobs,
                    &mut completions,
                    &mut next_machine_id,
                    &mut next_event_seq,
                    &mut delta,
                    &mut published,
                    &mut change_seq,
                )
            }));
            let result = attempt.unwrap_or_else(|_| {
                self.stats.panics.inc();
                // Jobs the panic cut off were dropped with the closure: their callers see the
                // writer's answer channel closed, which is an error too.
                Err(CmdbError::Storage("a write panicked; its batch was rolled back".into()))
            });
            match &result {
                Ok(()) if delta.is_empty() => {}
                Ok(()) => {
                    let mut index = self.index.write().expect("index lock poisoned");
                    // On a shared store, the follower may have applied a newer read already.
                    match change_seq {
                        Some(seq) => index.apply_at(delta, seq),
                        None => index.apply(delta),
                    }
                    drop(index);
                    self.changed.send_modify(|generation| *generation += 1);
                }
                Err(error) => {
                    if !self.storage.failed(error) {
                        tracing::error!(%error, jobs = completions.len(), "cmdb batch commit failed");
                    }
                    jobs.clear();
                    (next_machine_id, next_event_seq) = (ids_before, seq_before);
                }
            }
            self.stats.commit_seconds.observe(started.elapsed().as_secs_f64());
            // Before the completions: a caller waiting for this commit cannot have queued its
            // next write yet, so only other writers count.
            pressed = !rx.is_empty();
            // On a shared store every appliance's events reach the stream through the follower,
            // in commit order (see `follow`); it takes this appliance's own from here.
            if result.is_ok() && self.storage.shared() {
                if let Some(first) = published.first().map(|e| e.seq) {
                    let mut own = self.own.lock().expect("own events lock");
                    own.insert(first, std::mem::take(&mut published));
                    // A follower that is gone or far behind does not make this grow unbounded:
                    // what it does not find here it reads from the store.
                    while own.len() > 1024 {
                        own.pop_first();
                    }
                }
            } else if result.is_ok() {
                // In sequence order, after the commit and the index update: a subscriber never
                // sees an event that a read of the CMDB (or a lookup by MAC) could not find.
                for e in published.drain(..) {
                    let _ = self.events.send(Arc::new(e));
                }
            }
            for done in completions {
                done(result.clone());
            }
            last_commit = std::time::Instant::now();
            self.stats.queue_depth.set((rx.len() + low.len()) as i64);
        }
        tracing::debug!("cmdb writer stopped");
    }

    /// A job from the queue into the batch, or a low-priority one aside.
    fn route(q: Queued, jobs: &mut Vec<Job>, low: &mut std::collections::VecDeque<Job>) {
        if q.low {
            low.push_back(q.job);
        } else {
            jobs.push(q.job);
        }
    }

    /// Takes what is queued, up to the batch size (low-priority jobs aside).
    fn drain(
        &self,
        rx: &mut tokio::sync::mpsc::Receiver<Queued>,
        jobs: &mut Vec<Job>,
        low: &mut std::collections::VecDeque<Job>,
    ) {
        while jobs.len() < self.batch {
            match rx.try_recv() {
                Ok(q) => Self::route(q, jobs, low),
                Err(_) => break,
            }
        }
    }

    /// Runs `jobs` in one transaction and commits it.
    #[allow(clippy::too_many_arguments)]
    fn batch_tx(
        &self,
        jobs: &mut Vec<Job>,
        completions: &mut Vec<Completion>,
        next_machine_id: &mut u64,
        next_event_seq: &mut u64,
        delta: &mut Vec<Delta>,
        published: &mut Vec<Event>,
        change_seq: &mut Option<u64>,
    ) -> Result<(), CmdbError> {
        let tx = self.storage.db()?.begin_write()?;
        // On a shared store the counters are the ones other appliances' batches left.
        tx.serialize()?;
        if tx.shared() {
            (*next_machine_id, *next_event_seq) = counters_in(&tx)?;
        }
        let (ids_before, seq_before) = (*next_machine_id, *next_event_seq);
        let racks_changed;
        {
            let snapshot = self.index.read().expect("index lock poisoned");
            let mut ctx = WriteCtx {
                t: Tables::open(&tx)?,
                next_machine_id,
                next_event_seq,
                delta,
                index: &snapshot,
                published,
                growth: Default::default(),
                states: Default::default(),
                racks_changed: false,
            };
            for job in jobs.drain(..) {
                completions.push(job(&mut ctx));
            }
            racks_changed = ctx.racks_changed;
        }
        if tx.shared() && (!delta.is_empty() || !published.is_empty() || racks_changed) {
            *change_seq = tx.log_change(&super::follow::change_of(&self.appliance, delta, published, racks_changed))?;
        }
        if *next_machine_id != ids_before || *next_event_seq != seq_before {
            let mut meta = tx.open_table(META)?;
            meta.insert(KEY_NEXT_MACHINE, *next_machine_id)?;
            meta.insert(KEY_NEXT_EVENT, *next_event_seq)?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// The next machine id and event sequence, as stored.
pub fn read_counters(db: &Db) -> Result<(u64, u64), CmdbError> {
    let rtx = db.begin_read()?;
    let meta = rtx.open_table(META)?;
    let get = |k| -> Result<u64, CmdbError> { Ok(meta.get(k)?.map(|v| v.value()).unwrap_or(1)) };
    Ok((get(KEY_NEXT_MACHINE)?, get(KEY_NEXT_EVENT)?))
}

/// The counters as a write batch finds them.
fn counters_in(tx: &WriteTx) -> Result<(u64, u64), CmdbError> {
    let meta = tx.open_table(META)?;
    let get = |k| -> Result<u64, CmdbError> { Ok(meta.get(k)?.map(|v| v.value()).unwrap_or(1)) };
    Ok((get(KEY_NEXT_MACHINE)?, get(KEY_NEXT_EVENT)?))
}

#[cfg(test)]
mod tests;
