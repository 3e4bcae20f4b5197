//! DHCPv6 leases: their table (created on the first write), reads, and a lease write queued
//! with the sighting from the same packet, as for IPv4 (`leases`).

use super::events::EventKind;
use super::index::{Delta, LeaseBrief};
use super::kv::{Def, ReadTx};
use super::model::LeaseState;
use super::store::WriteCtx;
use super::store::{decode, encode};
use super::{now_secs, Cmdb, CmdbError, Sighting};
use rackboot_model::lease6::Lease6;

/// IPv6 address (its 16 bytes, so the table is in address order) -> JSON `Lease6`.
pub const LEASES6: Def<&[u8], &[u8]> = Def::new("leases6");

impl Cmdb {
    /// Every DHCPv6 lease as stored, in address order (the DHCPv6 server loads them at start).
    pub async fn leases6(&self) -> Result<Vec<Lease6>, CmdbError> {
        self.read(|rtx| {
            let Some(t) = rtx.open_table_if_any(LEASES6)? else { return Ok(Vec::new()) };
            let mut out = Vec::new();
            for row in t.range::<&[u8]>(..)? {
                out.push(decode(row?.1.value())?);
            }
            Ok(out)
        })
        .await
    }

    /// The stored DHCPv6 lease on `ip`, in whatever state.
    pub async fn lease6(&self, ip: std::net::Ipv6Addr) -> Result<Option<Lease6>, CmdbError> {
        self.read(move |rtx| {
            let Some(t) = rtx.open_table_if_any(LEASES6)? else { return Ok(None) };
            let Some(v) = t.get(ip.octets().as_slice())? else { return Ok(None) };
            Ok(Some(decode(v.value())?))
        })
        .await
    }

    /// DHCPv6 leases in address order after `after`, at most `limit`, and whether more follow.
    pub async fn lease6_page(
        &self,
        after: Option<std::net::Ipv6Addr>,
        limit: usize,
    ) -> Result<(Vec<Lease6>, bool), CmdbError> {
        self.read(move |rtx| {
            let Some(t) = rtx.open_table_if_any(LEASES6)? else { return Ok((Vec::new(), false)) };
            let from = after.map(|a| a.octets());
            let rows = match &from {
                Some(k) => t.range::<&[u8]>((std::ops::Bound::Excluded(k.as_slice()), std::ops::Bound::Unbounded))?,
                None => t.range::<&[u8]>(..)?,
            };
            let mut out = Vec::new();
            for row in rows {
                if out.len() == limit {
                    return Ok((out, true));
                }
                out.push(decode(row?.1.value())?);
            }
            Ok((out, false))
        })
        .await
    }

    /// Queues a DHCPv6 lease write now, in the caller's order, with what was learned from the
    /// packet; what it returns resolves once the write has committed (a REPLY goes out only
    /// then). With the write queue full it is refused at once: the client retransmits.
    pub fn queue_lease6(
        &self,
        lease: Lease6,
        sighting: Sighting,
        events: Vec<(EventKind, serde_json::Value)>,
    ) -> Result<impl std::future::Future<Output = Result<(), CmdbError>> + Send + 'static, CmdbError> {
        self.queue_sighted(
            sighting,
            events,
            move |ctx| check_free(ctx, &lease).map(|()| lease),
            |ctx, lease| put(ctx, &lease),
        )
    }
}

/// Refuses a lease on an address another client holds in the table (on a shared store another
/// appliance may have given it out; the embedded store's only writer is this server, which
/// checked its own map).
fn check_free(ctx: &WriteCtx<'_>, lease: &Lease6) -> Result<(), CmdbError> {
    if !ctx.t.tx.shared() {
        return Ok(());
    }
    let table = ctx.t.tx.open_table(LEASES6)?;
    let Some(held) = table.get(lease.ip.octets().as_slice())? else { return Ok(()) };
    let held: Lease6 = decode(held.value())?;
    if lease.state == LeaseState::Active && held.held_by_other(&lease.duid, lease.iaid, now_secs()) {
        return Err(CmdbError::Conflict(format!(
            "{} is leased to DUID {} (through another appliance) until {}",
            lease.ip, held.duid, held.expires_at
        )));
    }
    Ok(())
}

fn put(ctx: &mut WriteCtx<'_>, lease: &Lease6) -> Result<(), CmdbError> {
    ctx.t.tx.open_table(LEASES6)?.insert(lease.ip.octets().as_slice(), encode(lease).as_slice())?;
    ctx.delta.push(Delta::Lease6(lease.ip, brief(lease, u64::MIN)));
    Ok(())
}

/// What the index keeps of `l`: an active lease, unexpired at `now`, of a client whose MAC is
/// known (DNS names machines, found by MAC).
fn brief(l: &Lease6, now: u64) -> Option<LeaseBrief> {
    let mac = l.mac?;
    (l.state == LeaseState::Active && l.expires_at > now).then_some(LeaseBrief {
        mac,
        hostname: None,
        expires_at: l.expires_at,
    })
}

