//! Several appliances on one PostgreSQL store. Each keeps the in-memory index (DHCP lookups,
//! DNS, machine lists), the rack cache and the event stream of the whole estate by following
//! the `changes` log: every write batch logs the machines and leases it changed and its events,
//! and notifies `rackboot_cmdb` at commit. The follower thread wakes on the notification (or
//! once a second, should one be lost), re-reads what the other appliances changed, and
//! publishes every appliance's events, its own included, in commit order, so a stream's
//! resume-by-sequence holds across the estate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::index::{Brief, Delta, Index, LeaseBrief};
use super::kv::pg::{Change, Pg};
use super::kv::Db;
use super::model::{Event, Lease, LeaseState, Machine};
use super::store::{decode, EVENTS, EVENT_LOG, LEASES, MACHINES};
use super::CmdbError;

/// How often the follower looks without a notification.
const POLL: Duration = Duration::from_secs(1);
/// Change-log entries read per round.
const ROUND: i64 = 1000;
/// How long the change log keeps an entry.
const KEEP_SECS: i64 = 3600;

/// The change-log entry of a batch: ids of the machines and addresses its delta touched.
pub fn change_of(appliance: &str, delta: &[Delta], published: &[Event], racks: bool) -> Change {
    let mut change = Change { appliance: appliance.to_string(), racks, ..Default::default() };
    for d in delta {
        match d {
            Delta::Upsert(b) => change.machines.push(b.id),
            Delta::Remove(id) => change.machines.push(*id),
            Delta::Lease(ip, _) => change.leases.push(u64::from(u32::from(*ip))),
            // Not in the change log: another appliance's DHCPv6 leases reach this one's DNS at
            // its next full reload (DHCPv6 itself reads the table, not the index).
            Delta::Lease6(..) => {}
        }
    }
    change.machines.sort_unstable();
    change.machines.dedup();
    change.leases.sort_unstable();
    change.leases.dedup();
    change.events = published.first().zip(published.last()).map(|(a, b)| (a.seq, b.seq));
    change
}

/// Events of this appliance's own committed batches, by their first sequence, left by the
/// writer for the follower to publish in turn (saving it a read of what it just wrote).
pub type OwnEvents = Arc<std::sync::Mutex<std::collections::BTreeMap<u64, Vec<Event>>>>;

/// The follower thread, and what wakes it: a notification, or the appliance stopping.
pub(super) struct Running {
    thread: std::thread::JoinHandle<()>,
    wake: std::sync::mpsc::Sender<()>,
}

impl Running {
    /// Wakes the follower (the caller has set its `stop`) and waits for it to end: a stop
    /// takes no poll interval (SIGTERM's exit is bounded; see `tests/it/crash/sigterm.rs`).
    pub fn join(self) {
        let _ = self.wake.send(());
        let _ = self.thread.join();
    }
}

/// What the follower keeps up to date.
pub(super) struct Follower {
    pub own: OwnEvents,
    pub pg: Arc<Pg>,
    pub db: Db,
    pub appliance: String,
    pub index: Arc<RwLock<Index>>,
    pub racks: super::racks::RackCache,
    pub changed: Arc<tokio::sync::watch::Sender<u64>>,
    pub events: tokio::sync::broadcast::Sender<Arc<Event>>,
    /// The newest change-log entry already reflected here.
    pub last: i64,
    pub stop: Arc<AtomicBool>,
}

