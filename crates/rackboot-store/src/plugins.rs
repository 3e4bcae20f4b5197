//! Plugins in the CMDB: trusted vendor keys, the stored versions (immutable) and each plugin's
//! active version. Every check runs before the first insert of its write, so a refused write
//! changes nothing.

use std::collections::BTreeMap;

use super::store::{decode, encode, scan, PLUGINS, PLUGIN_ACTIVE, PLUGIN_KEYS};
use super::{now_secs, Cmdb, CmdbError};
use rackboot_model::plugins::Ingested;
use rackboot_model::plugins::{version_key, PluginVersion, TrustedKey};

fn semver(v: &str) -> semver::Version {
    semver::Version::parse(v).unwrap_or(semver::Version::new(0, 0, 0))
}

impl Cmdb {
    /// Every trusted key, revoked ones included.
    pub async fn plugin_keys(&self) -> Result<Vec<TrustedKey>, CmdbError> {
        self.read(|rtx| scan(&rtx.open_table(PLUGIN_KEYS)?)).await
    }

    /// Trusts a key for its vendor; a key id already stored (for any vendor) is a conflict.
    pub async fn add_plugin_key(&self, key: TrustedKey) -> Result<TrustedKey, CmdbError> {
        self.write(move |ctx| {
            let mut t = ctx.t.tx.open_table(PLUGIN_KEYS)?;
            if let Some(old) = t.get(key.key_id.as_str())? {
                let old: TrustedKey = decode(old.value())?;
                return Err(CmdbError::Conflict(format!(
                    "key {} is already trusted for vendor {}",
                    old.key_id, old.vendor
                )));
            }
            t.insert(key.key_id.as_str(), encode(&key).as_slice())?;
            Ok(key)
        })
        .await
    }

    /// Revokes a key (once; revoking again keeps the first time).
    pub async fn revoke_plugin_key(&self, key_id: String) -> Result<TrustedKey, CmdbError> {
        self.write(move |ctx| {
            let mut t = ctx.t.tx.open_table(PLUGIN_KEYS)?;
            let mut key: TrustedKey = match t.get(key_id.as_str())? {
                Some(v) => decode(v.value())?,
                None => return Err(CmdbError::NotFound(format!("trusted key {key_id}"))),
            };
            key.revoked_at.get_or_insert_with(now_secs);
            t.insert(key_id.as_str(), encode(&key).as_slice())?;
            Ok(key)
        })
        .await
    }

    /// Records that a profile's plugin fits nothing on machine `id` (`plugin.unmatched`).
    pub async fn plugin_unmatched(&self, id: u64, detail: serde_json::Value) -> Result<(), CmdbError> {
        self.write(move |ctx| super::events::push_event(ctx, id, super::EventKind::PluginUnmatched, detail)).await
    }

    /// Every stored plugin version.
    pub async fn plugin_versions(&self) -> Result<Vec<PluginVersion>, CmdbError> {
        self.read(|rtx| scan(&rtx.open_table(PLUGINS)?)).await
    }

    /// Plugin name -> its active version.
    pub async fn active_plugins(&self) -> Result<BTreeMap<String, String>, CmdbError> {
        self.read(|rtx| {
            let t = rtx.open_table(PLUGIN_ACTIVE)?;
            let mut out = BTreeMap::new();
            for row in t.iter()? {
                let (k, v) = row?;
                out.insert(k.value().to_string(), v.value().to_string());
            }
            Ok(out)
        })
        .await
    }

