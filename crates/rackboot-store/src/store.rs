//! The store's ground: every core table's definition, the record codecs, and a write batch's
//! context ([`WriteCtx`]) with its tables. It names no record module, so each of them can
//! stand on it: `schema` opens and migrates the file, `writer` runs the batches, the record
//! modules (machines, leases, jobs, ...) read and write through these.

use std::collections::{BTreeSet, HashMap, HashSet};

pub use super::kv::Def;
use super::kv::Table;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::index::{Delta, Index};
use super::kv::WriteTx;
use super::model::{AgentRecord, Event, MachineState};
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

/// The tables of one batch, opened once for every job in it (opening a table per write costs
/// more than the write).
pub struct Tables<'a> {
    /// The batch's transaction, for tables off the hot path.
    pub tx: &'a WriteTx,
    pub machines: Table<'a, u64, &'static [u8]>,
    pub macs: Table<'a, u64, u64>,
    pub leases: Table<'a, u32, &'static [u8]>,
    pub events: Table<'a, (u64, u64), &'static [u8]>,
    pub event_log: Table<'a, u64, u64>,
}

impl<'a> Tables<'a> {
    pub(crate) fn open(tx: &'a WriteTx) -> Result<Self, CmdbError> {
        Ok(Tables {
            tx,
            machines: tx.open_table(MACHINES)?,
            macs: tx.open_table(MACS)?,
            leases: tx.open_table(LEASES)?,
            events: tx.open_table(EVENTS)?,
            event_log: tx.open_table(EVENT_LOG)?,
        })
    }
}

/// What a job sees: the batch's tables, id counters, and index changes to apply on commit.
pub struct WriteCtx<'a> {
    pub t: Tables<'a>,
    pub next_machine_id: &'a mut u64,
    pub next_event_seq: &'a mut u64,
    pub delta: &'a mut Vec<Delta>,
    pub index: &'a Index,
    /// Events written in this batch, published to stream subscribers once it commits.
    pub published: &'a mut Vec<Event>,
    /// What this batch did to the unclaimed-machine count (see [`super::unclaimed`]).
    pub growth: BatchGrowth,
    /// Machines' states as this batch has left them (see [`super::events::state_of`]).
    pub states: PendingStates,
    /// Whether the batch changed the racks (other appliances sharing the store reload theirs).
    pub racks_changed: bool,
}

impl WriteCtx<'_> {
    /// The record under `id` as this batch sees it, if any.
    pub fn find<T: Record>(&self, id: u64) -> Result<Option<T>, CmdbError> {
        T::find_in(self, id)
    }

    /// The record under `id` as this batch sees it; `NotFound` without one.
    pub fn get<T: Record>(&self, id: u64) -> Result<T, CmdbError> {
        self.find(id)?.ok_or_else(|| CmdbError::NotFound(format!("{} {id}", T::NAME)))
    }

    /// Stores a record in this batch.
    pub fn put<T: Record>(&mut self, rec: &T) -> Result<(), CmdbError> {
        rec.put_in(self)
    }
}

/// What the batch being written did to the unclaimed count, caught up with the batch's index
/// changes on each call: a batch holds thousands of new MACs under a flood, and rescanning its
/// whole change list per new machine made the writer quadratic (it fell behind, its batches
/// grew, and each grew slower still).
#[derive(Debug, Default)]
pub struct BatchGrowth {
    /// Index changes already folded in.
    pub(crate) seen: usize,
    /// Unclaimed machines this batch created (not yet in the index), oldest first.
    pub(crate) fresh: BTreeSet<u64>,
    /// Indexed unclaimed machines this batch removed or claimed.
    pub(crate) gone: HashSet<u64>,
    /// Where the next look for an eviction candidate starts among the indexed ones.
    pub(crate) cursor: u64,
}

/// Each machine's state as the batch being written has left it, caught up with the batch's
/// index changes on demand (a scan of them per event made a large batch quadratic).
#[derive(Debug, Default)]
pub struct PendingStates {
    pub(crate) seen: usize,
    pub(crate) state: HashMap<u64, Option<MachineState>>,
}
