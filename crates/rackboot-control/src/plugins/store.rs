//! The upload pipeline and the blob directory (`<data_dir>/plugins/blobs/<sha256>`).
//!
//! An upload is verified (signature, then every entry, then the manifest and its vendor) from
//! memory; only then is its blob written to `tmp/`, synced, and renamed into `blobs/`, and the
//! version recorded in the CMDB. A refusal writes nothing; a failed record removes the blob it
//! wrote; a crash in between leaves a blob no record names, which the next start removes. On a
//! shared (PostgreSQL) store the bytes are also kept in the store before the record is written
//! (and again after it), an appliance serving a version uploaded through another fetches them
//! from there, and bytes no version names are removed from the store an hour after they came.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rackboot_agent::bundle::sha256_hex;

pub use rackboot_model::plugins::{Ingested, StoreLimits};

use super::{unpack, verify, PluginError, PluginVersion};
use crate::cmdb::Cmdb;

/// The plugin store: the blob directory and the CMDB records.
pub struct Store {
    dir: PathBuf,
    cmdb: Cmdb,
    pub limits: StoreLimits,
    /// Writing a blob and recording it happen one upload at a time, so a failed upload never
    /// removes a blob another upload of the same bytes has just recorded.
    commit: tokio::sync::Mutex<()>,
    /// Uploads held in memory at once.
    pub uploads: Arc<tokio::sync::Semaphore>,
    /// (SHA-256, signature) of blobs on disk whose kept signature was checked since the start.
    checked: std::sync::Mutex<std::collections::HashSet<(String, String)>>,
}

/// Uploads verified at the same time (each holds its bundle in memory).
pub const MAX_CONCURRENT_UPLOADS: usize = 2;

