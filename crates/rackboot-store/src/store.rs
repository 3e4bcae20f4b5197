//! redb table definitions, record codecs, and opening (with schema migration) of the CMDB file.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, WriteTransaction};

pub use super::kv::Def;
use super::kv::Table;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::model::{AgentRecord, Machine, SCHEMA_VERSION};
use super::writer::WriteCtx;
use super::CmdbError;
use rackboot_model::jobs::Job;
use rackboot_model::provision::{Run, Task};

/// Counters and the schema version.
pub const META: Def<&str, u64> = Def::new("meta");
/// Machine id -> JSON `Machine`.
pub const MACHINES: Def<u64, &[u8]> = Def::new("machines");
/// MAC (packed in a u64) -> machine id.
pub const MACS: Def<u64, u64> = Def::new("macs");
/// IPv4 (u32) -> JSON `Lease`.
pub const LEASES: Def<u32, &[u8]> = Def::new("leases");
/// (machine id, event seq) -> JSON `Event`.
pub const EVENTS: Def<(u64, u64), &[u8]> = Def::new("events");
/// Boot profile name -> JSON `StoredProfile` (profiles defined through the API; schema 2).
pub const PROFILES: Def<&str, &[u8]> = Def::new("profiles");

/// Machine id -> JSON `AgentRecord` (schema 3).
pub const AGENTS: Def<u64, &[u8]> = Def::new("agents");
/// Job id -> JSON `Job` (schema 3).
pub const JOBS: Def<u64, &[u8]> = Def::new("jobs");
/// (machine id, job id) for every job, for a machine's job history.
pub const MACHINE_JOBS: Def<(u64, u64), ()> = Def::new("machine_jobs");
/// (machine id, job id) for jobs not yet finished: what polls and the lease sweeper look at.
pub const ACTIVE_JOBS: Def<(u64, u64), ()> = Def::new("active_jobs");
/// (job id, attempt << 32 | chunk seq) -> JSON output chunk.
pub const JOB_OUTPUT: Def<(u64, u64), &[u8]> = Def::new("job_output");

/// Task id -> JSON `Task` (schema 4).
pub const TASKS: Def<u64, &[u8]> = Def::new("tasks");
/// Run id -> JSON `Run` (schema 4).
pub const RUNS: Def<u64, &[u8]> = Def::new("runs");
/// Run ids not yet finished: what the provisioning engine walks.
pub const ACTIVE_RUNS: Def<u64, ()> = Def::new("active_runs");
/// (machine id, run id): every run a machine has been bound to, for its pages.
pub const MACHINE_RUNS: Def<(u64, u64), ()> = Def::new("machine_runs");

/// The global event log: sequence -> machine id, so the event stream can resume from a sequence
/// across every machine (schema 6). The event itself lives in `events`.
pub const EVENT_LOG: Def<u64, u64> = Def::new("event_log");

/// Username -> JSON `User` (schema 7).
pub const USERS: Def<&str, &[u8]> = Def::new("users");
/// Token id -> JSON `TokenRecord`: API tokens and login sessions, stored hashed (schema 7).
pub const TOKENS: Def<&str, &[u8]> = Def::new("tokens");
/// Sequence -> JSON `AuditEntry`, the newest `auth.audit_max_entries` kept (schema 7).
pub const AUDIT: Def<u64, &[u8]> = Def::new("audit");

/// Rack name -> JSON `racks::Rack` (schema 8).
pub const RACKS: Def<&str, &[u8]> = Def::new("racks");

/// Key id -> JSON `plugins::TrustedKey`: vendors' minisign keys (schema 9).
pub const PLUGIN_KEYS: Def<&str, &[u8]> = Def::new("plugin_keys");
/// `name/version` -> JSON `plugins::PluginVersion` (schema 9).
pub const PLUGINS: Def<&str, &[u8]> = Def::new("plugins");
/// Plugin name -> its active version (schema 9).
pub const PLUGIN_ACTIVE: Def<&str, &str> = Def::new("plugin_active");
/// Machine id -> JSON `bmc::Bmc`: its BMC, the password sealed (schema 10).
pub const BMCS: Def<u64, &[u8]> = Def::new("bmcs");

pub const KEY_SCHEMA: &str = "schema_version";
pub const KEY_NEXT_MACHINE: &str = "next_machine_id";
pub const KEY_NEXT_EVENT: &str = "next_event_seq";
/// The next job id: kept so a deleted machine's jobs never lend their ids to new ones.
pub const KEY_NEXT_JOB: &str = "next_job_id";
/// The next audit sequence: kept so rotated-out entries never lend their numbers.
pub const KEY_NEXT_AUDIT: &str = "next_audit_seq";

