//! A rack's `auto_provision`: once a placed machine is inventoried (`ready`), a provisioning
//! task installs it with the rack's OS profile, through the same task machinery as
//! `POST /tasks` (one task per machine, once).

use serde_json::json;

use crate::cmdb::{Cmdb, CmdbError, MachineState, NewRun};
use crate::provision::engine::Engine;
use crate::provision::TaskSpec;

/// Queues the machine's provisioning if its rack asks for it and it is due: placed, `ready`,
/// nothing queued for it by its rack yet. Returns the task queued. A machine another run holds
/// is left alone.
pub async fn queue_if_due(cmdb: &Cmdb, engine: Option<&Engine>, machine_id: u64) -> Result<Option<u64>, CmdbError> {
    let Some(engine) = engine else { return Ok(None) };
    let m = cmdb.machine(machine_id).await?;
    let (Some(rack), Some(p)) = (m.rack.clone(), m.placement.as_ref()) else { return Ok(None) };
    if p.provision_task.is_some() || m.state != MachineState::Ready {
        return Ok(None);
    }
    let rack = cmdb.rack(rack).await?;
    let Some(os) = rack.os_profile.clone().filter(|_| rack.auto_provision) else { return Ok(None) };
    let mac = m.macs.first().copied().ok_or_else(|| CmdbError::Invalid("machine without a MAC".into()))?;
    let image = engine.cfg.images_dir.join(&os);
    let mut spec = json!({"select": {"macs": [mac]}, "hardware_profile": rack.hardware_profile, "pool": m.pool});
    if let Some(hints) = &rack.root_device {
        spec["root_device"] = json!(hints);
    }
    if image.is_file() {
        // A layout is for image deploys: an installer lays out its own disks.
        if let Some(layout) = &rack.layout {
            spec["layout"] = json!(layout);
        }
        let (dir, name) = (engine.cfg.images_dir.clone(), os.clone());
        let sum = tokio::task::spawn_blocking(move || crate::provision::images::prepare(&dir, &name, None))
            .await
            .map_err(|e| CmdbError::Storage(e.to_string()))?
            .map_err(CmdbError::Invalid)?;
        spec["image"] = json!(os);
        spec["image_sha256"] = json!(sum);
    } else {
        spec["installer"] = json!(os);
    }
    let spec: TaskSpec = serde_json::from_value(spec).map_err(|e| CmdbError::Invalid(e.to_string()))?;
    let run = NewRun { machine_id: Some(m.id), hostname: m.hostname.clone(), ip: m.reserved_ip };
    match cmdb.create_task(spec, vec![run]).await {
        Ok((task, _)) => {
            cmdb.set_placement_task(m.id, task.id).await?;
            engine.wake();
            tracing::info!(machine = m.id, task = task.id, rack = %rack.name, "rack queued provisioning");
            Ok(Some(task.id))
        }
        Err(CmdbError::Conflict(why)) => {
            tracing::info!(machine = m.id, %why, "rack provisioning not queued");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
