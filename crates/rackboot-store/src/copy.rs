//! Copying a whole CMDB from one store to another (`rackboot store migrate`, and snapshots of a
//! PostgreSQL store into a file): every table, read in one snapshot, written in one
//! transaction, then read back and compared table by table, by row count and a SHA-256 of the
//! rows in key order. Rows are compared in the embedded store's encoding, so a copy verifies
//! the same whichever way it goes.

use sha2::{Digest, Sha256};

use super::kv::{Db, Def, PgCols, ReadTx, WriteTx};
use super::leases6::LEASES6;
use super::nonces::BOOT_NONCES;
use super::quarantine::QUARANTINE;
use super::store::*;
use super::tang::{TANG_BINDINGS, TANG_KEYS};
use super::templates::TEMPLATES;
use super::tokens::BOOT_TOKENS;
use super::userdata::USER_DATA;
use super::webhooks::WEBHOOKS;
use super::CmdbError;

/// What one table held.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TableSum {
    pub table: &'static str,
    pub rows: u64,
    /// SHA-256 over the rows in key order (key length, key, value length, value).
    pub sha256: String,
}

/// Runs `$f(def)` for every table of the CMDB, collecting the results.
macro_rules! every_table {
    ($f:expr) => {
        vec![
            $f(META)?,
            $f(MACHINES)?,
            $f(MACS)?,
            $f(LEASES)?,
            $f(EVENTS)?,
            $f(EVENT_LOG)?,
            $f(PROFILES)?,
            $f(TEMPLATES)?,
            $f(USER_DATA)?,
            $f(AGENTS)?,
            $f(BOOT_NONCES)?,
            $f(JOBS)?,
            $f(MACHINE_JOBS)?,
            $f(ACTIVE_JOBS)?,
            $f(JOB_OUTPUT)?,
            $f(TASKS)?,
            $f(RUNS)?,
            $f(ACTIVE_RUNS)?,
            $f(MACHINE_RUNS)?,
            $f(USERS)?,
            $f(TOKENS)?,
            $f(AUDIT)?,
            $f(RACKS)?,
            $f(PLUGIN_KEYS)?,
            $f(PLUGINS)?,
            $f(PLUGIN_ACTIVE)?,
            $f(BMCS)?,
            $f(QUARANTINE)?,
            $f(WEBHOOKS)?,
            $f(TANG_KEYS)?,
            $f(TANG_BINDINGS)?,
            $f(LEASES6)?,
            $f(BOOT_TOKENS)?,
        ]
    };
}

/// Copies every table of `from` into `to`, which must hold no records (a fresh store: its
/// counters are overwritten), and verifies the copy. Returns what was copied.
pub fn copy_store(from: &Db, to: &Db) -> Result<Vec<TableSum>, CmdbError> {
    let wtx = to.begin_write()?;
    wtx.serialize()?;
    let occupied: Vec<(&str, u64)> = every_table!(|def| occupied(&wtx, def)).into_iter().flatten().collect();
    if !occupied.is_empty() {
        let what: Vec<String> = occupied.iter().map(|(t, n)| format!("{n} {t}")).collect();
        return Err(CmdbError::Conflict(format!(
            "the target store is not empty ({}): copy into a new, empty one",
            what.join(", ")
        )));
    }
    let rtx = from.begin_read()?;
    let copied: Vec<TableSum> = every_table!(|def| copy_table(&rtx, &wtx, def));
    drop(rtx);
    wtx.commit()?;
    let check = to.begin_read()?;
    let found: Vec<TableSum> = every_table!(|def| sum_table(&check, def));
    for (want, got) in copied.iter().zip(&found) {
        if want != got {
            return Err(CmdbError::Storage(format!(
                "the copy does not match: table {} has {} rows (sha256 {}) where the source has {} ({})",
                got.table, got.rows, got.sha256, want.rows, want.sha256
            )));
        }
    }
    Ok(copied)
}

/// The table's name and row count if it holds records (counters in `meta` do not count).
fn occupied<K: PgCols + redb::Key, V: PgCols>(
    tx: &WriteTx,
    def: Def<K, V>,
) -> Result<Option<(&'static str, u64)>, CmdbError> {
    if def.name == META.name {
        return Ok(None);
    }
    let n = tx.open_table(def)?.len()?;
    Ok((n > 0).then_some((def.name, n)))
}

fn hash_row(h: &mut Sha256, k: &[u8], v: &[u8]) {
    h.update((k.len() as u64).to_le_bytes());
    h.update(k);
    h.update((v.len() as u64).to_le_bytes());
    h.update(v);
}