impl Store {
    /// Opens `<data_dir>/plugins`, emptying its `tmp/` (uploads a crash interrupted).
    pub fn open(data_dir: &Path, cmdb: Cmdb, limits: StoreLimits) -> Result<Store, PluginError> {
        let dir = data_dir.join("plugins");
        let tmp = dir.join("tmp");
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
        }
        for d in [dir.join("blobs"), tmp] {
            std::fs::create_dir_all(&d).map_err(|e| io(&d, e))?;
        }
        Ok(Store {
            dir,
            cmdb,
            limits,
            commit: tokio::sync::Mutex::new(()),
            uploads: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_UPLOADS)),
            checked: Default::default(),
        })
    }

    /// The keys this appliance trusts now: the CMDB's list, narrowed to `[plugins]
    /// trusted_keys` when the config pins some.
    pub async fn trusted_keys(&self) -> Result<Vec<super::TrustedKey>, PluginError> {
        let mut keys = self.cmdb.plugin_keys().await?;
        let pin = &self.limits.pinned_keys;
        if !pin.is_empty() {
            keys.retain(|k| pin.contains(&k.public_key));
        }
        Ok(keys)
    }

    /// Removes blobs no stored version names (left by a crash between write and record).
    pub async fn sweep(&self) -> Result<usize, PluginError> {
        let _g = self.commit.lock().await;
        let named: std::collections::BTreeSet<String> =
            self.cmdb.plugin_versions().await?.into_iter().map(|v| v.sha256).collect();
        // On a shared store: bytes no version names, left there by a crash between the copy
        // and the record, once they are older than any upload still in progress.
        match self.cmdb.sweep_shared_blobs(3600.0).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(removed = n, "plugin bundles no version names were removed from the shared store"),
            Err(error) => tracing::warn!(%error, "sweeping the shared store's plugin bundles"),
        }
        let blobs = self.dir.join("blobs");
        let mut removed = 0;
        for e in std::fs::read_dir(&blobs).map_err(|e| io(&blobs, e))? {
            let e = e.map_err(|e| io(&blobs, e))?;
            if !named.contains(e.file_name().to_string_lossy().as_ref()) {
                std::fs::remove_file(e.path()).map_err(|err| io(&e.path(), err))?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// The blob of a stored version, on this appliance's disk: fetched first from the shared
    /// store when it was uploaded through another appliance. Before it is served its hash and
    /// its kept signature are checked against this appliance's trust set (once per start for a
    /// blob on disk), so neither an altered store copy nor an altered record gets an agent to
    /// run bytes no trusted key signed.
    pub async fn local_blob(&self, v: &PluginVersion) -> Result<PathBuf, PluginError> {
        let path = self.blob_path(&v.sha256);
        let memo = (v.sha256.clone(), v.signature.clone());
        if self.checked.lock().expect("checked lock").contains(&memo) {
            return Ok(path);
        }
        // One fetch or check at a time: agents asking for the same bundle together wait for the
        // first and then find it checked, and memory holds one bundle, not one per agent.
        let _g = self.commit.lock().await;
        if self.checked.lock().expect("checked lock").contains(&memo) {
            return Ok(path);
        }
        let on_disk = match tokio::fs::read(&path).await {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io(&path, e)),
        };
        let fetched = on_disk.is_none();
        let bytes = match on_disk {
            Some(b) => b,
            None => self
                .cmdb
                .shared_blob(&v.sha256)
                .await?
                .ok_or_else(|| PluginError::Io(format!("the bundle {} is not in {}", v.sha256, path.display())))?,
        };
        let got = sha256_hex(&bytes);
        if got != v.sha256 {
            let whose = if fetched { "the shared store's copy" } else { "the blob on disk" };
            return Err(PluginError::Io(format!("{whose} of {} has the hash {got}", v.sha256)));
        }
        // A version recorded before signatures were kept was checked when it was uploaded here;
        // one from another appliance must prove itself.
        if !v.signature.is_empty() || fetched {
            let keys = self.trusted_keys().await?;
            let (ver, shared_bytes) = (v.clone(), Arc::new(bytes));
            let b = shared_bytes.clone();
            tokio::task::spawn_blocking(move || verify::stored(&keys, &ver, &b))
                .await
                .map_err(|e| PluginError::Io(format!("verifying: {e}")))?
                .map_err(|why| PluginError::Refused(format!("{} {}: {why}", v.name, v.version)))?;
            if fetched {
                let (blobs, tmp, sha) = (self.dir.join("blobs"), self.dir.join("tmp"), v.sha256.clone());
                tokio::task::spawn_blocking(move || write_blob(&blobs, &tmp, &sha, &shared_bytes))
                    .await
                    .map_err(|e| PluginError::Io(format!("writing: {e}")))??;
                tracing::info!(sha256 = %v.sha256, "plugin bundle fetched from the shared store, its signature checked");
            }
        }
        self.checked.lock().expect("checked lock").insert(memo);
        Ok(path)
    }

    /// Puts every stored version's blob this appliance holds and the shared store lacks into
    /// the store (a store migrated from an embedded one, or blobs from before sharing).
    pub async fn publish(&self) -> Result<usize, PluginError> {
        let Some(shared) = self.cmdb.shared_blob_names().await? else { return Ok(0) };
        let named: std::collections::BTreeSet<String> =
            self.cmdb.plugin_versions().await?.into_iter().map(|v| v.sha256).collect();
        let mut published = 0;
        for sha in named.iter().filter(|s| !shared.contains(*s)) {
            let path = self.blob_path(sha);
            let Ok(bytes) = tokio::fs::read(&path).await else { continue };
            if sha256_hex(&bytes) != *sha {
                tracing::warn!(path = %path.display(), "a plugin blob does not match its hash; not shared");
                continue;
            }
            self.cmdb.share_blob(sha, Arc::new(bytes)).await?;
            published += 1;
        }
        Ok(published)
    }

    /// Where the blob of `sha256` (lowercase hex, checked by the caller) lives.
    pub fn blob_path(&self, sha256: &str) -> PathBuf {
        self.dir.join("blobs").join(sha256)
    }

    /// Verifies, checks and stores one bundle with its detached signature.
    pub async fn ingest(
        &self,
        bundle: Vec<u8>,
        sig: Vec<u8>,
        allow_downgrade: bool,
        by: &str,
    ) -> Result<Ingested, PluginError> {
        let max = self.limits.max_bundle_bytes;
        if bundle.len() as u64 > max {
            return Err(PluginError::TooLarge(format!("bundle larger than {max} bytes (plugins.max_bundle_bytes)")));
        }
        let keys = self.trusted_keys().await?;
        let limits = self.limits.unpack;
        let (bundle, key, checked, sha256, sig) = tokio::task::spawn_blocking(move || {
            let key = verify::signer(&keys, &bundle, &sig).map_err(PluginError::Refused)?.clone();
            let checked = unpack::inspect(&bundle, &limits).map_err(PluginError::Refused)?;
            if checked.manifest.vendor != key.vendor {
                return Err(PluginError::Refused(format!(
                    "signed by key {} of vendor {}, but the manifest says vendor {}: a key signs only its own vendor's plugins",
                    key.key_id, key.vendor, checked.manifest.vendor
                )));
            }
            let sha256 = sha256_hex(&bundle);
            // `signer` read it as text.
            let sig = String::from_utf8(sig).unwrap_or_default();
            Ok((bundle, key, checked, sha256, sig))
        })
        .await
        .map_err(|e| PluginError::Io(format!("verifying: {e}")))??;
        let m = checked.manifest;
        let version = PluginVersion {
            name: m.name.clone(),
            version: m.version.clone(),
            vendor: m.vendor.clone(),
            sha256: sha256.clone(),
            size: bundle.len() as u64,
            key_id: key.key_id,
            manifest: m,
            files: checked.files,
            uploaded_at: crate::cmdb::now_secs(),
            uploaded_by: by.to_string(),
            signature: sig,
        };
        let _g = self.commit.lock().await;
        let bundle = Arc::new(bundle);
        let (blobs, tmp, sha, bytes) = (self.dir.join("blobs"), self.dir.join("tmp"), sha256.clone(), bundle.clone());
        let wrote = tokio::task::spawn_blocking(move || write_blob(&blobs, &tmp, &sha, &bytes))
            .await
            .map_err(|e| PluginError::Io(format!("writing: {e}")))??;
        // On a shared store the other appliances serve this version from the store's copy: the
        // bytes go there before the record names them.
        let bytes_again = bundle.clone();
        if let Err(e) = self.cmdb.share_blob(&sha256, bundle).await {
            if wrote {
                self.drop_unused(&sha256).await;
            }
            return Err(e.into());
        }
        match self.cmdb.put_plugin_version(version, allow_downgrade).await {
            Ok(done) => {
                // Shared again now that the record names them: a delete of the same bytes
                // through another appliance between the copy and the record took them away.
                if let Err(error) = self.cmdb.share_blob(&sha256, bytes_again).await {
                    tracing::warn!(%error, sha256, "sharing a plugin bundle after its record; the next start retries");
                }
                Ok(done)
            }
            Err(e) => {
                if wrote {
                    self.drop_unused(&sha256).await;
                }
                Err(e.into())
            }
        }
    }

    /// Deletes one version and its blob when no other version has the same bytes.
    pub async fn delete(&self, name: &str, version: &str) -> Result<PluginVersion, PluginError> {
        let _g = self.commit.lock().await;
        let gone = self.cmdb.delete_plugin_version(name.to_string(), version.to_string()).await?;
        self.drop_unused(&gone.sha256).await;
        Ok(gone)
    }

    async fn drop_unused(&self, sha256: &str) {
        let used = match self.cmdb.plugin_versions().await {
            Ok(all) => all.iter().any(|v| v.sha256 == sha256),
            Err(_) => true,
        };
        if !used {
            let path = self.blob_path(sha256);
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "removing an unused plugin blob");
            }
            if let Err(e) = self.cmdb.unshare_blob(sha256).await {
                tracing::warn!(sha256, error = %e, "removing an unused plugin blob from the shared store");
            }
        }
    }
}

/// Writes the blob through `tmp/` (write, fsync, rename, fsync the directory); false when a
/// blob with these bytes was already there.
fn write_blob(blobs: &Path, tmp: &Path, sha256: &str, bytes: &[u8]) -> Result<bool, PluginError> {
    let target = blobs.join(sha256);
    if target.exists() {
        return Ok(false);
    }
    let nonce = crate::cmdb::now_secs() ^ u64::from(std::process::id());
    let part = tmp.join(format!("{sha256}.{nonce}.part"));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&part)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&part, &target)?;
        std::fs::File::open(blobs)?.sync_all()
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&part);
        return Err(io(&target, e));
    }
    Ok(true)
}

fn io(path: &Path, e: std::io::Error) -> PluginError {
    PluginError::Io(format!("{}: {e}", path.display()))
}
