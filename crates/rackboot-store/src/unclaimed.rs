//! The cap on unclaimed machines: records DHCP, `/boot/ipxe` and enrollment create for MACs
//! nobody has claimed (see [`super::index::is_unclaimed`]). When a new one would pass the cap,
//! the oldest unclaimed machine that never enrolled an approved agent and has no jobs goes, so a
//! random-MAC flood cannot grow the data file without bound. Evictions are counted
//! (`rackboot_cmdb_unclaimed_evicted_total`) and announced by a `cmdb.unclaimed_cap` event at
//! most once a minute.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use prometheus_client::metrics::counter::Counter;
use serde_json::json;

use super::events::{drop_events, push_event, EventKind};
use super::index::{is_unclaimed, Delta};
use super::kv::Table;
use super::model::{AgentRecord, Machine};
use super::nonces::BOOT_NONCES;
use super::store::{find, BatchGrowth, WriteCtx, AGENTS, MACHINE_JOBS};
use super::{now_secs, CmdbError};

pub use rackboot_model::records::DEFAULT_UNCLAIMED_CAP as DEFAULT_CAP;
/// Candidates looked at per eviction before giving up (all of them claimed in this batch).
const LOOK_AT: usize = 64;

/// The cap and what it did; shared by every write that may create a machine.
#[derive(Debug)]
pub struct Growth {
    cap: AtomicUsize,
    /// Machines evicted since start.
    pub evicted: Counter,
    last_warned: AtomicU64,
}

impl Default for Growth {
    fn default() -> Self {
        Growth { cap: AtomicUsize::new(DEFAULT_CAP), evicted: Counter::default(), last_warned: AtomicU64::new(0) }
    }
}

impl Growth {
    /// Sets the cap (at least 1).
    pub fn set_cap(&self, cap: usize) {
        self.cap.store(cap.max(1), Ordering::Relaxed);
    }
}

impl BatchGrowth {
    fn catch_up(&mut self, ctx_delta: &[Delta], index: &super::index::Index) {
        for d in &ctx_delta[self.seen.min(ctx_delta.len())..] {
            match d {
                Delta::Upsert(b) => match index.by_id(b.id) {
                    None if b.unclaimed => {
                        self.fresh.insert(b.id);
                    }
                    None => {
                        self.fresh.remove(&b.id);
                    }
                    Some(old) if old.unclaimed && !b.unclaimed => {
                        self.gone.insert(b.id);
                    }
                    Some(_) => {}
                },
                Delta::Remove(id) if !self.fresh.remove(id) && index.by_id(*id).is_some_and(|b| b.unclaimed) => {
                    self.gone.insert(*id);
                }
                _ => {}
            }
        }
        self.seen = ctx_delta.len();
    }

    fn count(&self, index: &super::index::Index) -> usize {
        (index.unclaimed_count() + self.fresh.len()).saturating_sub(self.gone.len())
    }
}

/// Called before a write creates an unclaimed machine: evicts the oldest one when the cap is
/// reached.
pub(super) fn make_room(ctx: &mut WriteCtx<'_>, growth: &Growth) -> Result<(), CmdbError> {
    let cap = growth.cap.load(Ordering::Relaxed);
    // The index is as of the last commit; this batch may have created or removed some already.
    let mut batch = std::mem::take(&mut ctx.growth);
    batch.catch_up(ctx.delta, ctx.index);
    let result = if batch.count(ctx.index) < cap { Ok(()) } else { evict_oldest(ctx, growth, cap, &mut batch) };
    ctx.growth = batch;
    result
}

/// Evicts the oldest evictable unclaimed machine: those committed before first, then those this
/// batch created; at most [`LOOK_AT`] looked at. Under a random-MAC flood this runs once per new
/// MAC, so it takes candidates one at a time (the first is nearly always evicted) and opens the
/// tables it reads and writes beyond the batch's own once, not once per look.
fn evict_oldest(ctx: &mut WriteCtx<'_>, growth: &Growth, cap: usize, batch: &mut BatchGrowth) -> Result<(), CmdbError> {
    let (index, tx) = (ctx.index, ctx.t.tx);
    let jobs = tx.open_table(MACHINE_JOBS)?;
    let mut agents = tx.open_table(AGENTS)?;
    let mut fresh_from = 0;
    for _ in 0..LOOK_AT {
        // Committed ones are looked at once per batch (evicted now, or kept: claimed, jobs, an
        // approved agent), so the cursor moves past each (and past any the batch removed or
        // claimed before it).
        let committed = index.unclaimed_from(batch.cursor).find(|id| !batch.gone.contains(id));
        let id = match committed {
            Some(id) => {
                batch.cursor = id + 1;
                id
            }
            None => match batch.fresh.range(fresh_from..).next() {
                Some(&id) => {
                    fresh_from = id + 1;
                    id
                }
                None => break,
            },
        };
        let Some(m) = ctx.find::<Machine>(id)? else { continue };
        let has_jobs = jobs.range((id, 0)..=(id, u64::MAX))?.next().is_some();
        if !is_unclaimed(&m) || has_jobs || find::<AgentRecord>(&agents, id)?.is_some_and(|a| a.approved) {
            continue;
        }
        evict(ctx, &mut agents, &m)?;
        growth.evicted.inc();
        let now = now_secs();
        let last = growth.last_warned.load(Ordering::Relaxed);
        if now >= last + 60
            && growth.last_warned.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            tracing::warn!(cap, evicted = growth.evicted.get(), "unclaimed-machine cap reached: evicting the oldest");
            let detail = json!({"cap": cap, "evicted_total": growth.evicted.get(), "evicted": m.id, "macs": m.macs});
            push_event(ctx, 0, EventKind::CmdbUnclaimedCap, detail)?;
        }
        return Ok(());
    }
    Ok(())
}

