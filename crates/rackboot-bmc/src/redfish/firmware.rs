//! Reading a system's firmware through Redfish: `BiosVersion`, the `Bios` resource's
//! attributes and its settings object's pending ones, and `UpdateService/FirmwareInventory`.
//! Each part the BMC does not offer (no link, 404, 405, 501) is absent, not an error; links are
//! followed only on the same BMC, under `/redfish/`.

use hyper::Method;
use serde_json::Value;

use super::Redfish;
use crate::BmcError;
use rackboot_model::firmware::{self, FirmwareItem, FirmwareReport, MAX_INVENTORY};

/// A link in a Redfish answer (`{"@odata.id": ...}`), when it is a path on this BMC.
pub(super) fn link(v: &Value) -> Option<String> {
    let path = v["@odata.id"].as_str()?;
    (path.starts_with("/redfish/") && !path.contains("..")).then(|| path.to_string())
}

/// Whether an error means the BMC does not offer what was asked.
fn not_offered(e: &BmcError) -> bool {
    matches!(e, BmcError::Status { status: 404 | 405 | 501, .. })
}

impl Redfish {
    pub(super) async fn get(&self, path: &str) -> Result<Value, BmcError> {
        self.call(Method::GET, path, None).await?.json()
    }

    /// The system's firmware as its BMC reports it.
    pub async fn firmware(&self, now_ms: u64) -> Result<FirmwareReport, BmcError> {
        let sys = self.get(&self.system).await?;
        let mut report = FirmwareReport {
            read_at_ms: now_ms,
            bios_version: firmware::text(&sys["BiosVersion"]),
            ..Default::default()
        };
        if let Some(path) = link(&sys["Bios"]) {
            match self.get(&path).await {
                Ok(bios) => self.bios(&bios, &mut report).await?,
                Err(e) if not_offered(&e) => report.notes.push(format!("Bios at {path}: not offered ({e})")),
                Err(e) => return Err(e),
            }
        }
        match self.inventory().await {
            Ok(Some((items, more))) => {
                if more {
                    report.notes.push(format!("firmware inventory: the first {MAX_INVENTORY} entries"));
                }
                report.inventory = Some(items);
            }
            Ok(None) => {}
            Err(e) if not_offered(&e) => {}
            Err(e) => report.notes.push(format!("firmware inventory: {e}")),
        }
        Ok(report)
    }

    /// The current attributes, and the pending ones where they differ.
    async fn bios(&self, bios: &Value, report: &mut FirmwareReport) -> Result<(), BmcError> {
        let (current, dropped) = firmware::attributes(&bios["Attributes"]);
        if dropped > 0 {
            report.notes.push(format!("Bios: {dropped} attributes left out (not plain values, or past the bounds)"));
        }
        report.attribute_registry = firmware::text(&bios["AttributeRegistry"]);
        if let Some(path) = link(&bios["@Redfish.Settings"]["SettingsObject"]) {
            match self.get(&path).await {
                Ok(settings) => {
                    let (pending, _) = firmware::attributes(&settings["Attributes"]);
                    report.bios_pending = pending.into_iter().filter(|(k, v)| current.get(k) != Some(v)).collect();
                }
                Err(e) if not_offered(&e) => {}
                Err(e) => report.notes.push(format!("Bios settings at {path}: {e}")),
            }
        }
        report.bios = Some(current);
        Ok(())
    }

    /// `UpdateService/FirmwareInventory`, each member read (at most [`MAX_INVENTORY`]; `true`
    /// when there were more); `None` without an UpdateService link to one.
    async fn inventory(&self) -> Result<Option<(Vec<FirmwareItem>, bool)>, BmcError> {
        let root = self.get("/redfish/v1").await?;
        let Some(update) = link(&root["UpdateService"]) else { return Ok(None) };
        let Some(path) = link(&self.get(&update).await?["FirmwareInventory"]) else { return Ok(None) };
        let collection = self.get(&path).await?;
        let (mut items, mut more) = (Vec::new(), false);
        for member in collection["Members"].as_array().into_iter().flatten() {
            let Some(path) = link(member) else { continue };
            if items.len() == MAX_INVENTORY {
                more = true;
                break;
            }
            let m = self.get(&path).await?;
            items.push(FirmwareItem {
                id: firmware::text(&m["Id"]).unwrap_or_else(|| path.rsplit('/').next().unwrap_or_default().to_string()),
                name: firmware::text(&m["Name"]).unwrap_or_default(),
                version: firmware::text(&m["Version"]),
                updateable: m["Updateable"].as_bool(),
                health: firmware::text(&m["Status"]["Health"]),
                path: Some(path),
            });
        }
        Ok(Some((items, more)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_links_on_this_bmc_are_followed() {
        assert_eq!(
            link(&json!({"@odata.id": "/redfish/v1/Systems/1/Bios"})).as_deref(),
            Some("/redfish/v1/Systems/1/Bios")
        );
        for bad in ["https://elsewhere/redfish/v1/x", "/other/x", "/redfish/v1/../../etc", ""] {
            assert_eq!(link(&json!({"@odata.id": bad})), None, "{bad}");
        }
        assert_eq!(link(&json!("a string")), None);
    }
}