impl Follower {
    /// Starts the listener (on the store's runtime) and the follower thread.
    pub fn start(mut self) -> std::io::Result<Running> {
        let (wake_tx, wake) = std::sync::mpsc::channel::<()>();
        let (pg, stop) = (self.pg.clone(), self.stop.clone());
        self.pg.spawn(listen(pg, wake_tx.clone(), stop));
        let thread = std::thread::Builder::new().name("cmdb-follow".into()).spawn(move || {
            let mut trimmed = Instant::now();
            while !self.stop.load(Ordering::Acquire) {
                let _ = wake.recv_timeout(POLL);
                while wake.try_recv().is_ok() {}
                if self.stop.load(Ordering::Acquire) {
                    break;
                }
                if let Err(error) = self.round() {
                    tracing::warn!(%error, "following the other appliances' changes failed; retrying");
                }
                if trimmed.elapsed() > Duration::from_secs(60) {
                    trimmed = Instant::now();
                    if let Err(error) = self.pg.trim_changes(KEEP_SECS) {
                        tracing::warn!(%error, "trimming the change log failed");
                    }
                }
            }
        })?;
        Ok(Running { thread, wake: wake_tx })
    }

    /// Applies what the log holds after `last`; returns once it is read to the end.
    fn round(&mut self) -> Result<(), CmdbError> {
        loop {
            let (n, events, remote) = self.step()?;
            for e in events {
                let _ = self.events.send(Arc::new(e));
            }
            if remote {
                self.changed.send_modify(|generation| *generation += 1);
            }
            if n < ROUND as usize {
                return Ok(());
            }
        }
    }

    /// The events of this appliance's own `entries`, in order, if every one is still in memory
    /// (else nothing is taken).
    fn take_own(&self, entries: &[(i64, Change)]) -> Option<Vec<Event>> {
        let mut own = self.own.lock().expect("own events lock");
        let firsts: Vec<u64> = entries.iter().filter_map(|(_, c)| c.events.map(|e| e.0)).collect();
        if !firsts.iter().all(|f| own.contains_key(f)) {
            return None;
        }
        Some(firsts.iter().flat_map(|f| own.remove(f).unwrap_or_default()).collect())
    }

    /// One read of the log: what other appliances changed, read from the store and then applied
    /// to the index at each entry's sequence (a batch of this appliance applied meanwhile, newer,
    /// is not overwritten; see `Index::apply_at`), and the events of every entry read, in
    /// order. The index lock is held only to apply, never across a read of the store. Nothing
    /// moves on unless the whole round succeeds; a record that does not decode is skipped
    /// (logged), not retried forever.
    fn step(&mut self) -> Result<(usize, Vec<Event>, bool), CmdbError> {
        let (trimmed, entries) = self.pg.changes_after(self.last, ROUND)?;
        if trimmed > self.last {
            self.reload()?;
            return Ok((0, Vec::new(), true));
        }
        let Some(newest) = entries.last().map(|(seq, _)| *seq) else { return Ok((0, Vec::new(), false)) };
        let remote = entries.iter().any(|(_, c)| c.appliance != self.appliance);
        if !remote {
            // Only this appliance's batches: their events are in memory (most often).
            if let Some(events) = self.take_own(&entries) {
                if let Some(passed) = events.last().map(|e| e.seq) {
                    self.own.lock().expect("own events lock").retain(|first, _| *first > passed);
                }
                self.last = newest;
                return Ok((entries.len(), events, false));
            }
        }
        let rtx = self.db.begin_read()?;
        let (machines, leases) = (rtx.open_table(MACHINES)?, rtx.open_table(LEASES)?);
        let (log, stored) = (rtx.open_table(EVENT_LOG)?, rtx.open_table(EVENTS)?);
        let (mut deltas, mut events, mut racks, mut used) = (Vec::new(), Vec::new(), false, Vec::new());
        let now = super::now_secs();
        for (seq, c) in &entries {
            let own = c.appliance == self.appliance;
            if !own {
                let mut delta = Vec::new();
                for &id in &c.machines {
                    match machines.get(id)? {
                        None => delta.push(Delta::Remove(id)),
                        Some(v) => match decode::<Machine>(v.value()) {
                            Ok(m) => delta.push(Delta::Upsert(Brief::from(&m))),
                            Err(error) => {
                                tracing::warn!(machine = id, %error, "another appliance's machine does not decode; not indexed")
                            }
                        },
                    }
                }
                for &ip in &c.leases {
                    let ip32 = ip as u32;
                    let held = match leases.get(ip32)? {
                        Some(v) => decode::<Lease>(v.value()).ok(),
                        None => None,
                    };
                    let brief = held
                        .filter(|l| l.state == LeaseState::Active && l.expires_at > now)
                        .map(|l| LeaseBrief::from(&l));
                    delta.push(Delta::Lease(std::net::Ipv4Addr::from(ip32), brief));
                }
                deltas.push((*seq as u64, delta));
                racks |= c.racks;
            }
            let Some((from, to)) = c.events else { continue };
            let mine = if own { self.own.lock().expect("own events lock").get(&from).cloned() } else { None };
            if let Some(mine) = mine {
                events.extend(mine);
                used.push(from);
                continue;
            }
            for row in log.range(from..=to)? {
                let (seq, machine) = row?;
                // Pruned or deleted since: nothing to publish.
                if let Some(v) = stored.get((machine.value(), seq.value()))? {
                    match decode::<Event>(v.value()) {
                        Ok(e) => events.push(e),
                        Err(error) => {
                            tracing::warn!(seq = seq.value(), %error, "an event does not decode; not published")
                        }
                    }
                }
            }
        }
        let fresh_racks: Option<Vec<rackboot_model::racks::Rack>> =
            if racks { Some(super::store::scan(&rtx.open_table(super::store::RACKS)?)?) } else { None };
        drop((machines, leases, log, stored));
        drop(rtx);
        let changed = deltas.iter().any(|(_, d)| !d.is_empty()) || racks;
        {
            let mut index = self.index.write().expect("index lock poisoned");
            for (seq, delta) in deltas {
                index.apply_at(delta, seq);
            }
        }
        if let Some(fresh) = fresh_racks {
            *self.racks.write().expect("rack cache lock") = Arc::new(fresh);
        }
        let mut own = self.own.lock().expect("own events lock");
        for from in used {
            own.remove(&from);
        }
        // Batches the log has passed that were read from the store instead: not needed any more.
        if let Some(passed) = entries.iter().filter_map(|(_, c)| c.events.map(|e| e.1)).max() {
            own.retain(|first, _| *first > passed);
        }
        self.last = newest;
        Ok((entries.len(), events, changed))
    }
}

