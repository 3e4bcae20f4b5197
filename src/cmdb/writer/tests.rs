use crate::cmdb::{Cmdb, CmdbError, Sighting};

#[tokio::test]
async fn a_panicking_write_rolls_back_its_batch_and_the_writer_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = Cmdb::open(&dir.path().join("c.redb"), 64).unwrap();
    let err = db.write(|_| -> Result<(), CmdbError> { panic!("a bug in one write") }).await.unwrap_err();
    assert!(err.to_string().contains("writer") || err.to_string().contains("panicked"), "{err}");
    assert_eq!(db.writer_stats().panics.get(), 1);
    // The next writes commit as usual.
    let mac = "52:54:00:00:99:01".parse().unwrap();
    db.record(Sighting { mac: Some(mac), ..Default::default() }, vec![]);
    db.flush().await.unwrap();
    assert!(db.brief_by_mac(mac).is_some(), "the writer went on after the panic");
    let metrics = crate::metrics::Metrics { cmdb_writer: db.writer_stats().clone(), ..Default::default() };
    let text = metrics.render();
    assert!(text.contains("rackboot_cmdb_batch_panics_total 1"), "{text}");
    assert!(text.contains("rackboot_cmdb_commit_seconds_count 2"), "both batches are timed:\n{text}");
}
