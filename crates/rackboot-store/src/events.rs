//! The timeline: every kind of event a machine can have ([`EventKind`], documented in one
//! table), how events are stored (per machine, plus a global log by sequence for the event
//! stream), and how committed events are published to live subscribers.

use std::sync::Arc;

use super::index::Delta;
use super::model::{Event, MachineState};
use super::store::{decode, encode, WriteCtx, EVENTS, EVENT_LOG};
use super::{now_ms, Cmdb, CmdbError};

pub use rackboot_model::events::EventKind;

/// Newest events kept per machine; older ones are dropped.
pub const EVENTS_KEPT_PER_MACHINE: usize = 1000;

/// Appends an event to a machine's timeline and to the global log; it is published to stream
/// subscribers once its batch commits.
pub(super) fn push_event(
    ctx: &mut WriteCtx<'_>,
    machine_id: u64,
    kind: EventKind,
    detail: serde_json::Value,
) -> Result<(), CmdbError> {
    let detail = super::fold::fold(ctx, machine_id, &kind, detail)?;
    append_event(ctx, machine_id, kind, detail)
}

/// [`push_event`] without folding: for a machine this job created, which has no earlier events
/// to fold into (folding's look-back would read and decode what was just written).
pub(super) fn append_event(
    ctx: &mut WriteCtx<'_>,
    machine_id: u64,
    kind: EventKind,
    detail: serde_json::Value,
) -> Result<(), CmdbError> {
    let seq = *ctx.next_event_seq;
    *ctx.next_event_seq += 1;
    let state = state_of(ctx, machine_id);
    let e = Event { seq, machine_id, at_ms: now_ms(), kind, detail, state };
    ctx.t.events.insert((machine_id, seq), encode(&e).as_slice())?;
    ctx.t.event_log.insert(seq, machine_id)?;
    ctx.published.push(e);
    // Amortized retention: every 256th event trims the machine it was written for, so a chatty
    // machine (a boot loop, a DHCP storm) cannot grow the file without bound.
    if seq.is_multiple_of(256) {
        prune_events(ctx, machine_id, EVENTS_KEPT_PER_MACHINE)?;
    }
    Ok(())
}

/// The machine's state as this batch has left it so far.
pub(super) fn state_of(ctx: &mut WriteCtx<'_>, machine_id: u64) -> Option<MachineState> {
    let pending = &mut ctx.states;
    for d in &ctx.delta[pending.seen.min(ctx.delta.len())..] {
        match d {
            Delta::Upsert(b) => pending.state.insert(b.id, Some(b.state)),
            Delta::Remove(id) => pending.state.insert(*id, None),
            Delta::Lease(..) | Delta::Lease6(..) => None,
        };
    }
    pending.seen = ctx.delta.len();
    match pending.state.get(&machine_id) {
        Some(state) => *state,
        None => ctx.index.by_id(machine_id).map(|b| b.state),
    }
}

/// Drops all but the newest `keep` events of a machine.
fn prune_events(ctx: &mut WriteCtx<'_>, machine_id: u64, keep: usize) -> Result<(), CmdbError> {
    let cutoff = match ctx.t.events.range((machine_id, 0)..=(machine_id, u64::MAX))?.rev().nth(keep) {
        Some(row) => Some(row?.0.value().1),
        None => None,
    };
    if let Some(seq) = cutoff {
        drop_events(ctx, machine_id, seq)?;
    }
    Ok(())
}

/// Drops a machine's events up to and including `upto` (all of them with `u64::MAX`), from its
/// timeline and from the global log.
pub(super) fn drop_events(ctx: &mut WriteCtx<'_>, machine_id: u64, upto: u64) -> Result<(), CmdbError> {
    let mut seqs = Vec::new();
    for row in ctx.t.events.range((machine_id, 0)..=(machine_id, upto))? {
        seqs.push(row?.0.value().1);
    }
    for seq in seqs {
        ctx.t.events.remove((machine_id, seq))?;
        ctx.t.event_log.remove(seq)?;
        // An event this batch wrote and just dropped is not published either.
        unpublish(ctx.published, seq);
    }
    Ok(())
}

