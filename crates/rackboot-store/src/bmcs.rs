//! Machines' BMCs in the CMDB: the `bmcs` table (machine id -> JSON `bmc::Bmc`, schema 10),
//! written with a `bmc.set` / `bmc.removed` event, and the power readings and power events the
//! power service records.

use serde_json::json;

use super::events::{push_event, EventKind};
use super::kv::Def;
use super::model::Machine;
use super::store::{scan, Record, BMCS};
use super::{now_secs, Cmdb, CmdbError};
use rackboot_model::bmc::{Bmc, PowerReading};
use rackboot_model::firmware::FirmwareReport;

impl Record for Bmc {
    const TABLE: Def<u64, &'static [u8]> = BMCS;
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
    /// sealed password (a change without one). The stored password goes only where it was
    /// given for: a change of address, protocol or TLS policy needs it again. Records
    /// `bmc.set` (never the password).
    pub async fn put_bmc(&self, mut b: Bmc, keep_password: bool) -> Result<Bmc, CmdbError> {
        self.write(move |ctx| {
            ctx.get::<Machine>(b.machine_id)?;
            let old: Option<Bmc> = ctx.find(b.machine_id)?;
            if keep_password {
                let old = old
                    .as_ref()
                    .ok_or_else(|| CmdbError::Invalid("password: required for a machine that has no BMC yet".into()))?;
                if (&old.address, old.protocol, &old.tls) != (&b.address, b.protocol, &b.tls) {
                    return Err(CmdbError::Invalid(
                        "password: required again when the address, protocol or TLS policy changes (the stored one is kept only for the BMC it was given for)".into(),
                    ));
                }
                b.password_sealed = old.password_sealed.clone();
                // The same account keeps what it is (the appliance's own, set up in band).
                if old.username == b.username {
                    b.inband = old.inband.clone();
                }
            }
            // A reading of the same BMC stays; a new address starts without one.
            let same = old.filter(|o| o.address == b.address && o.protocol == b.protocol);
            (b.power, b.firmware) = same.map(|o| (o.power, o.firmware)).unwrap_or_default();
            b.updated_at = now_secs();
            ctx.put(&b)?;
            let detail = json!({"address": b.address, "protocol": b.protocol, "username": b.username, "tls": b.tls});
            push_event(ctx, b.machine_id, EventKind::BmcSet, detail)?;
            Ok(b)
        })
        .await
    }

    /// Stores the BMC account a machine's agent set up in band (replacing the machine's BMC,
    /// keeping its boot mode), with `event` (never the password) in the same transaction.
    pub async fn put_inband_bmc(&self, mut b: Bmc, event: (EventKind, serde_json::Value)) -> Result<Bmc, CmdbError> {
        self.write(move |ctx| {
            ctx.get::<Machine>(b.machine_id)?;
            let old: Option<Bmc> = ctx.find(b.machine_id)?;
            b.boot_mode = b.boot_mode.or(old.and_then(|o| o.boot_mode));
            b.updated_at = now_secs();
            ctx.put(&b)?;
            push_event(ctx, b.machine_id, event.0, event.1)?;
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

    /// Stores a firmware report on the BMC whose password is still `sealed` (a record changed
    /// meanwhile is left alone), with a `bmc.firmware` event.
    pub async fn record_bmc_firmware(&self, id: u64, sealed: String, report: FirmwareReport) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            let detail = json!({
                "bios_version": report.bios_version,
                "bios_attributes": report.bios.as_ref().map(|b| b.len()),
                "pending": report.bios_pending.len(),
                "inventory": report.inventory.as_ref().map(|i| i.len()),
            });
            if let Some(mut b) = ctx.find::<Bmc>(id)? {
                if b.password_sealed == sealed {
                    b.firmware = Some(report);
                    ctx.put(&b)?;
                }
            }
            match ctx.find::<Machine>(id)? {
                Some(_) => push_event(ctx, id, EventKind::BmcFirmware, detail),
                None => Ok(()),
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NewMachine;
    use rackboot_model::bmc::{PowerState, Protocol, TlsPolicy};

    fn bmc(id: u64, sealed: &str) -> Bmc {
        Bmc {
            machine_id: id,
            address: "198.18.1.1".into(),
            protocol: Protocol::Ipmi,
            username: "u".into(),
            password_sealed: sealed.into(),
            tls: TlsPolicy::Ca,
            system_id: None,
            boot_mode: None,
            power: None,
            updated_at: 0,
            firmware: None,
            inband: None,
            boot_via: Default::default(),
        }
    }

    #[tokio::test]
    async fn a_bmc_keeps_its_password_and_reading_and_goes_with_its_machine() {
        let dir = tempfile::tempdir().unwrap();
        let cmdb = Cmdb::open_for_test(&dir.path().join("c.redb"), 8).unwrap();
        let m = cmdb
            .create_machine(NewMachine { macs: vec!["52:54:00:00:00:01".parse().unwrap()], ..Default::default() })
            .await
            .unwrap();
        assert!(matches!(cmdb.put_bmc(bmc(m.id, ""), true).await, Err(CmdbError::Invalid(_))), "first needs one");
        assert!(matches!(cmdb.put_bmc(bmc(99, "s"), false).await, Err(CmdbError::NotFound(_))));
        cmdb.put_bmc(bmc(m.id, "sealed-1"), false).await.unwrap();
        let on = PowerReading { state: PowerState::On, at_ms: 5, error: None };
        cmdb.record_power(m.id, "sealed-1".into(), on.clone(), None).await.unwrap();
        // A failed read keeps the last known state, with the error.
        let failed = PowerReading { state: PowerState::Unknown, at_ms: 9, error: Some("timeout".into()) };
        cmdb.record_power(m.id, "sealed-1".into(), failed, None).await.unwrap();
        let b = cmdb.bmc(m.id).await.unwrap().unwrap();
        assert_eq!(b.power, Some(PowerReading { state: PowerState::On, at_ms: 9, error: Some("timeout".into()) }));
        // A reading for a record changed meanwhile is dropped.
        cmdb.put_bmc(bmc(m.id, ""), true).await.unwrap();
        assert_eq!(cmdb.bmc(m.id).await.unwrap().unwrap().password_sealed, "sealed-1", "kept");
        cmdb.record_power(m.id, "other".into(), on, None).await.unwrap();
        assert_eq!(cmdb.bmc(m.id).await.unwrap().unwrap().power.unwrap().at_ms, 9);

        cmdb.delete_machine(m.id).await.unwrap();
        assert_eq!(cmdb.bmc(m.id).await.unwrap(), None);
        assert!(cmdb.bmcs().await.unwrap().is_empty());
    }
}
