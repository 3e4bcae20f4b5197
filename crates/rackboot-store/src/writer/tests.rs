use crate::{Cmdb, CmdbError, Sighting};

#[tokio::test]
async fn a_panicking_write_rolls_back_its_batch_and_the_writer_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = Cmdb::open_for_test(&dir.path().join("c.redb"), 64).unwrap();
    let err = db.write(|_| -> Result<(), CmdbError> { panic!("a bug in one write") }).await.unwrap_err();
    assert!(err.to_string().contains("writer") || err.to_string().contains("panicked"), "{err}");
    // The next writes commit as usual.
    let mac = "52:54:00:00:99:01".parse().unwrap();
    db.record(Sighting { mac: Some(mac), ..Default::default() }, vec![]);
    db.flush().await.unwrap();
    // (Counted once the panicked batch is wound up, which the flush's batch comes after.)
    assert_eq!(db.writer_stats().panics.get(), 1);
    assert!(db.brief_by_mac(mac).is_some(), "the writer went on after the panic");
    let metrics = rackboot_base::metrics::Metrics { cmdb_writer: db.writer_stats().clone(), ..Default::default() };
    let text = metrics.render();
    assert!(text.contains("rackboot_cmdb_batch_panics_total 1"), "{text}");
    let timed: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("rackboot_cmdb_commit_seconds_count "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    // The panicked batch and the one or two after it (the sighting may share the flush's).
    assert!((2..=3).contains(&timed), "every batch is timed ({timed}):\n{text}");
}

#[tokio::test]
async fn lease_changes_to_one_address_land_in_the_order_they_were_queued() {
    use crate::model::SCHEMA_VERSION;
    use crate::{now_secs, Lease, LeaseState};
    let dir = tempfile::tempdir().unwrap();
    let db = Cmdb::open_for_test(&dir.path().join("c.redb"), 64).unwrap();
    let lease = |state, n: u64| Lease {
        v: SCHEMA_VERSION,
        ip: "198.18.0.100".parse().unwrap(),
        mac: "52:54:00:00:99:02".parse().unwrap(),
        hostname: None,
        client_hostname: None,
        expires_at: now_secs() + 3600 + n,
        state,
        updated_at: now_secs(),
    };
    // ACK, RELEASE, ACK, RELEASE ... decided in this order; the waits run in any order.
    let mut waits = Vec::new();
    for n in 0..200u64 {
        let state = if n % 2 == 0 { LeaseState::Active } else { LeaseState::Released };
        waits.push(tokio::spawn(db.queue_lease(lease(state, n), Sighting::default(), vec![]).unwrap()));
    }
    for w in waits.into_iter().rev() {
        w.await.unwrap().unwrap();
    }
    let stored = db.leases().await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!((stored[0].state, stored[0].expires_at - now_secs() > 3600 + 190), (LeaseState::Released, true));
}

#[tokio::test]
async fn every_awaited_write_is_uncounted_once_its_job_has_run_so_lingering_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = Cmdb::open_for_test(&dir.path().join("c.redb"), 64).unwrap();
    // Concurrent awaited writers, a panicking one among them.
    let mut writes = tokio::task::JoinSet::new();
    for i in 0..40 {
        let db = db.clone();
        writes.spawn(async move {
            db.write(move |_| if i == 7 { panic!("a bug in one write") } else { Ok::<_, CmdbError>(()) }).await
        });
    }
    let mut failed = 0;
    while let Some(w) = writes.join_next().await {
        failed += usize::from(w.unwrap().is_err());
    }
    assert!(failed >= 1, "the panicking write failed (and its batch with it)");
    assert!(!db.inner.awaited.any(), "a leaked count would stop the writer from ever lingering again");
}