    /// Stores a new version. The same name and version again is accepted only with the same
    /// bytes; a version below the newest needs `allow_downgrade`; a name belongs to the vendor
    /// that first stored it. A version above the active one (or the first) becomes active.
    pub async fn put_plugin_version(&self, v: PluginVersion, allow_downgrade: bool) -> Result<Ingested, CmdbError> {
        self.write(move |ctx| {
            let mut t = ctx.t.tx.open_table(PLUGINS)?;
            let mut active = ctx.t.tx.open_table(PLUGIN_ACTIVE)?;
            if let Some(old) = t.get(v.key().as_str())? {
                let old: PluginVersion = decode(old.value())?;
                if old.sha256 == v.sha256 {
                    return Ok(Ingested { version: old, created: false, activated: false });
                }
                return Err(CmdbError::Conflict(format!(
                    "{} {} is already stored with other content (sha256 {}); versions are immutable: give the new bundle a new version",
                    v.name, v.version, old.sha256
                )));
            }
            let prefix = format!("{}/", v.name);
            let mut siblings = Vec::new();
            for row in t.range(prefix.as_str()..)? {
                let (k, val) = row?;
                if !k.value().starts_with(&prefix) {
                    break;
                }
                siblings.push(decode::<PluginVersion>(val.value())?);
            }
            if let Some(other) = siblings.iter().find(|s| s.vendor != v.vendor) {
                return Err(CmdbError::Conflict(format!("plugin {} belongs to vendor {}", v.name, other.vendor)));
            }
            let new = semver(&v.version);
            if let Some(top) = siblings.iter().map(|s| semver(&s.version)).max().filter(|top| *top > new) {
                if !allow_downgrade {
                    return Err(CmdbError::Conflict(format!(
                        "{} {} is lower than the stored {top}: a downgrade needs allow_downgrade (--allow-downgrade)",
                        v.name, v.version
                    )));
                }
            }
            let current = active.get(v.name.as_str())?.map(|a| semver(a.value()));
            let activated = current.is_none_or(|c| new > c);
            t.insert(v.key().as_str(), encode(&v).as_slice())?;
            if activated {
                active.insert(v.name.as_str(), v.version.as_str())?;
            }
            Ok(Ingested { version: v, created: true, activated })
        })
        .await
    }

    /// Makes `version` the active one; `None` rolls back to the highest version below the
    /// active one. A version whose key is revoked cannot become active.
    pub async fn activate_plugin(&self, name: String, version: Option<String>) -> Result<String, CmdbError> {
        self.write(move |ctx| {
            let t = ctx.t.tx.open_table(PLUGINS)?;
            let keys = ctx.t.tx.open_table(PLUGIN_KEYS)?;
            let mut active = ctx.t.tx.open_table(PLUGIN_ACTIVE)?;
            let current = active.get(name.as_str())?.map(|a| a.value().to_string());
            let prefix = format!("{name}/");
            let mut versions = Vec::new();
            for row in t.range(prefix.as_str()..)? {
                let (k, val) = row?;
                if !k.value().starts_with(&prefix) {
                    break;
                }
                versions.push(decode::<PluginVersion>(val.value())?);
            }
            if versions.is_empty() {
                return Err(CmdbError::NotFound(format!("plugin {name}")));
            }
            let target = match version {
                Some(want) => versions
                    .into_iter()
                    .find(|v| v.version == want)
                    .ok_or_else(|| CmdbError::NotFound(format!("plugin {name} version {want}")))?,
                None => {
                    let cur = semver(current.as_deref().unwrap_or("0.0.0"));
                    versions
                        .into_iter()
                        .filter(|v| semver(&v.version) < cur)
                        .max_by_key(|v| semver(&v.version))
                        .ok_or_else(|| {
                            CmdbError::Conflict(format!("plugin {name} has no version below the active one"))
                        })?
                }
            };
            let revoked = match keys.get(target.key_id.as_str())? {
                Some(k) => decode::<TrustedKey>(k.value())?.revoked_at.is_some(),
                None => true,
            };
            if revoked {
                return Err(CmdbError::Conflict(format!(
                    "{name} {} was signed by key {}, which is revoked",
                    target.version, target.key_id
                )));
            }
            active.insert(name.as_str(), target.version.as_str())?;
            Ok(target.version)
        })
        .await
    }

    /// Deletes a version; the active one only when it is the plugin's last.
    pub async fn delete_plugin_version(&self, name: String, version: String) -> Result<PluginVersion, CmdbError> {
        self.write(move |ctx| {
            let mut t = ctx.t.tx.open_table(PLUGINS)?;
            let mut active = ctx.t.tx.open_table(PLUGIN_ACTIVE)?;
            let key = version_key(&name, &version);
            let gone: PluginVersion = match t.get(key.as_str())? {
                Some(v) => decode(v.value())?,
                None => return Err(CmdbError::NotFound(format!("plugin {name} version {version}"))),
            };
            let prefix = format!("{name}/");
            let others = t
                .range(prefix.as_str()..)?
                .filter_map(Result::ok)
                .take_while(|(k, _)| k.value().starts_with(&prefix))
                .count()
                - 1;
            let is_active = active.get(name.as_str())?.is_some_and(|a| a.value() == version);
            if is_active && others > 0 {
                return Err(CmdbError::Conflict(format!(
                    "{name} {version} is the active version: activate another version first"
                )));
            }
            t.remove(key.as_str())?;
            if is_active {
                active.remove(name.as_str())?;
            }
            Ok(gone)
        })
        .await
    }
}
