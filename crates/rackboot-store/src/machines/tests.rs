use super::*;
use crate::model::SCHEMA_VERSION;
use crate::{EventKind, EVENTS_KEPT_PER_MACHINE};

fn mac(s: &str) -> Mac {
    s.parse().unwrap()
}

fn open() -> (tempfile::TempDir, Cmdb) {
    let dir = tempfile::tempdir().unwrap();
    let db = Cmdb::open_for_test(&dir.path().join("c.redb"), 64).unwrap();
    (dir, db)
}

#[tokio::test]
async fn register_update_search_delete() {
    let (_d, db) = open();
    let m = db
        .create_machine(NewMachine {
            macs: vec![mac("52:54:00:00:00:01")],
            hostname: Some("node01".into()),
            reserved_ip: Some("198.18.0.50".parse().unwrap()),
            tags: vec!["rack1".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(db.brief_by_mac(mac("52:54:00:00:00:01")).unwrap().id, m.id);
    assert_eq!(db.reserved_owner("198.18.0.50".parse().unwrap()), Some(m.id));

    let dup = db
        .create_machine(NewMachine {
            macs: vec![mac("52:54:00:00:00:02")],
            hostname: Some("NODE01".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(dup, CmdbError::Conflict(_)), "{dup}");

    let patch: MachinePatch = serde_json::from_str(r#"{"hostname":"node02","reserved_ip":null}"#).unwrap();
    let m2 = db.update_machine(m.id, patch).await.unwrap();
    assert_eq!(m2.hostname.as_deref(), Some("node02"));
    assert_eq!(db.reserved_owner("198.18.0.50".parse().unwrap()), None);

    let found = db.list_machines(MachineFilter { q: Some("NODE0".into()), ..Default::default() }).await.unwrap();
    assert_eq!((found.machines.len(), found.total), (1, 1));
    let none = db.list_machines(MachineFilter { tag: Some("rack9".into()), ..Default::default() }).await.unwrap();
    assert!(none.machines.is_empty());

    let kinds: Vec<String> = db.events(m.id, 0, 100).await.unwrap().into_iter().map(|e| e.kind.to_string()).collect();
    assert_eq!(kinds, ["machine.registered", "machine.updated"]);

    db.delete_machine(m.id).await.unwrap();
    assert!(db.brief_by_mac(mac("52:54:00:00:00:01")).is_none());
    assert!(matches!(db.machine(m.id).await, Err(CmdbError::NotFound(_))));
    assert!(db.events(m.id, 0, 100).await.unwrap().is_empty());
}

#[tokio::test]
async fn sightings_create_one_discovered_machine_per_mac_even_in_one_batch() {
    let (_d, db) = open();
    let s = Sighting {
        mac: Some(mac("52:54:00:00:00:09")),
        arch: Some("bios".into()),
        circuit_id: Some("0a0b".into()),
        remote_id: None,
    };
    for i in 0..5 {
        db.record(s.clone(), vec![(EventKind::DhcpOffer, json!({ "n": i }))]);
    }
    db.flush().await.unwrap();
    let page = db.list_machines(MachineFilter::default()).await.unwrap();
    assert_eq!(page.total, 1);
    let m = &page.machines[0];
    assert_eq!(m.state, MachineState::Discovered);
    assert_eq!(m.last_arch.as_deref(), Some("bios"));
    assert_eq!(m.circuit_id.as_deref(), Some("0a0b"));
    let events = db.events(m.id, 0, 100).await.unwrap();
    assert_eq!(events.len(), 6, "discovered + 5 offers");
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
}

#[tokio::test]
async fn leases_and_machines_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.redb");
    let lease = Lease {
        v: SCHEMA_VERSION,
        ip: "198.18.0.100".parse().unwrap(),
        mac: mac("52:54:00:00:00:03"),
        hostname: None,
        client_hostname: None,
        expires_at: now_secs() + 3600,
        state: super::super::LeaseState::Active,
        updated_at: now_secs(),
    };
    {
        let db = Cmdb::open(&path, 64).unwrap();
        let s = Sighting { mac: Some(lease.mac), ..Default::default() };
        db.commit_lease(lease.clone(), s, vec![(EventKind::DhcpAck, json!({}))]).await.unwrap();
    }
    let db = Cmdb::open(&path, 64).unwrap();
    assert_eq!(db.leases().await.unwrap(), vec![lease]);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600, "the CMDB is owner-only");
    assert!(db.brief_by_mac(mac("52:54:00:00:00:03")).is_some(), "index rebuilt from disk");
}

#[tokio::test]
async fn repeated_dhcp_chatter_folds_into_one_event_per_kind() {
    let (_d, db) = open();
    let s = Sighting { mac: Some(mac("52:54:00:00:00:0b")), ..Default::default() };
    db.record(s.clone(), vec![(EventKind::BootScript, json!({"plan": "profile"}))]);
    for _ in 0..500 {
        db.record(s.clone(), vec![(EventKind::DhcpOffer, json!({"ip": "198.18.0.9", "arch": "bios"}))]);
        db.record(s.clone(), vec![(EventKind::DhcpAck, json!({"ip": "198.18.0.9", "lease_secs": 600}))]);
    }
    db.record(s.clone(), vec![(EventKind::DhcpAck, json!({"ip": "198.18.0.10", "lease_secs": 600}))]);
    db.flush().await.unwrap();
    let m = db.machine_by_mac(mac("52:54:00:00:00:0b")).await.unwrap();
    let events = db.events(m.id, 0, 10_000).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["machine.discovered", "boot.script", "dhcp.offer", "dhcp.ack", "dhcp.ack"]);
    let (offer, ack) = (&events[2], &events[3]);
    assert_eq!((offer.detail["repeats"].as_u64(), ack.detail["repeats"].as_u64()), (Some(500), Some(500)));
    assert_eq!(ack.detail["ip"], "198.18.0.9");
    assert!(offer.detail["first_ms"].as_u64().unwrap() <= offer.at_ms);
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq), "the newest repeat keeps a new sequence number");
    assert_eq!(events[4].detail.get("repeats"), None, "another address is news");
}

#[tokio::test]
async fn a_chatty_machine_keeps_only_its_newest_events() {
    let (_d, db) = open();
    let s = Sighting { mac: Some(mac("52:54:00:00:00:0a")), ..Default::default() };
    for i in 0..(EVENTS_KEPT_PER_MACHINE + 600) {
        db.record(s.clone(), vec![(EventKind::DhcpOffer, json!({ "n": i }))]);
    }
    db.flush().await.unwrap();
    let m = db.machine_by_mac(mac("52:54:00:00:00:0a")).await.unwrap();
    let events = db.events(m.id, 0, 10_000).await.unwrap();
    assert!(events.len() <= EVENTS_KEPT_PER_MACHINE + 256, "{} events kept", events.len());
    assert!(events.len() >= EVENTS_KEPT_PER_MACHINE);
    assert_eq!(events.last().unwrap().detail["n"], EVENTS_KEPT_PER_MACHINE + 599, "the newest survive");
}

#[tokio::test]
async fn only_a_machines_known_address_is_its_own() {
    let (_d, db) = open();
    let with = db
        .create_machine(NewMachine {
            macs: vec![mac("52:54:00:00:00:41")],
            reserved_ip: Some("198.18.0.50".parse().unwrap()),
            ..Default::default()
        })
        .await
        .unwrap();
    let without =
        db.create_machine(NewMachine { macs: vec![mac("52:54:00:00:00:42")], ..Default::default() }).await.unwrap();
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    let (m41, m42) = (mac("52:54:00:00:00:41"), mac("52:54:00:00:00:42"));
    assert!(db.is_address_of(ip("198.18.0.50"), m41, Some(&with)).await, "its reservation");
    assert!(!db.is_address_of(ip("198.18.0.51"), m41, Some(&with)).await, "another address while it has one");
    // rackboot knows no address of it: no address is its own.
    assert!(!db.is_address_of(ip("198.18.0.51"), m42, Some(&without)).await, "unknown is not anyone's");
    assert!(!db.is_address_of(ip("198.18.0.50"), m42, Some(&without)).await, "someone else's reservation");
    // Seen asking for an address in a DHCP request (proxy mode): that address, and no other.
    db.saw_address(m42, "198.18.0.77".parse().unwrap());
    assert!(db.is_address_of(ip("198.18.0.77"), m42, Some(&without)).await);
    assert!(db.is_address_of(ip("::ffff:198.18.0.77"), m42, None).await, "an unknown MAC, IPv4-mapped");
    assert!(!db.is_address_of(ip("198.18.0.77"), m41, Some(&with)).await, "another MAC's");
    assert!(!db.is_address_of(ip("198.18.0.78"), m42, Some(&without)).await);
}

/// On PostgreSQL the store itself refuses to hand an address someone holds to another client
/// (a trigger on `leases`), whichever appliance asks and whatever its memory says.
#[tokio::test]
async fn the_postgres_store_refuses_a_second_client_on_a_leased_address() {
    let Some(cfg) = crate::kv::pg::test_config() else {
        eprintln!("skipped: RACKBOOT_TEST_POSTGRES does not name a PostgreSQL");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = Cmdb::open_on(&dir.path().join("c.redb"), Some(&cfg), 64).unwrap();
    let lease = |m: &str, state| Lease {
        v: SCHEMA_VERSION,
        ip: "198.18.0.77".parse().unwrap(),
        mac: mac(m),
        hostname: None,
        client_hostname: None,
        expires_at: now_secs() + 600,
        state,
        updated_at: now_secs(),
    };
    let sighting = |m: &str| Sighting { mac: Some(mac(m)), ..Default::default() };
    let first = lease("52:54:00:00:07:01", super::super::LeaseState::Active);
    db.commit_lease(first.clone(), sighting("52:54:00:00:07:01"), vec![]).await.unwrap();
    let err = db
        .commit_lease(
            lease("52:54:00:00:07:02", super::super::LeaseState::Active),
            sighting("52:54:00:00:07:02"),
            vec![],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CmdbError::Conflict(m) if m.contains("198.18.0.77 is leased to 52:54:00:00:07:01")),
        "{err}"
    );
    assert_eq!(db.leases().await.unwrap(), vec![first.clone()], "the holder keeps it");
    // Past rackboot's own check, the table's trigger refuses it too (the whole batch: a storage
    // error, no NAK for anyone), and the transaction it aborted reports the refusal at commit
    // rather than rolling back quietly.
    let (store, other) = (db.inner.storage.db().unwrap(), lease("52:54:00:00:07:03", super::super::LeaseState::Active));
    let raw = tokio::task::spawn_blocking(move || {
        let tx = store.begin_write()?;
        let _ = tx.open_table(crate::store::LEASES)?.insert(u32::from(other.ip), encode(&other).as_slice());
        tx.commit()
    })
    .await
    .unwrap()
    .unwrap_err();
    assert!(matches!(&raw, CmdbError::Storage(m) if m.contains("is leased to")), "{raw}");
    assert_eq!(db.leases().await.unwrap(), vec![first.clone()]);
    // Released, it can go to the other client.
    db.commit_lease(
        lease("52:54:00:00:07:01", super::super::LeaseState::Released),
        sighting("52:54:00:00:07:01"),
        vec![],
    )
    .await
    .unwrap();
    db.commit_lease(
        lease("52:54:00:00:07:02", super::super::LeaseState::Active),
        sighting("52:54:00:00:07:02"),
        vec![],
    )
    .await
    .unwrap();
}

/// A page is read from the store in one go (one statement on PostgreSQL) and comes back in id
/// order, whole records, without the machines deleted meanwhile, page after page.
#[tokio::test]
async fn list_pages_come_back_in_id_order_with_whole_records() {
    let (_d, db) = open();
    let mut ids = Vec::new();
    for i in 0..7u8 {
        let m = db
            .create_machine(NewMachine {
                macs: vec![mac(&format!("52:54:00:00:0e:{i:02x}"))],
                hostname: Some(format!("page-{i}")),
                tags: vec![format!("t{}", i % 2)],
                ..Default::default()
            })
            .await
            .unwrap();
        ids.push(m.id);
    }
    db.delete_machine(ids[2]).await.unwrap();
    let (mut seen, mut after) = (Vec::new(), None);
    loop {
        let page = db.list_machines(MachineFilter { after, limit: Some(2), ..Default::default() }).await.unwrap();
        assert_eq!(page.total, 6);
        for m in &page.machines {
            let i = ids.iter().position(|id| *id == m.id).unwrap();
            assert_eq!(m.hostname.as_deref(), Some(format!("page-{i}").as_str()), "the record of {}", m.id);
        }
        seen.extend(page.machines.iter().map(|m| m.id));
        match page.next_after {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let want: Vec<u64> = ids.iter().copied().filter(|id| *id != ids[2]).collect();
    assert_eq!(seen, want);
    let odd = db.list_machines(MachineFilter { tag: Some("t1".into()), ..Default::default() }).await.unwrap();
    assert_eq!(odd.machines.iter().map(|m| m.id).collect::<Vec<_>>(), vec![ids[1], ids[3], ids[5]]);
}

/// Firmware sightings have a budget of their own in the writer's queue: however fast they come,
/// no more than `FIRMWARE_QUEUED_PER_SOURCE` from one address wait (and `FIRMWARE_SIGHTINGS_QUEUED`
/// in all), the rest are shed and counted, and the queue DHCP's lease writes use stays free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_firmware_sightings_cannot_fill_the_write_queue() {
    use crate::leases::FIRMWARE_QUEUED_PER_SOURCE;
    let (_d, db) = open();
    let shed_before = db.writer_stats().shed.get();
    let mut most = 0;
    let flooder: std::net::IpAddr = "198.18.7.7".parse().unwrap();
    for n in 0..20_000u64 {
        let m = Mac::from_u64(0x5254_0100_0000 + n);
        db.record_firmware(
            Some(flooder),
            Sighting { mac: Some(m), ..Default::default() },
            vec![(EventKind::BootScript, serde_json::json!({}))],
        );
        most = most.max(db.write_backlog());
    }
    assert!(most <= FIRMWARE_QUEUED_PER_SOURCE + 1, "the queue held {most} firmware sightings of one source");
    assert!(db.writer_stats().shed.get() > shed_before, "a flood faster than the writer is shed and counted");
    // DHCP's own writes still go through at once.
    let lease_mac = mac("52:54:00:00:0f:01");
    let lease = crate::model::Lease {
        v: SCHEMA_VERSION,
        ip: "198.18.0.77".parse().unwrap(),
        mac: lease_mac,
        hostname: None,
        client_hostname: None,
        expires_at: crate::now_secs() + 600,
        state: crate::model::LeaseState::Active,
        updated_at: crate::now_secs(),
    };
    let quick = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        db.commit_lease(lease, Sighting { mac: Some(lease_mac), ..Default::default() }, vec![]),
    );
    quick.await.expect("the lease write was not starved").unwrap();
}

/// The budget in all, per source and per MAC: a place is given back when its write is done.
#[test]
fn the_firmware_budget_holds_per_source_per_mac_and_in_all() {
    use crate::leases::{
        FirmwareBudget, FIRMWARE_QUEUED_PER_MAC, FIRMWARE_QUEUED_PER_SOURCE, FIRMWARE_SIGHTINGS_QUEUED,
    };
    let budget = std::sync::Arc::new(FirmwareBudget::default());
    let a: std::net::IpAddr = "198.18.0.10".parse().unwrap();
    let victim = mac("52:54:00:00:0e:01");
    let named: Vec<_> = (0..5).filter_map(|_| FirmwareBudget::take(&budget, Some(a), Some(victim))).collect();
    assert_eq!(named.len(), FIRMWARE_QUEUED_PER_MAC, "one MAC holds two places");
    let more: Vec<_> = (0..100u64)
        .filter_map(|n| FirmwareBudget::take(&budget, Some(a), Some(Mac::from_u64(0x5254_0200_0000 + n))))
        .collect();
    assert_eq!(named.len() + more.len(), FIRMWARE_QUEUED_PER_SOURCE, "one source holds sixteen");
    let others: Vec<_> = (0..1000u64)
        .filter_map(|n| {
            let from = std::net::IpAddr::from([198, 18, 1, (n % 250) as u8]);
            FirmwareBudget::take(&budget, Some(from), Some(Mac::from_u64(0x5254_0300_0000 + n)))
        })
        .collect();
    assert_eq!(budget.queued(), FIRMWARE_SIGHTINGS_QUEUED, "and all of them 128");
    drop((named, more, others));
    assert_eq!(budget.queued(), 0, "every place is given back");
    assert!(FirmwareBudget::take(&budget, Some(a), Some(victim)).is_some());
}
