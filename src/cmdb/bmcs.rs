//! Machines' BMCs in the CMDB: the `bmcs` table (machine id -> JSON `bmc::Bmc`, schema 10),
//! written with a `bmc.set` / `bmc.removed` event, and the power readings and power events the
//! power service records.

use serde_json::json;

use super::events::{push_event, EventKind};
use super::model::Machine;
use super::store::{scan, Record, BMCS};
use super::{now_secs, Cmdb, CmdbError};
use crate::bmc::model::{Bmc, PowerReading};

impl Record for Bmc {
    const TABLE: redb::TableDefinition<'static, u64, &'static [u8]> = BMCS;
    const NAME: &'static str = "bmc of machine";
    fn key(&self) -> u64 {
        self.machine_id
    }
}

impl Cmdb {
    /// The BMC of machine `id`, if it has one.
    pub async fn bmc(&self, id: u64) -> Result<Option<Bmc>, CmdbError> {
        self.read(move |rtx| super::store::find(&rtx.open_table(BMCS)?, id)).await
    }

    /// Every BMC (the power-state refresh walks them).
    pub async fn bmcs(&self) -> Result<Vec<Bmc>, CmdbError> {
        self.read(|rtx| scan(&rtx.open_table(BMCS)?)).await
    }

    /// Stores a machine's BMC (the machine must exist); `keep_password`: keep the stored
    /// sealed password (a change without one). Records `bmc.set` (never the password).
    pub async fn put_bmc(&self, mut b: Bmc, keep_password: bool) -> Result<Bmc, CmdbError> {
        self.write(move |ctx| {
            ctx.get::<Machine>(b.machine_id)?;
            let old: Option<Bmc> = ctx.find(b.machine_id)?;
            if keep_password {
                let old = old
                    .as_ref()
                    .ok_or_else(|| CmdbError::Invalid("password: required for a machine that has no BMC yet".into()))?;
                b.password_sealed = old.password_sealed.clone();
            }
            // A reading of the same BMC stays; a new address starts without one.
            b.power = old.filter(|o| o.address == b.address && o.protocol == b.protocol).and_then(|o| o.power);
            b.updated_at = now_secs();
            ctx.put(&b)?;
            let detail = json!({"address": b.address, "protocol": b.protocol, "username": b.username, "tls": b.tls});
            push_event(ctx, b.machine_id, EventKind::BmcSet, detail)?;
            Ok(b)
        })
        .await
    }

    /// Removes a machine's BMC.
    pub async fn delete_bmc(&self, id: u64) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            let removed = ctx.t.tx.open_table(BMCS)?.remove(id)?.is_some();
            if !removed {
                return Err(CmdbError::NotFound(format!("bmc of machine {id}")));
            }
            push_event(ctx, id, EventKind::BmcRemoved, json!({}))
        })
        .await
    }

    /// Stores a power reading on the BMC whose password is still `sealed` (a record changed
    /// meanwhile is left alone), with `event` on the machine's timeline.
    pub async fn record_power(
        &self,
        id: u64,
        sealed: String,
        reading: PowerReading,
        event: Option<(EventKind, serde_json::Value)>,
    ) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            if let Some(mut b) = ctx.find::<Bmc>(id)? {
                if b.password_sealed == sealed {
                    // A failed read keeps the state it last knew, with the error and its time.
                    if reading.error.is_some() {
                        let prev = b.power.as_ref().map_or(reading.state, |p| p.state);
                        b.power = Some(PowerReading { state: prev, ..reading });
                    } else {
                        b.power = Some(reading);
                    }
                    ctx.put(&b)?;
                }
            }
            match event {
                Some((kind, detail)) if ctx.find::<Machine>(id)?.is_some() => push_event(ctx, id, kind, detail),
                _ => Ok(()),
            }
        })
        .await
    }
}