/// Serializes a record for storage.
pub fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("CMDB records always serialize")
}

/// Deserializes a stored record.
pub fn decode<T: DeserializeOwned>(b: &[u8]) -> Result<T, CmdbError> {
    serde_json::from_slice(b).map_err(|e| CmdbError::Storage(format!("corrupt record: {e}")))
}

/// A record stored as JSON under its `u64` id. Rows of these tables are read and written only
/// through [`find`], [`get`] and [`put`] (or the `WriteCtx` methods built on them), so each
/// table holds one type and a missing row reads the same everywhere.
pub trait Record: Serialize + DeserializeOwned {
    const TABLE: Def<u64, &'static [u8]>;
    /// What a `NotFound` calls it ("machine 7").
    const NAME: &'static str;
    fn key(&self) -> u64;

    /// Reads the record under `id` in a write batch.
    fn find_in(ctx: &WriteCtx<'_>, id: u64) -> Result<Option<Self>, CmdbError> {
        find(&ctx.t.tx.open_table(Self::TABLE)?, id)
    }

    /// Writes the record in a write batch.
    fn put_in(&self, ctx: &mut WriteCtx<'_>) -> Result<(), CmdbError> {
        put(&mut ctx.t.tx.open_table(Self::TABLE)?, self)
    }
}

/// Machines use the batch's open table, and a write also keeps the MAC rows and the index.
impl Record for Machine {
    const TABLE: Def<u64, &'static [u8]> = MACHINES;
    const NAME: &'static str = "machine";
    fn key(&self) -> u64 {
        self.id
    }
    fn find_in(ctx: &WriteCtx<'_>, id: u64) -> Result<Option<Self>, CmdbError> {
        find(&ctx.t.machines, id)
    }
    fn put_in(&self, ctx: &mut WriteCtx<'_>) -> Result<(), CmdbError> {
        super::machines::put_machine(ctx, self)
    }
}

impl Record for AgentRecord {
    const TABLE: Def<u64, &'static [u8]> = AGENTS;
    const NAME: &'static str = "agent of machine";
    fn key(&self) -> u64 {
        self.machine_id
    }
}

impl Record for Job {
    const TABLE: Def<u64, &'static [u8]> = JOBS;
    const NAME: &'static str = "job";
    fn key(&self) -> u64 {
        self.id
    }
}

impl Record for Task {
    const TABLE: Def<u64, &'static [u8]> = TASKS;
    const NAME: &'static str = "task";
    fn key(&self) -> u64 {
        self.id
    }
}

impl Record for Run {
    const TABLE: Def<u64, &'static [u8]> = RUNS;
    const NAME: &'static str = "run";
    fn key(&self) -> u64 {
        self.id
    }
}

/// The record stored under `id`, if any.
pub fn find<T: Record>(t: &Table<'_, u64, &'static [u8]>, id: u64) -> Result<Option<T>, CmdbError> {
    match t.get(id)? {
        Some(v) => Ok(Some(decode(v.value())?)),
        None => Ok(None),
    }
}

/// The record stored under `id`; `NotFound` without one.
pub fn get<T: Record>(t: &Table<'_, u64, &'static [u8]>, id: u64) -> Result<T, CmdbError> {
    find(t, id)?.ok_or_else(|| CmdbError::NotFound(format!("{} {id}", T::NAME)))
}

/// Stores a record under its id.
pub fn put<T: Record>(t: &mut Table<'_, u64, &'static [u8]>, rec: &T) -> Result<(), CmdbError> {
    t.insert(rec.key(), encode(rec).as_slice())?;
    Ok(())
}

/// The records stored under `ids`, in that order, skipping ids without one.
pub fn find_all<T: Record>(
    t: &Table<'_, u64, &'static [u8]>,
    ids: impl IntoIterator<Item = u64>,
) -> Result<Vec<T>, CmdbError> {
    let mut out = Vec::new();
    for id in ids {
        out.extend(find(t, id)?);
    }
    Ok(out)
}

/// Reads all rows of a table as decoded records; used to rebuild in-memory state at start.
pub fn scan<K: super::kv::PgCols + redb::Key, T: serde::de::DeserializeOwned>(
    table: &Table<'_, K, &'static [u8]>,
) -> Result<Vec<T>, CmdbError> {
    let mut out = Vec::new();
    for row in table.iter()? {
        let (_, v) = row?;
        out.push(decode(v.value())?);
    }
    Ok(out)
}

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
