//! Writing BIOS attributes through Redfish: the declared ones that differ from the `Bios`
//! resource's current attributes are PATCHed to its settings object (`@Redfish.Settings`, else
//! `<Bios>/Settings`), asking for them at the next reset where the BMC says it can, and read
//! back from the settings object (pending) or the current attributes (a BMC that applies at
//! once). An attribute the BMC does not have is refused before anything is written, and so is
//! a value its attribute registry does not allow (where it has one: an enumeration's values,
//! an integer's bounds, a string's length, read-only attributes).

use hyper::Method;
use serde_json::{json, Map, Value};

use super::firmware::link;
use super::Redfish;
use crate::BmcError;
use rackboot_model::bios::{self, Settings};
use rackboot_model::firmware;

impl Redfish {
    /// Writes the declared attributes that differ; returns their names (empty: all were set).
    pub async fn bios_apply(&self, want: &Settings) -> Result<Vec<String>, BmcError> {
        let sys = self.get(&self.system).await?;
        let path = link(&sys["Bios"])
            .ok_or_else(|| BmcError::Other("the BMC offers no Bios resource for this system".into()))?;
        let resource = self.get(&path).await?;
        let (current, _) = firmware::attributes(&resource["Attributes"]);
        let diff = bios::differing(want, &current);
        let missing: Vec<_> = diff.iter().filter(|(_, _, have)| have.is_none()).cloned().collect();
        if !missing.is_empty() {
            return Err(BmcError::Other(format!("refused before writing: {}", bios::describe(&missing))));
        }
        if diff.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(registry) = self.attribute_registry(&resource).await {
            let problems = bios::against_registry(&diff, &registry);
            if !problems.is_empty() {
                return Err(BmcError::Other(format!("refused before writing: {}", problems.join("; "))));
            }
        }
        let names: Vec<String> = diff.iter().map(|(k, _, _)| k.to_string()).collect();
        let settings = &resource["@Redfish.Settings"];
        let target = link(&settings["SettingsObject"]).unwrap_or_else(|| format!("{path}/Settings"));
        let attributes: Map<String, Value> = diff.iter().map(|(k, w, _)| (k.to_string(), (*w).clone())).collect();
        let mut body = json!({ "Attributes": attributes });
        let on_reset = settings["SupportedApplyTimes"].as_array().is_some_and(|t| t.iter().any(|t| t == "OnReset"));
        if on_reset {
            body["@Redfish.SettingsApplyTime"] = json!({"ApplyTime": "OnReset"});
        }
        self.call(Method::PATCH, &target, Some(&body)).await.map_err(|e| match e {
            BmcError::Status { status, detail } if (400..500).contains(&status) => {
                BmcError::Status { status, detail: format!("refused BIOS settings {}: {detail}", names.join(", ")) }
            }
            e => e,
        })?;
        // Read back: each one written is pending, or current already.
        let pending = match self.get(&target).await {
            Ok(s) => firmware::attributes(&s["Attributes"]).0,
            Err(_) => Settings::new(),
        };
        let (now, _) = firmware::attributes(&self.get(&path).await?["Attributes"]);
        let unseen: Vec<_> = diff
            .iter()
            .filter(|(k, w, _)| ![&pending, &now].iter().any(|m| m.get(*k).is_some_and(|h| bios::same(w, h))))
            .map(|(k, w, _)| (*k, *w, now.get(*k).cloned()))
            .collect();
        if !unseen.is_empty() {
            return Err(BmcError::Verify(format!(
                "the BMC accepted the BIOS settings but shows neither pending nor current: {}",
                bios::describe(&unseen)
            )));
        }
        Ok(names)
    }
}

/// Attribute entries read from a registry, at most.
const MAX_REGISTRY_ENTRIES: usize = 4096;

impl Redfish {
    /// The entries of the attribute registry the Bios resource names (`AttributeRegistry`),
    /// found in the service's `Registries` and read from its `Location`; `None` where the BMC
    /// offers none (the BMC's own refusal then names a bad value).
    async fn attribute_registry(&self, bios: &Value) -> Option<Vec<Value>> {
        let name = bios["AttributeRegistry"].as_str()?;
        let members = self.get("/redfish/v1/Registries").await.ok()?["Members"].as_array().cloned()?;
        let file = members.iter().filter_map(link).find(|p| p.trim_end_matches('/').ends_with(name))?;
        let file = self.get(&file).await.ok()?;
        let uri = file["Location"].as_array()?.iter().find_map(|l| l["Uri"].as_str())?;
        let local = link(&json!({ "@odata.id": uri }))?;
        let registry = self.get(&local).await.ok()?;
        let entries = registry["RegistryEntries"]["Attributes"].as_array()?;
        Some(entries.iter().take(MAX_REGISTRY_ENTRIES).cloned().collect())
    }
}
