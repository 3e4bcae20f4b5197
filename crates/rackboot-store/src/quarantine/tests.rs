use super::*;
use crate::Sighting;

#[tokio::test]
async fn an_undecodable_record_is_quarantined_and_the_rest_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.redb");
    let db = Cmdb::open(&path, 64).unwrap();
    for i in 0..3u8 {
        let mac = format!("52:54:00:00:aa:0{i}").parse().unwrap();
        db.record(Sighting { mac: Some(mac), ..Default::default() }, vec![]);
    }
    db.flush().await.unwrap();
    assert_eq!(db.quarantined(), 0);
    drop(db);

    // A bad block, a bug in another version: machine 2's record no longer decodes.
    {
        let raw = redb::Database::create(&path).unwrap();
        let tx = raw.begin_write().unwrap();
        tx.open_table(MACHINES.redb).unwrap().insert(2, b"{\"v\":1,\"id\":2,\"macs\":[\x00".as_slice()).unwrap();
        tx.commit().unwrap();
    }
    let db = Cmdb::open(&path, 64).expect("the CMDB opens despite the bad record");
    assert_eq!(db.quarantined(), 1);
    let q = db.quarantine().await.unwrap();
    assert_eq!((q.len(), q[0].table.as_str(), q[0].key), (1, "machines", 2));
    let page = db.list_machines(Default::default()).await.unwrap();
    assert_eq!(page.total, 2, "the other machines are there");
    db.flush().await.unwrap();
    let ev = db.events(0, 0, 100).await.unwrap();
    assert!(ev.iter().any(|e| e.kind == crate::EventKind::CmdbQuarantined), "{ev:?}");
    drop(db);

    // Kept across restarts until cleared; a clean start moves nothing more.
    let db = Cmdb::open(&path, 64).unwrap();
    assert_eq!(db.quarantined(), 1);
    assert_eq!(db.clear_quarantine().await.unwrap(), 1);
    assert_eq!((db.quarantined(), db.quarantine().await.unwrap().len()), (0, 0));
}
