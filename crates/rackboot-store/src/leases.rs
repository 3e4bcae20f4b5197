//! Leases and what DHCP learns: the lease table's reads, and lease writes queued in packet order
//! together with the sighting (the machine, its events, its rack placement) from the same packet.

use std::net::Ipv4Addr;

use tokio::sync::oneshot;

use super::events::EventKind;
use super::model::Lease;
use super::writer::Job;
use super::{machines, racks, store, Cmdb, CmdbError, Sighting};

impl Cmdb {
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
        self.queue_lease(lease, sighting, events)?.await
    }

    /// Queues a lease write now, in the caller's order (two changes to one address are applied
    /// in the order they were decided), and returns what resolves once it has committed. With
    /// the write queue full it is refused at once: DHCP drops the request and the client retries.
    pub fn queue_lease(
        &self,
        lease: Lease,
        sighting: Sighting,
        events: Vec<(EventKind, serde_json::Value)>,
    ) -> Result<impl std::future::Future<Output = Result<(), CmdbError>> + Send + 'static, CmdbError> {
        // The address is checked first (a shared store: another appliance may hold it);
        // observe can fail on a bad record; put_lease only on storage errors, which fail the
        // whole batch anyway. In this order a refused ACK never leaves a committed lease.
        self.queue_sighted(
            sighting,
            events,
            move |ctx| machines::check_lease_free(ctx, &lease).map(|()| lease),
            |ctx, lease| machines::put_lease(ctx, &lease),
        )
    }

    /// Queues a lease write with the sighting and events of its packet, in this order: `check`
    /// (which gives back what `put` stores), the sighting, its rack placement, `put`. Refused at
    /// once while the store refuses writes or its queue is full; what it returns resolves once
    /// the batch has committed, with the first failure of the four.
    pub(super) fn queue_sighted<T: Send + 'static>(
        &self,
        sighting: Sighting,
        events: Vec<(EventKind, serde_json::Value)>,
        check: impl FnOnce(&super::store::WriteCtx<'_>) -> Result<T, CmdbError> + Send + 'static,
        put: impl FnOnce(&mut super::store::WriteCtx<'_>, T) -> Result<(), CmdbError> + Send + 'static,
    ) -> Result<impl std::future::Future<Output = Result<(), CmdbError>> + Send + 'static, CmdbError> {
        if let Some(refused) = self.inner.storage.refusal() {
            return Err(refused);
        }
        let (growth, cache) = (self.inner.growth.clone(), self.inner.racks.clone());
        let (done_tx, done_rx) = oneshot::channel();
        let job: Job = Box::new(move |ctx| {
            let out = check(ctx).and_then(|checked| {
                machines::observe(ctx, &sighting, events, &growth)?;
                racks::place_sighted(ctx, &cache, &sighting)?;
                put(ctx, checked)
            });
            Box::new(move |committed: Result<(), CmdbError>| {
                let _ = done_tx.send(committed.and(out));
            })
        });
        let tx = self.inner.tx.as_ref().expect("sender lives as long as the handle");
        tx.try_send(super::writer::Queued::normal(job)).map_err(|e| match e {
            tokio::sync::mpsc::error::TrySendError::Full(_) => CmdbError::Storage("the write queue is full".into()),
            tokio::sync::mpsc::error::TrySendError::Closed(_) => CmdbError::Storage("cmdb writer stopped".into()),
        })?;
        let this = self.clone();
        Ok(async move { done_rx.await.map_err(|_| this.dropped())?.map_err(|e| this.explained(e)) })
    }

    /// The MAC holding an unexpired lease on `ip`, from the in-memory index.
    pub fn lease_holder(&self, ip: Ipv4Addr) -> Option<rackboot_model::mac::Mac> {
        self.inner.index.read().expect("index lock").active_lease_to(ip, super::now_secs())
    }

    /// Records an event for whichever machine holds a lease on `ip`; returns whether one did.
    pub fn record_for_ip(&self, ip: Ipv4Addr, kind: EventKind, detail: serde_json::Value) -> bool {
        let mac = self.inner.index.read().expect("index lock").leased_to(ip);
        if let Some(mac) = mac {
            self.record_firmware(
                Some(ip.into()),
                Sighting { mac: Some(mac), ..Default::default() },
                vec![(kind, detail)],
            );
        }
        mac.is_some()
    }

    /// Records an event for whichever machine holds a DHCPv6 lease on `ip` (or, with none, the
    /// machine SLAAC formed `ip` from); returns whether one did.
    pub fn record_for_ip6(&self, ip: std::net::Ipv6Addr, kind: EventKind, detail: serde_json::Value) -> bool {
        let held = self.inner.index.read().expect("index lock").active_lease6_to(ip, super::now_secs());
        let mac =
            held.or_else(|| rackboot_model::lease6::mac_from_eui64(ip).filter(|m| self.brief_by_mac(*m).is_some()));
        if let Some(mac) = mac {
            self.record_firmware(
                Some(ip.into()),
                Sighting { mac: Some(mac), ..Default::default() },
                vec![(kind, detail)],
            );
        }
        mac.is_some()
    }

    /// Records a sighting from an unauthenticated firmware request (a boot script, a TFTP or
    /// HTTP boot file) from `from` without waiting, within its budget ([`FirmwareBudget`]: so
    /// many queued in all, per source address and per MAC; past it the sighting is shed and
    /// counted, `rackboot_cmdb_writes_shed_total`), and behind every other write (a few per
    /// batch, see `writer::LOW_PER_BATCH`). A flood of such requests (one client can send
    /// thousands a second with made-up MACs) then never fills the queue that DHCP's lease
    /// writes and its admission of new clients depend on, nor takes their batches.
    pub fn record_firmware(
        &self,
        from: Option<std::net::IpAddr>,
        sighting: Sighting,
        events: Vec<(EventKind, serde_json::Value)>,
    ) {
        let Some(slot) = FirmwareBudget::take(&self.inner.firmware_queued, from, sighting.mac) else {
            self.inner.stats.shed.inc();
            return;
        };
        let (growth, cache) = (self.inner.growth.clone(), self.inner.racks.clone());
        self.write_detached_as(true, move |ctx| {
            let _slot = slot;
            machines::observe(ctx, &sighting, events, &growth)?;
            racks::place_sighted(ctx, &cache, &sighting)
        });
    }

    /// Records a sighting and timeline events without waiting.
    pub fn record(&self, sighting: Sighting, events: Vec<(EventKind, serde_json::Value)>) {
        let (growth, cache) = (self.inner.growth.clone(), self.inner.racks.clone());
        self.write_detached(move |ctx| {
            machines::observe(ctx, &sighting, events, &growth)?;
            racks::place_sighted(ctx, &cache, &sighting)
        });
    }
}