/// Takes the event `seq` out of the batch's events to publish, if it is there. They are in
/// sequence order, so this is a binary search, not a scan per dropped event (a flood drops
/// thousands per batch).
pub(super) fn unpublish(published: &mut Vec<Event>, seq: u64) {
    if let Ok(pos) = published.binary_search_by_key(&seq, |e| e.seq) {
        published.remove(pos);
    }
}

/// One page of a scan over the log: stops at `limit` matches or `scan` rows looked at.
struct PageScan<'f> {
    filter: &'f EventFilter,
    /// The machines of `filter.pools`, when it has pools.
    allowed: Option<std::collections::HashSet<u64>>,
    limit: usize,
    scan: usize,
    out: Vec<Event>,
    looked: usize,
    last: u64,
    more: bool,
}

impl PageScan<'_> {
    /// Takes the row at `seq`; false once the page is full (there is more after it).
    fn offer(&mut self, seq: u64, row: &[u8]) -> Result<bool, CmdbError> {
        if self.out.len() >= self.limit || self.looked >= self.scan {
            self.more = true;
            return Ok(false);
        }
        self.looked += 1;
        self.last = seq;
        let e: Event = decode(row)?;
        if self.filter.matches(&e) && self.allowed.as_ref().is_none_or(|a| a.contains(&e.machine_id)) {
            self.out.push(e);
        }
        Ok(true)
    }
}

/// Which events a listing or stream wants.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub machine: Option<u64>,
    pub kinds: Vec<EventKind>,
    /// Only events recorded while their machine was in this state.
    pub state: Option<MachineState>,
    /// Unix milliseconds: only events at or after this moment.
    pub since_ms: Option<u64>,
    /// Only events of machines now in these pools (a pool-scoped caller's); checked against
    /// the machine's pool by [`Cmdb::event_passes`] and the log's pages, not by [`matches`].
    ///
    /// [`matches`]: EventFilter::matches
    pub pools: Option<Vec<String>>,
}

impl EventFilter {
    /// Whether `e` passes, its machine's pool aside.
    pub fn matches(&self, e: &Event) -> bool {
        self.machine.is_none_or(|m| m == e.machine_id)
            && (self.kinds.is_empty() || self.kinds.contains(&e.kind))
            && self.state.is_none_or(|s| e.state == Some(s))
            && self.since_ms.is_none_or(|t| e.at_ms >= t)
    }
}

impl Cmdb {
    /// Whether `e` passes `f`, its machine's pool included (a machine that is gone is in none).
    pub fn event_passes(&self, f: &EventFilter, e: &Event) -> bool {
        f.matches(e)
            && f.pools.as_ref().is_none_or(|pools| self.machine_pool(e.machine_id).is_some_and(|p| pools.contains(&p)))
    }

    /// The pool machine `id` is in, from the index (`None` for a machine that is gone).
    pub fn machine_pool(&self, id: u64) -> Option<String> {
        let index = self.inner.index.read().expect("index lock");
        index.by_id(id).map(|b| b.facet.pool.clone())
    }

    /// The machines now in `pools`, from the index.
    pub(super) fn machines_in(&self, pools: &[String]) -> std::collections::HashSet<u64> {
        let index = self.inner.index.read().expect("index lock");
        index.ids_in_pools(pools)
    }

