//! Plugins in use: hardware profiles reference them by name (and optionally a version) with
//! parameters; a reference resolves to a stored, enabled version whose params schema the
//! parameters pass, and becomes the agent action for a machine its `[match]` fits.

use rackboot_agent::wire::{Action, Inventory, PluginStep};
use serde_json::{json, Value};

pub use rackboot_model::plugins::refs::{result_event, PluginRef};

use super::{PluginVersion, TrustedKey};
use crate::cmdb::Cmdb;

/// A reference resolved: the version to run and the key that signed it.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub version: PluginVersion,
    pub signer: TrustedKey,
}

/// Resolves `r` against the store: the named (or active) version, enabled, its parameters
/// valid. The error says what an operator must fix.
pub async fn resolve(cmdb: &Cmdb, r: &PluginRef) -> Result<Resolved, String> {
    let e = |e: crate::cmdb::CmdbError| e.to_string();
    let want = match &r.version {
        Some(v) => v.clone(),
        None => cmdb
            .active_plugins()
            .await
            .map_err(e)?
            .remove(&r.name)
            .ok_or_else(|| format!("plugin {} is not stored or has no active version", r.name))?,
    };
    let version = cmdb
        .plugin_versions()
        .await
        .map_err(e)?
        .into_iter()
        .find(|v| v.name == r.name && v.version == want)
        .ok_or_else(|| format!("plugin {} version {want} is not stored", r.name))?;
    let signer = cmdb
        .plugin_keys()
        .await
        .map_err(e)?
        .into_iter()
        .find(|k| k.key_id == version.key_id && k.revoked_at.is_none())
        .ok_or_else(|| {
            format!("plugin {} {want} is disabled: its signing key {} is revoked", r.name, version.key_id)
        })?;
    if let Some(schema) = &version.manifest.params {
        super::params::validate(schema, &r.params)
            .map_err(|why| format!("plugin {} {want}: parameters {why}", r.name))?;
    }
    Ok(Resolved { version, signer })
}

/// The agent action that runs a resolved plugin with `params` (`check_only`: its check alone).
pub fn action(r: &Resolved, params: &Value, check_only: bool) -> Action {
    let (v, m) = (&r.version, &r.version.manifest);
    Action::Plugin {
        name: v.name.clone(),
        version: v.version.clone(),
        vendor: v.vendor.clone(),
        signer: r.signer.key_id.clone(),
        sha256: v.sha256.clone(),
        check: PluginStep { run: m.check.run.clone(), timeout_secs: m.check.timeout },
        apply: PluginStep { run: m.apply.run.clone(), timeout_secs: m.apply.timeout },
        reboot: m.apply.reboot,
        check_only,
        params: params.clone(),
    }
}

/// Whether the plugin's `[match]` fits this inventory.
pub fn fits(r: &Resolved, inv: &Inventory) -> bool {
    r.version.manifest.matches.fits(inv)
}

/// The action of a hardware profile's plugin step for `machine`: the plugin, or, when its
/// `[match]` fits nothing the inventory shows, a note in the job log and a `plugin.unmatched`
/// event (reported, not silently skipped).
pub async fn step_action(
    cmdb: &Cmdb,
    profile: &str,
    r: &PluginRef,
    machine: &crate::cmdb::Machine,
) -> Result<Action, String> {
    let resolved = resolve(cmdb, r).await?;
    let inv = machine.inventory.clone().unwrap_or_default();
    if fits(&resolved, &inv) {
        return Ok(action(&resolved, &r.params, false));
    }
    let v = &resolved.version;
    let detail = json!({
        "plugin": v.name, "version": v.version, "profile": profile,
        "vendor": inv.dmi.vendor, "product": inv.dmi.model,
    });
    cmdb.plugin_unmatched(machine.id, detail).await.map_err(|e| e.to_string())?;
    let note = format!(
        "plugin {} {}: its [match] fits nothing on this machine (vendor {:?}, product {:?}); not run\n",
        v.name, v.version, inv.dmi.vendor, inv.dmi.model
    );
    Ok(Action::Script {
        interpreter: "/bin/sh".into(),
        body: "printf '%s' \"$RACKBOOT_NOTE\"\n".into(),
        args: vec![],
        env: [("RACKBOOT_NOTE".to_string(), note)].into(),
    })
}