/// Removes an unclaimed machine: its rows, MACs, timeline, agent record and boot nonces. Its
/// leases stay (the DHCP server owns them).
fn evict(ctx: &mut WriteCtx<'_>, agents: &mut Table<'_, u64, &'static [u8]>, m: &Machine) -> Result<(), CmdbError> {
    let mut nonces = ctx.t.tx.open_table(BOOT_NONCES)?;
    for mac in &m.macs {
        ctx.t.macs.remove(mac.to_u64())?;
        nonces.remove(mac.to_u64())?;
    }
    drop(nonces);
    ctx.t.machines.remove(m.id)?;
    ctx.delta.push(Delta::Remove(m.id));
    drop_events(ctx, m.id, u64::MAX)?;
    agents.remove(m.id)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{Cmdb, EventKind, MachineFilter, NewMachine, Sighting};
    use rackboot_model::mac::Mac;

    fn mac(n: u32) -> Mac {
        format!("02:00:{:02x}:{:02x}:{:02x}:{:02x}", n >> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)
            .parse()
            .unwrap()
    }

    #[tokio::test]
    async fn a_flood_of_unknown_macs_keeps_the_newest_unclaimed_and_every_claimed_machine() {
        let dir = tempfile::tempdir().unwrap();
        let db = Cmdb::open_for_test(&dir.path().join("c.redb"), 64).unwrap();
        db.growth().set_cap(100);
        // Claimed before the flood: a machine an operator named, and one the flood saw first but
        // an operator then tagged.
        let named = db
            .create_machine(NewMachine {
                macs: vec![mac(1_000_000)],
                hostname: Some("keep".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        for n in 0..1_000 {
            db.record(Sighting { mac: Some(mac(n)), ..Default::default() }, vec![]);
        }
        db.flush().await.unwrap();
        let all = db.list_machines(MachineFilter { limit: Some(10_000), ..Default::default() }).await.unwrap();
        assert_eq!(all.total, 101, "the cap of unclaimed machines, plus the named one");
        assert!(db.brief_by_mac(mac(999)).is_some() && db.brief_by_mac(mac(0)).is_none(), "the oldest went");
        assert!(db.brief_by_mac(mac(1_000_000)).is_some_and(|b| b.id == named.id));
        assert_eq!(db.growth().evicted.get(), 900);
        let warned = db.events(0, 0, 100).await.unwrap();
        assert_eq!(warned.len(), 1, "at most one warning a minute: {warned:?}");
        assert_eq!(warned[0].kind, EventKind::CmdbUnclaimedCap);
        assert_eq!(warned[0].detail["cap"], 100);
    }

    #[tokio::test]
    async fn a_machine_written_twice_in_one_batch_counts_once_against_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let db = Cmdb::open_for_test(&dir.path().join("c.redb"), 4096).unwrap();
        db.growth().set_cap(100);
        // DISCOVER then REQUEST: each MAC's record is written twice, mostly in the same batch.
        for n in 0..500 {
            for kind in [EventKind::DhcpOffer, EventKind::DhcpAck] {
                db.record(Sighting { mac: Some(mac(n)), ..Default::default() }, vec![(kind, serde_json::json!({}))]);
            }
        }
        db.flush().await.unwrap();
        let all = db.list_machines(MachineFilter { limit: Some(10_000), ..Default::default() }).await.unwrap();
        assert_eq!(all.total, 100, "exactly the cap, not fewer");
        assert_eq!(db.growth().evicted.get(), 400);
        assert!(db.brief_by_mac(mac(499)).is_some() && db.brief_by_mac(mac(399)).is_none());
    }
}