/// The index's deltas for every DHCPv6 address held at `now` (the index is built from these at
/// start and on a follower's reload).
pub(super) fn held(rtx: &ReadTx, now: u64) -> Result<Vec<Delta>, CmdbError> {
    let Some(t) = rtx.open_table_if_any(LEASES6)? else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for row in t.range::<&[u8]>(..)? {
        let l: Lease6 = decode(row?.1.value())?;
        if let Some(b) = brief(&l, now) {
            out.push(Delta::Lease6(l.ip, Some(b)));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::net::Ipv6Addr;

    use super::*;
    use crate::whereabouts::RELEASED6_GRACE_SECS;

    fn lease(mac: Option<[u8; 6]>, expires_at: u64, state: LeaseState) -> Lease6 {
        Lease6 {
            v: 1,
            ip: Ipv6Addr::LOCALHOST,
            duid: "0003000152540000000a".into(),
            iaid: 7,
            mac: mac.map(rackboot_model::mac::Mac),
            expires_at,
            state,
            updated_at: 0,
        }
    }

    fn at(ip: &str, duid: &str, iaid: u32, expires_at: u64) -> Lease6 {
        Lease6 {
            v: 1,
            ip: ip.parse().unwrap(),
            duid: duid.into(),
            iaid,
            mac: Some(rackboot_model::mac::Mac([0x52, 0x54, 0, 0, 6, 1])),
            expires_at,
            state: LeaseState::Active,
            updated_at: 1,
        }
    }

    /// On the embedded store, and on PostgreSQL with RACKBOOT_TEST_POSTGRES (migration 9).
    #[tokio::test]
    async fn leases_are_kept_paged_in_address_order_and_seen_by_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let cmdb = Cmdb::open_for_test(&dir.path().join("cmdb.redb"), 64).unwrap();
        assert!(cmdb.leases6().await.unwrap().is_empty(), "no table yet: nothing, not an error");
        let far = now_secs() + 600;
        for ip in ["fd18::200", "fd18::10", "fd18::1:0"] {
            let s = Sighting { mac: Some(rackboot_model::mac::Mac([0x52, 0x54, 0, 0, 6, 1])), ..Default::default() };
            cmdb.queue_lease6(at(ip, "0003000152540000060a", 1, far), s, vec![]).unwrap().await.unwrap();
        }
        let all: Vec<String> = cmdb.leases6().await.unwrap().iter().map(|l| l.ip.to_string()).collect();
        assert_eq!(all, ["fd18::10", "fd18::200", "fd18::1:0"], "address order, not text order");
        let (page, more) = cmdb.lease6_page(None, 2).await.unwrap();
        assert_eq!((page.len(), more), (2, true));
        let (rest, more) = cmdb.lease6_page(Some(page[1].ip), 2).await.unwrap();
        assert_eq!(
            (rest.iter().map(|l| l.ip.to_string()).collect::<Vec<_>>(), more),
            (vec!["fd18::1:0".to_string()], false)
        );
        let held = cmdb.inner.index.read().unwrap().active_lease6_to("fd18::200".parse().unwrap(), now_secs());
        assert_eq!(held, Some(rackboot_model::mac::Mac([0x52, 0x54, 0, 0, 6, 1])));
    }

    /// EDK2 releases its PXE lease as it starts the loader, which keeps using the address: for a
    /// while the address is still its client's (a boot nonce goes to GRUB there), and never
    /// another MAC's; once leased again, it is the new holder's; an old release counts no more.
    #[tokio::test]
    async fn a_just_released_address_stays_its_clients_for_a_while_and_no_one_elses() {
        let dir = tempfile::tempdir().unwrap();
        let cmdb = Cmdb::open_for_test(&dir.path().join("cmdb.redb"), 64).unwrap();
        let (mac, other) =
            (rackboot_model::mac::Mac([0x52, 0x54, 0, 0, 6, 1]), rackboot_model::mac::Mac([0x52, 0x54, 0, 0, 6, 2]));
        let ip: std::net::IpAddr = "fd18::100".parse().unwrap();
        let put = |lease: Lease6| {
            let s = Sighting { mac: lease.mac, ..Default::default() };
            cmdb.queue_lease6(lease, s, vec![]).unwrap()
        };
        let far = now_secs() + 600;
        put(at("fd18::100", "0003000152540000060a", 1, far)).await.unwrap();
        assert!(cmdb.is_address_of(ip, mac, None).await, "its lease");
        put(Lease6 {
            state: LeaseState::Released,
            updated_at: now_secs(),
            ..at("fd18::100", "0003000152540000060a", 1, far)
        })
        .await
        .unwrap();
        assert!(cmdb.is_address_of(ip, mac, None).await, "released moments ago");
        assert!(!cmdb.is_address_of(ip, other, None).await, "never another MAC's");
        let stale = now_secs() - RELEASED6_GRACE_SECS - 1;
        put(Lease6 {
            state: LeaseState::Released,
            updated_at: stale,
            ..at("fd18::100", "0003000152540000060a", 1, far)
        })
        .await
        .unwrap();
        assert!(!cmdb.is_address_of(ip, mac, None).await, "released long ago");
        put(Lease6 { mac: Some(other), ..at("fd18::100", "000300015254000006ff", 9, far) }).await.unwrap();
        assert!(cmdb.is_address_of(ip, other, None).await && !cmdb.is_address_of(ip, mac, None).await, "leased again");
    }

    #[test]
    fn the_index_keeps_only_held_leases_of_known_macs() {
        assert!(brief(&lease(Some([2, 0, 0, 0, 0, 1]), 10, LeaseState::Active), 5).is_some());
        assert!(brief(&lease(None, 10, LeaseState::Active), 5).is_none(), "no MAC, no name");
        assert!(brief(&lease(Some([2, 0, 0, 0, 0, 1]), 10, LeaseState::Released), 5).is_none());
        assert!(brief(&lease(Some([2, 0, 0, 0, 0, 1]), 10, LeaseState::Active), 10).is_none(), "expired");
    }
}