fn copy_table<K: PgCols + redb::Key, V: PgCols>(
    rtx: &ReadTx,
    wtx: &WriteTx,
    def: Def<K, V>,
) -> Result<TableSum, CmdbError> {
    let (mut rows, mut h) = (0, Sha256::new());
    let Some(src) = rtx.open_table_if_any(def)? else { return Ok(sum(def.name, 0, h)) };
    let mut dst = wtx.open_table(def)?;
    for row in src.iter()? {
        let (k, v) = row?;
        let (k, v) = (k.value(), v.value());
        hash_row(&mut h, K::as_bytes(&k).as_ref(), V::as_bytes(&v).as_ref());
        dst.insert(k, v)?;
        rows += 1;
    }
    Ok(sum(def.name, rows, h))
}

fn sum_table<K: PgCols + redb::Key, V: PgCols>(rtx: &ReadTx, def: Def<K, V>) -> Result<TableSum, CmdbError> {
    let (mut rows, mut h) = (0, Sha256::new());
    if let Some(t) = rtx.open_table_if_any(def)? {
        for row in t.iter()? {
            let (k, v) = row?;
            hash_row(&mut h, K::as_bytes(&k.value()).as_ref(), V::as_bytes(&v.value()).as_ref());
            rows += 1;
        }
    }
    Ok(sum(def.name, rows, h))
}

fn sum(table: &'static str, rows: u64, h: Sha256) -> TableSum {
    TableSum { table, rows, sha256: rackboot_base::secret::hex(&h.finalize()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cmdb, Lease, LeaseState, NewMachine, Sighting};

    /// A CMDB with a bit of everything, written through the handle and closed.
    async fn filled(path: &std::path::Path) {
        let db = Cmdb::open(path, 64).unwrap();
        for i in 1..=5u8 {
            let mac = format!("52:54:00:00:10:0{i}").parse().unwrap();
            let m = db
                .create_machine(NewMachine {
                    macs: vec![mac],
                    hostname: Some(format!("node{i}")),
                    ..Default::default()
                })
                .await
                .unwrap();
            let lease = Lease {
                v: crate::model::SCHEMA_VERSION,
                ip: std::net::Ipv4Addr::new(198, 18, 0, 10 + i),
                mac,
                hostname: m.hostname.clone(),
                client_hostname: None,
                expires_at: crate::now_secs() + 600,
                state: LeaseState::Active,
                updated_at: crate::now_secs(),
            };
            db.commit_lease(lease, Sighting { mac: Some(mac), ..Default::default() }, vec![]).await.unwrap();
        }
        db.flush().await.unwrap();
    }

    /// File -> second store (PostgreSQL when RACKBOOT_TEST_POSTGRES is set, else another file)
    /// -> a new file: every table arrives with the same rows, and the last file opens as a CMDB
    /// holding what the first did.
    #[tokio::test]
    async fn a_store_copies_there_and_back_verified() {
        let dir = tempfile::tempdir().unwrap();
        let (first, last) = (dir.path().join("first.redb"), dir.path().join("last.redb"));
        filled(&first).await;
        let middle_file = dir.path().join("middle.redb");
        let (there, back) = tokio::task::spawn_blocking(move || {
            let src = crate::schema::open_file(&first).unwrap();
            let middle = match crate::kv::pg::test_config() {
                Some(cfg) => Db::open_postgres(&cfg).unwrap(),
                None => crate::schema::open_file(&middle_file).unwrap(),
            };
            let there = copy_store(&src, &middle).unwrap();
            let refused = copy_store(&src, &middle).unwrap_err().to_string();
            assert!(refused.contains("not empty") && refused.contains("5 machines"), "{refused}");
            let back = copy_store(&middle, &crate::schema::open_file(&last).unwrap()).unwrap();
            (there, back)
        })
        .await
        .unwrap();
        assert_eq!(there, back, "the same rows both ways");
        let rows = |t: &str| there.iter().find(|s| s.table == t).unwrap().rows;
        assert_eq!((rows("machines"), rows("leases"), rows("macs")), (5, 5, 5));
        assert!(rows("events") >= 5, "{there:?}");
        let db = Cmdb::open(&dir.path().join("last.redb"), 64).unwrap();
        let page = db.list_machines(Default::default()).await.unwrap();
        assert_eq!(page.total, 5);
        assert_eq!(db.leases().await.unwrap().len(), 5);
        let m = db.brief_by_mac("52:54:00:00:10:03".parse().unwrap()).expect("indexed after the copy");
        assert_eq!(m.hostname.as_deref(), Some("node3"));
    }
}