/// Firmware sightings queued at most (well under DHCP's own backlog limits: 512 on a shared
/// store, 4,096 on the embedded one)...
pub const FIRMWARE_SIGHTINGS_QUEUED: usize = 128;
/// ...of which one source address may hold (so one client cannot take the budget from the
/// machines that boot meanwhile)...
pub const FIRMWARE_QUEUED_PER_SOURCE: usize = 16;
/// ...and one MAC (a machine's own sightings come seconds apart; a flood naming it does not).
pub const FIRMWARE_QUEUED_PER_MAC: usize = 2;

/// Firmware sightings waiting in the writer's queue: in all, per source address, per MAC.
#[derive(Debug, Default)]
pub struct FirmwareBudget(std::sync::Mutex<Queued>);

#[derive(Debug, Default)]
struct Queued {
    total: usize,
    sources: std::collections::HashMap<std::net::IpAddr, usize>,
    macs: std::collections::HashMap<rackboot_model::mac::Mac, usize>,
}

impl FirmwareBudget {
    /// A place for one sighting from `from` of `mac`, if every budget has room; given back
    /// when the write runs or is dropped unrun.
    pub(crate) fn take(
        budget: &std::sync::Arc<FirmwareBudget>,
        from: Option<std::net::IpAddr>,
        mac: Option<rackboot_model::mac::Mac>,
    ) -> Option<FirmwareSlot> {
        let mut q = budget.0.lock().expect("firmware budget lock");
        let full = q.total >= FIRMWARE_SIGHTINGS_QUEUED
            || from.is_some_and(|a| q.sources.get(&a).is_some_and(|n| *n >= FIRMWARE_QUEUED_PER_SOURCE))
            || mac.is_some_and(|m| q.macs.get(&m).is_some_and(|n| *n >= FIRMWARE_QUEUED_PER_MAC));
        if full {
            return None;
        }
        q.total += 1;
        if let Some(a) = from {
            *q.sources.entry(a).or_default() += 1;
        }
        if let Some(m) = mac {
            *q.macs.entry(m).or_default() += 1;
        }
        Some(FirmwareSlot { budget: budget.clone(), from, mac })
    }

    /// Sightings queued in all.
    #[cfg(test)]
    pub fn queued(&self) -> usize {
        self.0.lock().expect("firmware budget lock").total
    }
}

/// One queued firmware sighting's place in its budgets.
pub(crate) struct FirmwareSlot {
    budget: std::sync::Arc<FirmwareBudget>,
    from: Option<std::net::IpAddr>,
    mac: Option<rackboot_model::mac::Mac>,
}

impl Drop for FirmwareSlot {
    fn drop(&mut self) {
        let mut q = self.budget.0.lock().expect("firmware budget lock");
        q.total = q.total.saturating_sub(1);
        fn give_back<K: std::hash::Hash + Eq>(map: &mut std::collections::HashMap<K, usize>, key: &K) {
            if let Some(n) = map.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    map.remove(key);
                }
            }
        }
        if let Some(a) = self.from {
            give_back(&mut q.sources, &a);
        }
        if let Some(m) = self.mac {
            give_back(&mut q.macs, &m);
        }
    }
}
