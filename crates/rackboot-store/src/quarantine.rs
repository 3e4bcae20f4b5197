//! Start-up with damage: a record that no longer decodes (a bad disk block, a bug in an older
//! rackboot) must not keep the appliance from starting. At open, every record of the tables read
//! whole at start and in lists is tried; one that does not decode is moved, bytes intact, to the
//! `quarantine` table and reported (log, a `cmdb.quarantined` event, `/healthz` degraded), and
//! the rest of the appliance starts. An admin reads the quarantine through the API and clears
//! it once dealt with.

use super::kv::{Db, Def, WriteTx};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::model::{AgentRecord, Lease, Machine};
use super::store::{decode, AGENTS, JOBS, LEASES, MACHINES, RUNS, TASKS};
use super::{Cmdb, CmdbError};

/// (table, key) -> the record's bytes as they were.
pub const QUARANTINE: Def<(&str, u64), &[u8]> = Def::new("quarantine");

/// A record taken out of its table because it did not decode.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Quarantined {
    /// The table it was in (`machines`, `leases`, ...).
    pub table: String,
    /// Its key there (a machine, job, task or run id; a lease's IPv4 address as a number).
    pub key: u64,
    /// Its size in bytes (the bytes themselves are kept in the CMDB).
    pub bytes: usize,
    /// Why it did not decode (at this start; empty for ones found earlier).
    pub error: String,
}

/// Moves every undecodable record of the checked tables to the quarantine, in one transaction;
/// returns what it moved now.
pub fn sweep(db: &Db) -> Result<Vec<Quarantined>, CmdbError> {
    let tx = db.begin_write()?;
    let mut moved = Vec::new();
    sweep_u64::<Machine>(&tx, MACHINES, "machines", &mut moved)?;
    sweep_u64::<AgentRecord>(&tx, AGENTS, "agents", &mut moved)?;
    sweep_u64::<rackboot_model::jobs::Job>(&tx, JOBS, "jobs", &mut moved)?;
    sweep_u64::<rackboot_model::provision::Task>(&tx, TASKS, "tasks", &mut moved)?;
    sweep_u64::<rackboot_model::provision::Run>(&tx, RUNS, "runs", &mut moved)?;
    sweep_u64::<rackboot_model::bmc::Bmc>(&tx, super::store::BMCS, "bmcs", &mut moved)?;
    {
        let mut leases = tx.open_table(LEASES)?;
        let bad: Vec<(u32, Vec<u8>, String)> = leases
            .iter()?
            .filter_map(|row| {
                let (k, v) = row.ok()?;
                let err = decode::<Lease>(v.value()).err()?;
                Some((k.value(), v.value().to_vec(), err.to_string()))
            })
            .collect();
        let mut q = tx.open_table(QUARANTINE)?;
        for (key, bytes, error) in bad {
            leases.remove(key)?;
            q.insert(("leases", u64::from(key)), bytes.as_slice())?;
            moved.push(Quarantined { table: "leases".into(), key: key.into(), bytes: bytes.len(), error });
        }
    }
    // Nothing found: nothing to commit (a clean start writes nothing).
    if !moved.is_empty() {
        tx.commit()?;
    }
    Ok(moved)
}

fn sweep_u64<T: serde::de::DeserializeOwned>(
    tx: &WriteTx,
    def: Def<u64, &'static [u8]>,
    name: &'static str,
    moved: &mut Vec<Quarantined>,
) -> Result<(), CmdbError> {
    let mut table = tx.open_table(def)?;
    let bad: Vec<(u64, Vec<u8>, String)> = table
        .iter()?
        .filter_map(|row| {
            let (k, v) = row.ok()?;
            let err = decode::<T>(v.value()).err()?;
            Some((k.value(), v.value().to_vec(), err.to_string()))
        })
        .collect();
    let mut q = tx.open_table(QUARANTINE)?;
    for (key, bytes, error) in bad {
        table.remove(key)?;
        q.insert((name, key), bytes.as_slice())?;
        moved.push(Quarantined { table: name.into(), key, bytes: bytes.len(), error });
    }
    Ok(())
}

/// Records in the quarantine.
pub fn count(db: &Db) -> Result<u64, CmdbError> {
    let rtx = db.begin_read()?;
    let n = match rtx.open_table_if_any(QUARANTINE)? {
        Some(t) => t.len()?,
        None => 0,
    };
    Ok(n)
}

impl Cmdb {
    /// Records quarantined (at this start or an earlier one) and not yet cleared.
    pub fn quarantined(&self) -> u64 {
        self.inner.quarantined.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The quarantine's records (at most 1,000).
    pub async fn quarantine(&self) -> Result<Vec<Quarantined>, CmdbError> {
        self.read(|rtx| {
            let Some(t) = rtx.open_table_if_any(QUARANTINE)? else { return Ok(Vec::new()) };
            let mut out = Vec::new();
            for row in t.iter()?.take(1000) {
                let (k, v) = row?;
                let (table, key) = k.value();
                out.push(Quarantined { table: table.into(), key, bytes: v.value().len(), error: String::new() });
            }
            Ok(out)
        })
        .await
    }

    /// Drops the quarantine (an admin dealt with it); returns how many records went.
    pub async fn clear_quarantine(&self) -> Result<u64, CmdbError> {
        let n = self
            .write(|ctx| {
                let mut t = ctx.t.tx.open_table(QUARANTINE)?;
                let n = t.len()?;
                t.retain(|_, _| false)?;
                Ok(n)
            })
            .await?;
        self.inner.quarantined.store(0, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
