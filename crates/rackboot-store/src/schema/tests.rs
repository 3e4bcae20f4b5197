use super::*;

#[test]
fn new_file_gets_current_schema_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.redb");
    drop(open(&path).unwrap());
    let db = open(&path).unwrap();
    let rtx = db.begin_read().unwrap();
    let meta = rtx.open_table(META.redb).unwrap();
    assert_eq!(meta.get(KEY_SCHEMA).unwrap().unwrap().value(), SCHEMA_VERSION);
    assert_eq!(meta.get(KEY_NEXT_MACHINE).unwrap().unwrap().value(), 1);
}

#[test]
fn a_schema_10_file_gets_the_index_of_each_machines_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.redb");
    {
        let db = open(&path).unwrap();
        let tx = db.begin_write().unwrap();
        tx.delete_table(MACHINE_RUNS.redb).unwrap();
        {
            let mut runs = tx.open_table(RUNS.redb).unwrap();
            for (id, machine) in [(1u64, Some(7)), (2, None), (3, Some(7)), (4, Some(9))] {
                let run = Run::new(id, 1, id as u32, machine, 0);
                runs.insert(id, encode(&run).as_slice()).unwrap();
            }
        }
        tx.open_table(META.redb).unwrap().insert(KEY_SCHEMA, 10).unwrap();
        tx.commit().unwrap();
    }
    let db = open(&path).unwrap();
    let rtx = db.begin_read().unwrap();
    let index = rtx.open_table(MACHINE_RUNS.redb).unwrap();
    let keys: Vec<(u64, u64)> = index.iter().unwrap().map(|r| r.unwrap().0.value()).collect();
    assert_eq!(keys, [(7, 1), (7, 3), (9, 4)], "every bound run, by machine; none for an unbound one");
}

#[test]
fn a_schema_1_file_is_migrated_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.redb");
    {
        // Make a schema-1 file: current tables minus what 1 -> 2 adds, version 1.
        let db = open(&path).unwrap();
        let tx = db.begin_write().unwrap();
        tx.delete_table(PROFILES.redb).unwrap();
        tx.open_table(MACS.redb).unwrap().insert(7, 42).unwrap();
        tx.open_table(META.redb).unwrap().insert(KEY_SCHEMA, 1).unwrap();
        tx.commit().unwrap();
    }
    let db = open(&path).unwrap();
    let rtx = db.begin_read().unwrap();
    assert_eq!(rtx.open_table(META.redb).unwrap().get(KEY_SCHEMA).unwrap().unwrap().value(), SCHEMA_VERSION);
    assert!(rtx.open_table(PROFILES.redb).is_ok(), "migration created the profiles table");
    assert_eq!(rtx.open_table(MACS.redb).unwrap().get(7).unwrap().unwrap().value(), 42);
}

#[test]
fn newer_schema_is_refused_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.redb");
    {
        let db = open(&path).unwrap();
        let tx = db.begin_write().unwrap();
        tx.open_table(META.redb).unwrap().insert(KEY_SCHEMA, SCHEMA_VERSION + 1).unwrap();
        tx.commit().unwrap();
    }
    let err = open(&path).unwrap_err().to_string();
    assert!(err.contains("newer than this rackboot"), "{err}");
}
