//! Racks: the records, placement and flags are `rackboot_model::racks` (re-exported here);
//! this module is the live side: [`provision`] (a rack's machines into a task) and
//! [`sweep`] (flags that come up with time).

pub mod provision;

pub use rackboot_model::racks::*;

/// Looks at every rack every `every` (as a view would), so a flag that comes up with time (a
/// slot still silent, a machine gone to failed) records its event without anyone opening the
/// rack; until `stop`.
pub async fn sweep(
    cmdb: crate::cmdb::Cmdb,
    every: std::time::Duration,
    stop: tokio_util::sync::CancellationToken,
) -> anyhow::Result<()> {
    rackboot_base::periodic::every(every, stop, || async {
        let Ok(racks) = cmdb.racks().await else { return };
        for rack in racks {
            if let Err(error) = cmdb.rack_view(rack.name.clone()).await {
                tracing::debug!(rack = %rack.name, %error, "rack flags not checked");
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(v: serde_json::Value) -> RackSpec {
        serde_json::from_value(v).unwrap()
    }

    fn base() -> serde_json::Value {
        json!({"name": "r1", "switch": {"remote_id": "leaf-r1"}, "ports": ["Ethernet1-4 -> U1-U4"],
               "address_plan": "198.18.1.1-198.18.1.8"})
    }

    fn catalog() -> Catalog {
        Catalog { networks: vec!["198.18.0.0/16".parse().unwrap()], ..Default::default() }
    }

    #[tokio::test]
    async fn the_sweeper_raises_a_silent_slot_without_anyone_looking() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::cmdb::Cmdb::open_for_test(&dir.path().join("c.redb"), 64).unwrap();
        let mut v = base();
        v["silent_after_minutes"] = json!(0);
        let rack = validate(spec(v), &catalog(), 0).unwrap();
        db.put_rack(rack, false).await.unwrap();
        let stop = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(sweep(db.clone(), std::time::Duration::from_millis(20), stop.clone()));
        let mut raised = Vec::new();
        for _ in 0..500 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            raised = db.racks().await.unwrap()[0].raised.clone();
            if !raised.is_empty() {
                break;
            }
        }
        stop.cancel();
        task.await.unwrap().unwrap();
        assert!(raised.iter().any(|k| k.starts_with("SlotSilent:")), "{raised:?}");
    }
}
