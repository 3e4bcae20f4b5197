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
    pub fn start(mut self) -> std::io::Result<std::thread::JoinHandle<()>> {
        let (wake_tx, wake) = std::sync::mpsc::channel::<()>();
        let (pg, stop) = (self.pg.clone(), self.stop.clone());
        self.pg.spawn(listen(pg, wake_tx, stop));
        std::thread::Builder::new().name("cmdb-follow".into()).spawn(move || {
            let mut trimmed = Instant::now();
            while !self.stop.load(Ordering::Acquire) {
                let _ = wake.recv_timeout(POLL);
                while wake.try_recv().is_ok() {}
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
        })
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

    /// One read of the log: what other appliances changed brought into the index under its
    /// lock (so a batch this appliance commits meanwhile is applied after, never overwritten by
    /// an older read), and the events of the entries read, in order.
    fn step(&mut self) -> Result<(usize, Vec<Event>, bool), CmdbError> {
        let entries = self.pg.changes_after(self.last, ROUND)?;
        let remote = entries.iter().any(|(_, c)| c.appliance != self.appliance);
        if !remote {
            // Only this appliance's batches: their events are in memory (most often); no lock,
            // no read of the store unless one is missing there.
            let own = self.take_own(&entries);
            if let Some(events) = own {
                self.last = entries.last().map_or(self.last, |(seq, _)| *seq);
                return Ok((entries.len(), events, false));
            }
        }
        // Only another appliance's change needs the index lock (and a read under it).
        let mut index = remote.then(|| self.index.write().expect("index lock poisoned"));
        let rtx = self.db.begin_read()?;
        let (machines, leases) = (rtx.open_table(MACHINES)?, rtx.open_table(LEASES)?);
        let (log, stored) = (rtx.open_table(EVENT_LOG)?, rtx.open_table(EVENTS)?);
        let (mut delta, mut events, mut racks) = (Vec::new(), Vec::new(), false);
        let now = super::now_secs();
        for (seq, c) in &entries {
            let own = c.appliance == self.appliance;
            if !own {
                for &id in &c.machines {
                    delta.push(match machines.get(id)? {
                        Some(v) => Delta::Upsert(Brief::from(&decode::<Machine>(v.value())?)),
                        None => Delta::Remove(id),
                    });
                }
                for &ip in &c.leases {
                    let ip32 = ip as u32;
                    let held = match leases.get(ip32)? {
                        Some(v) => Some(decode::<Lease>(v.value())?),
                        None => None,
                    };
                    let brief = held
                        .filter(|l| l.state == LeaseState::Active && l.expires_at > now)
                        .map(|l| LeaseBrief::from(&l));
                    delta.push(Delta::Lease(std::net::Ipv4Addr::from(ip32), brief));
                }
                racks |= c.racks;
            }
            if let Some((from, to)) = c.events {
                let mine = if own { self.own.lock().expect("own events lock").remove(&from) } else { None };
                if let Some(mine) = mine {
                    events.extend(mine);
                    self.last = *seq;
                    continue;
                }
                for row in log.range(from..=to)? {
                    let (seq, machine) = row?;
                    // Pruned or deleted since: nothing to publish.
                    if let Some(v) = stored.get((machine.value(), seq.value()))? {
                        events.push(decode::<Event>(v.value())?);
                    }
                }
            }
            self.last = *seq;
        }
        let remote = !delta.is_empty() || racks;
        if let Some(index) = index.as_mut() {
            index.apply(delta);
        }
        drop(index);
        if racks {
            let fresh: Vec<crate::racks::Rack> = super::store::scan(&rtx.open_table(super::store::RACKS)?)?;
            *self.racks.write().expect("rack cache lock") = Arc::new(fresh);
        }
        Ok((entries.len(), events, remote))
    }
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
