//! Firmware flashed in BootOS, for machines without a Redfish BMC: a baseline component that
//! names a signed vendor plugin is flashed by it. The plugin's `check` and `apply` get the
//! reference's parameters with `firmware` added:
//!
//! ```json
//! {"firmware": {"component": "bios", "version": "1.1.0",
//!   "image_url": "http://198.18.0.1/boot/files/firmware/<sha256>", "sha256": "<sha256>"}}
//! ```
//!
//! `check` exits 0 when the component runs that version, 1 when it must be flashed, 20 when
//! the machine has no such component; `apply` fetches the image, checks its SHA-256, flashes
//! it and exits 0, or 10 when the new firmware takes effect at a reboot.

use rackboot_agent::wire::Action;
use rackboot_model::baseline::{self, Baseline, BaselineComponent, Standing};
use rackboot_model::records::Machine;
use serde_json::json;

use super::Firmware;
use crate::cmdb::Cmdb;
use crate::plugins::usage::{self, PluginRef};

/// How a baseline's components are brought about on a machine without a Redfish BMC.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// The components a plugin flashes (indices into the baseline's, in order).
    pub plugins: Vec<usize>,
    /// Components no plugin flashes that BootOS sees drift: why each cannot be brought.
    pub stuck: Vec<String>,
    /// Components no plugin flashes, left as they are (nothing in band reads them).
    pub left: Vec<String>,
}

/// The plan for machine `m` against `b`, from BootOS's view of it (the DMI BIOS version).
pub fn plan(b: &Baseline, m: &Machine) -> Plan {
    let inband = m.inventory.as_ref().and_then(|i| i.dmi.bios_version.as_deref());
    let drift = baseline::drift_with(b, None, inband);
    let mut plan = Plan::default();
    for (i, (c, d)) in b.components.iter().zip(&drift.components).enumerate() {
        match (&c.plugin, d.standing) {
            (Some(_), _) => plan.plugins.push(i),
            (None, Standing::Drift) => {
                let seen = d.found.iter().filter_map(|f| f.version.as_deref()).collect::<Vec<_>>().join(", ");
                plan.stuck.push(format!(
                    "{}: BootOS reads {seen}, the baseline wants {}",
                    c.component.as_str(),
                    c.version
                ));
            }
            (None, _) => plan.left.push(c.component.as_str().to_string()),
        }
    }
    plan
}

/// Component `c`'s plugin reference as its flash runs it: the params with `firmware` added.
pub fn reference(fw: &Firmware, c: &BaselineComponent) -> Option<PluginRef> {
    let r = c.plugin.as_ref()?;
    let sha = c.sha256();
    let mut params = r.params.clone();
    params["firmware"] = json!({
        "component": c.component.as_str(), "version": c.version, "image_url": fw.image_url(&sha), "sha256": sha,
    });
    Some(PluginRef { name: r.name.clone(), version: r.version.clone(), params })
}

/// Whether every plugin baseline `b` names is stored, enabled and takes its parameters (with
/// `firmware`): the first that does not, and why.
pub async fn check_plugins(fw: &Firmware, cmdb: &Cmdb, b: &Baseline) -> Result<(), String> {
    for c in &b.components {
        if let Some(r) = reference(fw, c) {
            usage::resolve(cmdb, &r)
                .await
                .map_err(|e| format!("firmware baseline {:?}, {} {}: {e}", b.name, c.component.as_str(), c.version))?;
        }
    }
    Ok(())
}

/// The agent action that flashes (or, `check_only`, verifies) component `index` of `b` on
/// `m`: the component's plugin, resolved and fitting the machine, its image uploaded.
pub async fn plugin_action(
    fw: &Firmware,
    cmdb: &Cmdb,
    b: &Baseline,
    index: usize,
    check_only: bool,
    m: &Machine,
) -> Result<Action, String> {
    let c = b.components.get(index).ok_or_else(|| format!("baseline {:?} has fewer components now", b.name))?;
    let what = format!("{} {}", c.component.as_str(), c.version);
    let with = reference(fw, c).ok_or_else(|| format!("{what}: the baseline names no plugin for it now"))?;
    let sha = c.sha256();
    if !fw.images.has(&sha) {
        return Err(format!("{what}: image {sha} is not uploaded (rackboot firmware upload)"));
    }
    let resolved = usage::resolve(cmdb, &with).await.map_err(|e| format!("{what}: {e}"))?;
    let inv = m.inventory.clone().unwrap_or_default();
    if !usage::fits(&resolved, &inv) {
        return Err(format!(
            "{what}: plugin {} {}'s [match] fits nothing on this machine (vendor {:?}, product {:?})",
            resolved.version.name, resolved.version.version, inv.dmi.vendor, inv.dmi.model
        ));
    }
    Ok(usage::action(&resolved, &with.params, check_only))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rackboot_model::baseline::Component;

    fn component(component: Component, version: &str, plugin: bool) -> BaselineComponent {
        BaselineComponent {
            component,
            version: version.into(),
            image: "ab".repeat(32),
            matches: None,
            plugin: plugin.then(|| PluginRef { name: "acme".into(), version: None, params: json!({}) }),
        }
    }

    fn machine(bios: Option<&str>) -> Machine {
        let mut m = Machine::new(7, vec!["52:54:00:00:00:07".parse().unwrap()], 0);
        let mut inv = rackboot_agent::wire::Inventory::default();
        inv.dmi.bios_version = bios.map(Into::into);
        m.inventory = Some(inv);
        m
    }

    #[test]
    fn plugins_flash_what_they_name_and_a_drift_nothing_flashes_is_stuck() {
        let b = Baseline {
            name: "q4".into(),
            components: vec![
                component(Component::Bios, "1.1.0", false),
                component(Component::Nic, "22.1", true),
                component(Component::Bmc, "7.0", false),
            ],
        };
        let p = plan(&b, &machine(Some("1.1.0")));
        assert_eq!(p, Plan { plugins: vec![1], stuck: vec![], left: vec!["bios".into(), "bmc".into()] });
        let p = plan(&b, &machine(Some("1.0.0")));
        assert_eq!(p.stuck, vec!["bios: BootOS reads 1.0.0, the baseline wants 1.1.0".to_string()]);
        assert_eq!(plan(&b, &machine(None)).stuck, Vec::<String>::new(), "unknown is not drift");
    }
}
