//! Virtual media through Redfish: the system's CD (`VirtualMedia` on the ComputerSystem, else
//! on the Manager that manages it; a member whose `MediaTypes` has `CD` or `DVD`), an image
//! inserted from a URL with one-time credentials and read back, a one-time boot from it, and
//! its ejection read back.

use hyper::Method;
use serde_json::json;

use super::firmware::link;
use super::Redfish;
use crate::BmcError;

/// The system's virtual CD.
#[derive(Debug, Clone, PartialEq)]
pub struct Cd {
    pub path: String,
    insert: String,
    eject: String,
}

/// What a virtual CD holds, as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct CdState {
    pub inserted: bool,
    pub image: Option<String>,
}

fn none_offered() -> BmcError {
    BmcError::Other("the BMC offers no virtual CD (Redfish VirtualMedia): boot this machine from PXE".into())
}

impl Redfish {
    /// The system's virtual CD.
    pub async fn find_cd(&self) -> Result<Cd, BmcError> {
        let sys = self.get(&self.system).await?;
        let collection = match link(&sys["VirtualMedia"]) {
            Some(c) => c,
            None => {
                let manager = link(&sys["Links"]["ManagedBy"][0]).ok_or_else(none_offered)?;
                link(&self.get(&manager).await?["VirtualMedia"]).ok_or_else(none_offered)?
            }
        };
        let members = self.get(&collection).await?;
        for member in members["Members"].as_array().into_iter().flatten().take(16) {
            let Some(path) = link(member) else { continue };
            let m = self.get(&path).await?;
            let types = m["MediaTypes"].as_array().cloned().unwrap_or_default();
            if !types.iter().any(|t| t == "CD" || t == "DVD") {
                continue;
            }
            let action = |name: &str, tail: &str| {
                link(&json!({"@odata.id": m["Actions"][name]["target"]})).unwrap_or_else(|| format!("{path}{tail}"))
            };
            return Ok(Cd {
                insert: action("#VirtualMedia.InsertMedia", "/Actions/VirtualMedia.InsertMedia"),
                eject: action("#VirtualMedia.EjectMedia", "/Actions/VirtualMedia.EjectMedia"),
                path,
            });
        }
        Err(none_offered())
    }

    /// What the CD holds now.
    pub async fn cd_state(&self, cd: &Cd) -> Result<CdState, BmcError> {
        let m = self.get(&cd.path).await?;
        let image = m["Image"].as_str().filter(|s| !s.is_empty()).map(str::to_string);
        Ok(CdState { inserted: m["Inserted"].as_bool().unwrap_or(image.is_some()), image })
    }

    /// Inserts the image at `url` (fetched by the BMC with `user` and `password`), ejecting
    /// what was in first; read back.
    pub async fn insert_cd(&self, cd: &Cd, url: &str, user: &str, password: &str) -> Result<(), BmcError> {
        if self.cd_state(cd).await?.inserted {
            self.eject_cd(cd).await?;
        }
        let body =
            json!({"Image": url, "Inserted": true, "WriteProtected": true, "UserName": user, "Password": password});
        self.call(Method::POST, &cd.insert, Some(&body)).await.map_err(|e| match e {
            BmcError::Status { status, detail } => {
                BmcError::Status { status, detail: format!("inserting the virtual CD: {detail}") }
            }
            e => e,
        })?;
        let now = self.cd_state(cd).await?;
        match now {
            CdState { inserted: true, image: Some(i) } if i == url => Ok(()),
            other => Err(BmcError::Verify(format!("the virtual CD reads back as {other:?}, not {url}"))),
        }
    }

    /// Ejects the CD; read back.
    pub async fn eject_cd(&self, cd: &Cd) -> Result<(), BmcError> {
        self.call(Method::POST, &cd.eject, Some(&json!({}))).await?;
        match self.cd_state(cd).await? {
            CdState { inserted: false, .. } => Ok(()),
            other => Err(BmcError::Verify(format!("the virtual CD reads back as {other:?} after the eject"))),
        }
    }

    /// Boots from `target` (`Cd`, `Hdd`) once at the next start (UEFI or legacy); read back.
    pub async fn set_boot_once(&self, target: &str, uefi: bool) -> Result<(), BmcError> {
        let body = json!({"Boot": {
            "BootSourceOverrideTarget": target,
            "BootSourceOverrideEnabled": "Once",
            "BootSourceOverrideMode": if uefi { "UEFI" } else { "Legacy" },
        }});
        self.call(Method::PATCH, &self.system, Some(&body)).await?;
        let b = self.boot_override().await?;
        match b.target.as_deref() {
            Some(t) if t == target => Ok(()),
            _ => Err(BmcError::Verify(format!("the boot override reads back as {b:?}, not {target} once"))),
        }
    }
}