impl Follower {
    /// After the log was trimmed past what this appliance had read (cut off from the store for
    /// longer than the log keeps): the index and the rack cache reloaded from the tables, as at
    /// start. The events of the missed stretch are not published live (they are in the store,
    /// for `GET /api/v1/events`). The index takes the reload at the log's head, so a batch of
    /// this appliance committed meanwhile, newer, is not overwritten.
    fn reload(&mut self) -> Result<(), CmdbError> {
        tracing::warn!(
            read_to = self.last,
            "the change log was trimmed past what this appliance had read; reloading from the store"
        );
        // The rack cache carries no sequence: should anything commit while it is read, it is
        // read again, so a rack this appliance changed meanwhile is not overwritten.
        for _ in 0..5 {
            let head = self.pg.newest_change()?;
            let whole = everything(&self.db, super::now_secs())?;
            let racks = super::racks::load(&self.db)?;
            {
                let mut index = self.index.write().expect("index lock poisoned");
                let delta = index.replace_with(whole);
                index.apply_at(delta, head as u64);
            }
            let fresh = racks.read().expect("rack cache lock").clone();
            *self.racks.write().expect("rack cache lock") = fresh;
            self.own.lock().expect("own events lock").clear();
            self.last = head;
            if self.pg.newest_change()? == head {
                break;
            }
        }
        Ok(())
    }
}