    /// Puts an event on machine `id`'s timeline (what a service did to it, such as a firmware
    /// update's progress); a machine that is gone is `NotFound`.
    pub async fn note_event(&self, id: u64, kind: EventKind, detail: serde_json::Value) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            ctx.get::<super::model::Machine>(id)?;
            push_event(ctx, id, kind, detail)
        })
        .await
    }

    /// A machine's timeline, oldest first, after sequence `after`.
    pub async fn events(&self, machine_id: u64, after: u64, limit: usize) -> Result<Vec<Event>, CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(EVENTS)?;
            let mut out = Vec::new();
            for row in t.range((machine_id, after.saturating_add(1))..=(machine_id, u64::MAX))?.take(limit) {
                out.push(decode(row?.1.value())?);
            }
            Ok(out)
        })
        .await
    }

    /// A machine's newest event of `kind` among its last `scan` events.
    pub async fn last_event_of(
        &self,
        machine_id: u64,
        kind: EventKind,
        scan: usize,
    ) -> Result<Option<Event>, CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(EVENTS)?;
            for row in t.range((machine_id, 0)..=(machine_id, u64::MAX))?.rev().take(scan) {
                let e: Event = decode(row?.1.value())?;
                if e.kind == kind {
                    return Ok(Some(e));
                }
            }
            Ok(None)
        })
        .await
    }

    /// Events of every machine after sequence `after` that pass `filter`, oldest first, at most
    /// `limit`; with the sequence the next page starts after (`None` at the end of the log).
    /// At most `scan` log entries are looked at, so a filter that matches little stays cheap;
    /// a page may then be short but still carries where to go on.
    pub async fn event_log(
        &self,
        filter: EventFilter,
        after: u64,
        limit: usize,
        scan: usize,
    ) -> Result<(Vec<Event>, Option<u64>), CmdbError> {
        // Which machines are in the pools is read once, before the scan (the index is not held
        // through it).
        let allowed = filter.pools.as_deref().map(|p| self.machines_in(p));
        self.read(move |rtx| {
            let events = rtx.open_table(EVENTS)?;
            let mut page =
                PageScan { filter: &filter, allowed, limit, scan, out: Vec::new(), looked: 0, last: 0, more: false };
            if let Some(m) = filter.machine {
                for row in events.range((m, after.saturating_add(1))..=(m, u64::MAX))? {
                    let (k, v) = row?;
                    if !page.offer(k.value().1, v.value())? {
                        break;
                    }
                }
            } else {
                let log = rtx.open_table(EVENT_LOG)?;
                for row in log.range(after.saturating_add(1)..)? {
                    let (seq, machine) = row?;
                    // A log entry whose event is gone (pruned, machine deleted) is skipped.
                    let Some(v) = events.get((machine.value(), seq.value()))? else { continue };
                    if !page.offer(seq.value(), v.value())? {
                        break;
                    }
                }
            }
            let next = page.more.then_some(page.last);
            Ok((page.out, next))
        })
        .await
    }

    /// The sequence number of the newest event ever committed (0 before the first).
    pub async fn event_head(&self) -> Result<u64, CmdbError> {
        self.read(|rtx| {
            let meta = rtx.open_table(super::store::META)?;
            let newest = meta.get(super::store::KEY_NEXT_EVENT)?.map_or(1, |v| v.value()).saturating_sub(1);
            Ok(newest)
        })
        .await
    }

    /// Live events, in commit order, from the moment of the call.
    pub fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<Arc<Event>> {
        self.inner.events.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_by_name() {
        for (kind, name, doc, fields) in EventKind::ALL {
            assert_eq!(kind.as_str(), *name);
            assert_eq!(&EventKind::from_name(name), kind);
            assert!(!doc.trim().is_empty() && !fields.is_empty(), "{name} is undocumented");
            let json = serde_json::to_string(kind).unwrap();
            assert_eq!(serde_json::from_str::<EventKind>(&json).unwrap(), *kind);
        }
        let names: std::collections::HashSet<_> = EventKind::ALL.iter().map(|k| k.1).collect();
        assert_eq!(names.len(), EventKind::ALL.len(), "two kinds share a name");
    }

    #[test]
    fn an_unknown_stored_kind_still_decodes() {
        let k: EventKind = serde_json::from_str("\"frobnicator.exploded\"").unwrap();
        assert_eq!(k, EventKind::Other("frobnicator.exploded".into()));
        assert_eq!(serde_json::to_string(&k).unwrap(), "\"frobnicator.exploded\"");
    }
}
