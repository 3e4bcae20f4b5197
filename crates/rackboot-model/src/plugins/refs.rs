//! A hardware profile's reference to a plugin, and the timeline event a finished plugin job
//! records (the resolving and the agent action are the control layer's).

use rackboot_agent::wire::{Action, JobResult};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::jobs::Job;

/// A hardware profile's reference to a plugin (`[[provision.hardware_profiles.plugins]]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PluginRef {
    pub name: String,
    /// A stored version; absent: the active one at the time the step runs.
    #[serde(default)]
    pub version: Option<String>,
    /// Passed to `check` and `apply` as JSON on stdin; checked against the plugin's schema.
    #[serde(default = "empty_object")]
    pub params: Value,
}

fn empty_object() -> Value {
    json!({})
}

/// The `plugin.result` timeline event's detail for a finished plugin job.
pub fn result_event(job: &Job, r: &JobResult) -> Option<Value> {
    let Action::Plugin { name, version, vendor, signer, sha256, .. } = &job.action else { return None };
    let (result, check_exit, apply_exit) = match &r.plugin {
        Some(p) => (serde_json::to_value(p.result).ok()?, p.check_exit, p.apply_exit),
        None => (json!("failed"), None, None),
    };
    Some(json!({
        "plugin": name, "version": version, "vendor": vendor, "signer": signer, "sha256": sha256,
        "job": job.id, "result": result, "check_exit": check_exit, "apply_exit": apply_exit, "error": r.error,
    }))
}