/// Every machine and every held (active, unexpired at `now`) address in the store, as deltas
/// for the index, from one read snapshot.
pub(super) fn everything(db: &Db, now: u64) -> Result<Vec<Delta>, CmdbError> {
    let rtx = db.begin_read()?;
    let machines: Vec<Machine> = super::store::scan(&rtx.open_table(MACHINES)?)?;
    let leases: Vec<Lease> = super::store::scan(&rtx.open_table(LEASES)?)?;
    let mut all: Vec<Delta> = machines.iter().map(|m| Delta::Upsert(Brief::from(m))).collect();
    all.extend(
        leases
            .iter()
            .filter(|l| l.state == LeaseState::Active && l.expires_at > now)
            .map(|l| Delta::Lease(l.ip, Some(LeaseBrief::from(l)))),
    );
    all.extend(super::leases6::held(&rtx, now)?);
    Ok(all)
}

/// Keeps a connection LISTENing on `rackboot_cmdb` and wakes the follower for each
/// notification, and once after each (re)connect so nothing from the gap is missed.
async fn listen(pg: Arc<Pg>, wake: std::sync::mpsc::Sender<()>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Acquire) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        match pg.dedicated(tx).await {
            Ok(client) => match client.batch_execute("LISTEN rackboot_cmdb").await {
                Ok(()) => {
                    let _ = wake.send(());
                    while let Some(m) = rx.recv().await {
                        if matches!(m, tokio_postgres::AsyncMessage::Notification(_)) && wake.send(()).is_err() {
                            return;
                        }
                    }
                    tracing::warn!(store = %pg.label, "lost the change notifications connection; reconnecting");
                }
                Err(error) => tracing::warn!(store = %pg.label, %error, "LISTEN rackboot_cmdb failed"),
            },
            Err(error) => tracing::warn!(store = %pg.label, %error, "connecting for change notifications failed"),
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NewMachine;
    use crate::Cmdb;

    /// An appliance cut off from the store for longer than the log keeps: the entries it had
    /// not read are trimmed, and its follower reloads the index from the tables rather than
    /// miss a machine created or deleted meanwhile. PostgreSQL only.
    #[tokio::test]
    async fn a_follower_the_log_was_trimmed_past_reloads_from_the_store() {
        let Some(cfg) = crate::kv::pg::test_config() else {
            eprintln!("skipped: RACKBOOT_TEST_POSTGRES does not name a PostgreSQL");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let a = Cmdb::open_on(&dir.path().join("a.redb"), Some(&cfg), 64).unwrap();
        let new = |m: &str| NewMachine { macs: vec![m.parse().unwrap()], ..Default::default() };
        let kept = a.create_machine(new("52:54:00:00:0f:01")).await.unwrap();
        let gone = a.create_machine(new("52:54:00:00:0f:02")).await.unwrap();
        a.delete_machine(gone.id).await.unwrap();
        let db = a.inner.storage.db().unwrap();
        let Db::Pg(pg) = db.clone() else { panic!("the test store is PostgreSQL") };

        // Another appliance's index, which last read the log before all of that and still
        // holds the deleted machine.
        let index = Arc::new(RwLock::new(Index::default()));
        index.write().unwrap().apply(vec![Delta::Upsert(Brief::from(&gone))]);
        let follower = tokio::task::spawn_blocking({
            let index = index.clone();
            move || {
                assert!(pg.trim_changes(0).unwrap() >= 3, "the three batches' entries are trimmed");
                let mut f = Follower {
                    own: OwnEvents::default(),
                    pg: pg.clone(),
                    db: db.clone(),
                    appliance: "cut-off".into(),
                    index,
                    racks: super::super::racks::load(&db).unwrap(),
                    changed: Arc::new(tokio::sync::watch::channel(0).0),
                    events: tokio::sync::broadcast::channel(16).0,
                    last: 0,
                    stop: Arc::new(AtomicBool::new(false)),
                };
                f.round().unwrap();
                (f.last, pg.newest_change().unwrap())
            }
        });
        let (last, head) = follower.await.unwrap();
        assert_eq!(last, head, "the follower moved to the log's head");
        let index = index.read().unwrap();
        assert_eq!(index.by_mac("52:54:00:00:0f:01".parse().unwrap()).map(|b| b.id), Some(kept.id));
        assert!(index.by_id(gone.id).is_none(), "the machine deleted meanwhile is gone");
    }
}
