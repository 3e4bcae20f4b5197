//! Boot profiles defined through the API (those from the config file are not stored here).

use super::model::{Machine, StoredProfile};
use super::store::{encode, scan, PROFILES};
use super::{Cmdb, CmdbError};

impl Cmdb {
    /// Every API-defined profile, by name.
    pub async fn profiles(&self) -> Result<Vec<StoredProfile>, CmdbError> {
        self.read(|rtx| scan(&rtx.open_table(PROFILES)?)).await
    }

    /// Creates or replaces a profile.
    pub async fn put_profile(&self, p: StoredProfile) -> Result<StoredProfile, CmdbError> {
        self.write(move |ctx| {
            let mut t = ctx.t.tx.open_table(PROFILES)?;
            t.insert(p.name.as_str(), encode(&p).as_slice())?;
            Ok(p)
        })
        .await
    }

    /// Deletes a profile unless a machine is pinned to it (checked in the same transaction, so
    /// a machine pinned meanwhile is seen).
    pub async fn delete_profile(&self, name: String) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            let all: Vec<Machine> = scan(&ctx.t.machines)?;
            let users: Vec<u64> =
                all.iter().filter(|m| m.boot_profile.as_deref() == Some(&name)).map(|m| m.id).collect();
            if !users.is_empty() {
                return Err(CmdbError::Conflict(format!("machines {users:?} are pinned to boot profile {name}")));
            }
            let existed = ctx.t.tx.open_table(PROFILES)?.remove(name.as_str())?.is_some();
            if existed {
                Ok(())
            } else {
                Err(CmdbError::NotFound(format!("boot profile {name}")))
            }
        })
        .await
    }
}
