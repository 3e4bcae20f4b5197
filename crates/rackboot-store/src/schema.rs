//! Opening the CMDB file: created where missing, its schema brought up to
//! [`SCHEMA_VERSION`](super::model::SCHEMA_VERSION) by migrations run in one transaction.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, WriteTransaction};

use super::model::SCHEMA_VERSION;
use super::store::*;
use super::CmdbError;
use rackboot_model::provision::Run;

/// The CMDB file at `path` (created or migrated to the current schema) as a store.
pub fn open_file(path: &Path) -> Result<super::kv::Db, CmdbError> {
    Ok(super::kv::Db::redb(open(path)?))
}

/// Opens (or creates) the database file and brings its schema up to date.
pub fn open(path: &Path) -> Result<Database, CmdbError> {
    // The hot lookups are served by the in-memory index, so redb's page cache (1 GiB by default)
    // can stay small and the appliance's footprint predictable.
    let db = redb::Builder::new()
        .set_cache_size(64 << 20)
        .create(path)
        .map_err(|e| CmdbError::Storage(format!("{}: {e}", path.display())))?;
    // Credential hashes, tokens and the audit trail live here: owner only, also for a file an
    // older rackboot created with the umask's mode.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| CmdbError::Storage(format!("{}: setting mode 0600: {e}", path.display())))?;
    }
    let found = {
        let rtx = db.begin_read()?;
        match rtx.open_table(META.redb) {
            Ok(t) => t.get(KEY_SCHEMA)?.map(|v| v.value()).unwrap_or(0),
            Err(redb::TableError::TableDoesNotExist(_)) => 0,
            Err(e) => return Err(e.into()),
        }
    };
    if found > SCHEMA_VERSION {
        return Err(CmdbError::Storage(format!(
            "{} has schema version {found}, newer than this rackboot ({SCHEMA_VERSION}); refusing to touch it",
            path.display()
        )));
    }
    if found < SCHEMA_VERSION {
        let tx = db.begin_write()?;
        migrate(&tx, found)?;
        tx.commit()?;
        tracing::info!(from = found, to = SCHEMA_VERSION, "migrated cmdb schema");
    }
    Ok(db)
}

/// Runs every migration step from `from` up to [`SCHEMA_VERSION`] inside one transaction, so a
/// crash mid-migration leaves the old file untouched.
fn migrate(tx: &WriteTransaction, from: u64) -> Result<(), CmdbError> {
    let mut version = from;
    while version < SCHEMA_VERSION {
        match version {
            // 0 -> 1: an empty (new) file gets its tables and counters.
            0 => {
                let mut meta = tx.open_table(META.redb)?;
                meta.insert(KEY_NEXT_MACHINE, 1)?;
                meta.insert(KEY_NEXT_EVENT, 1)?;
                tx.open_table(MACHINES.redb)?;
                tx.open_table(MACS.redb)?;
                tx.open_table(LEASES.redb)?;
                tx.open_table(EVENTS.redb)?;
            }
            // 1 -> 2: boot profiles can be defined through the API.
            1 => {
                tx.open_table(PROFILES.redb)?;
            }
            // 2 -> 3: the agent controller (agents, jobs, their output); machines may carry an
            // inventory (an optional field, so their records need no rewrite).
            2 => {
                tx.open_table(AGENTS.redb)?;
                tx.open_table(JOBS.redb)?;
                tx.open_table(MACHINE_JOBS.redb)?;
                tx.open_table(ACTIVE_JOBS.redb)?;
                tx.open_table(JOB_OUTPUT.redb)?;
            }
            // 3 -> 4: provisioning tasks and their runs.
            3 => {
                tx.open_table(TASKS.redb)?;
                tx.open_table(RUNS.redb)?;
                tx.open_table(ACTIVE_RUNS.redb)?;
            }
            // 4 -> 5: a machine may carry the installer boot of its run (an optional field).
            4 => {}
            // 5 -> 6: the global event log, built from every stored event.
            5 => {
                let events = tx.open_table(EVENTS.redb)?;
                let mut log = tx.open_table(EVENT_LOG.redb)?;
                for row in events.iter()? {
                    let (machine, seq) = row?.0.value();
                    log.insert(seq, machine)?;
                }
            }
            // 6 -> 7: users, their API tokens and the audit log.
            6 => {
                tx.open_table(USERS.redb)?;
                tx.open_table(TOKENS.redb)?;
                tx.open_table(AUDIT.redb)?;
            }
            // 7 -> 8: racks; machines may carry their rack, slot and placement (optional fields).
            7 => {
                tx.open_table(RACKS.redb)?;
            }
            // 8 -> 9: vendor plugins: trusted keys, versions, the active version of each.
            8 => {
                tx.open_table(PLUGIN_KEYS.redb)?;
                tx.open_table(PLUGINS.redb)?;
                tx.open_table(PLUGIN_ACTIVE.redb)?;
            }
            // 9 -> 10: machines' BMCs.
            9 => {
                tx.open_table(BMCS.redb)?;
            }
            // 10 -> 11: an index of each machine's runs, built from every stored run.
            10 => {
                let runs = tx.open_table(RUNS.redb)?;
                let mut index = tx.open_table(MACHINE_RUNS.redb)?;
                for row in runs.iter()? {
                    let (k, v) = row?;
                    let run: Run = decode(v.value())?;
                    if let Some(m) = run.machine_id {
                        index.insert((m, k.value()), ())?;
                    }
                }
            }
            v => return Err(CmdbError::Storage(format!("no migration from schema {v}"))),
        }
        version += 1;
    }
    tx.open_table(META.redb)?.insert(KEY_SCHEMA, SCHEMA_VERSION)?;
    Ok(())
}

#[cfg(test)]
mod tests;
