use super::*;
use crate::Sighting;
use rackboot_model::mac::Mac;

async fn seeded(dir: &Path, n: u64) -> Cmdb {
    let db = Cmdb::open(&dir.join("rackboot.redb"), 64).unwrap();
    for i in 0..n {
        let mac: Mac = format!("02:00:00:00:00:{i:02x}").parse().unwrap();
        db.record(Sighting { mac: Some(mac), ..Default::default() }, vec![]);
    }
    db.flush().await.unwrap();
    db
}

#[tokio::test]
async fn a_snapshot_taken_while_writing_holds_every_write_acknowledged_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = seeded(dir.path(), 20).await;
    // Writes keep coming while the snapshot is taken.
    let writer = {
        let db = db.clone();
        tokio::spawn(async move {
            for i in 20..60u64 {
                let mac: Mac = format!("02:00:00:00:01:{i:02x}").parse().unwrap();
                db.record(Sighting { mac: Some(mac), ..Default::default() }, vec![]);
                db.flush().await.unwrap();
            }
        })
    };
    let dest = dir.path().join("snap.redb");
    let got = db.snapshot(&dest).await.unwrap();
    assert!(got.machines >= 20, "{got}");
    writer.await.unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777, 0o600);
    // An existing file is never overwritten.
    let again = db.snapshot(&dest).await.unwrap_err();
    assert!(again.to_string().contains("snap.redb"), "{again}");
    assert_eq!(inspect(&dest).unwrap().machines, got.machines, "the failed try left the first snapshot alone");
}

#[tokio::test]
async fn restore_refuses_a_running_appliance_and_junk_and_keeps_the_replaced_file() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("rackboot.redb");
    let db = seeded(dir.path(), 5).await;
    let snap = dir.path().join("snap.redb");
    db.snapshot(&snap).await.unwrap();
    let err = restore(&live, &snap).unwrap_err();
    assert!(err.to_string().contains("stop it before restoring"), "{err}");
    drop(db);

    // More machines after the backup; the restore brings back the five.
    let db = Cmdb::open(&live, 64).unwrap();
    for i in 0..3u64 {
        let mac: Mac = format!("02:00:00:00:02:{i:02x}").parse().unwrap();
        db.record(Sighting { mac: Some(mac), ..Default::default() }, vec![]);
    }
    db.flush().await.unwrap();
    drop(db);
    let junk = dir.path().join("junk.redb");
    std::fs::write(&junk, b"not a database").unwrap();
    let err = restore(&live, &junk).unwrap_err();
    assert!(err.to_string().contains("cannot be restored"), "{err}");
    assert_eq!(inspect(&live).unwrap().machines, 8, "a refused restore leaves the live file alone");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().filter_map(Result::ok).collect();
    assert!(leftovers.iter().all(|e| !e.file_name().to_string_lossy().starts_with(".restore")), "{leftovers:?}");

    let (contents, kept) = restore(&live, &snap).unwrap();
    assert_eq!(contents.machines, 5);
    assert_eq!(inspect(&kept.unwrap()).unwrap().machines, 8, "the replaced file is kept");
    let db = Cmdb::open(&live, 64).unwrap();
    drop(db);
    assert_eq!(inspect(&live).unwrap().machines, 5, "the restored file opens as a CMDB");
}

#[test]
fn prune_keeps_the_newest_snapshots_only() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "rackboot-20261101T000000Z.redb",
        "rackboot-20261102T000000Z.redb",
        "rackboot-20261103T000000Z.redb",
        "other.redb",
    ] {
        std::fs::write(dir.path().join(name), b"x").unwrap();
    }
    assert_eq!(prune(dir.path(), 2), 1);
    let mut left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["other.redb", "rackboot-20261102T000000Z.redb", "rackboot-20261103T000000Z.redb"]);
}

#[test]
fn snapshot_names_carry_a_sortable_utc_stamp() {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_000_000);
    assert_eq!(utc_stamp(t), "20261118T110640Z");
}

#[tokio::test]
async fn scheduled_backups_keep_the_newest_few() {
    let dir = tempfile::tempdir().unwrap();
    let db = seeded(dir.path(), 3).await;
    let day = |d: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_000_000 + d * 86_400);
    for d in 0..3 {
        let (name, contents, _) = db.scheduled_backup(day(d), 2).await.unwrap();
        assert_eq!(contents.machines, 3, "{name}");
    }
    let mut snaps: Vec<PathBuf> = std::fs::read_dir(db.backup_dir()).unwrap().map(|e| e.unwrap().path()).collect();
    snaps.sort();
    let names: Vec<_> = snaps.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["rackboot-20261119T110640Z.redb", "rackboot-20261120T110640Z.redb"], "the oldest pruned");
    // The loop itself: stops when told to.
    let stop = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(db.clone().scheduled_backups(std::time::Duration::from_secs(3600), 2, stop.clone()));
    stop.cancel();
    task.await.unwrap().unwrap();
}
