//! Plugin bundles in a shared store: on PostgreSQL each bundle's bytes are kept in the store
//! beside its version record, so any appliance can serve any stored version. On the embedded
//! store there is one appliance and its blob directory is the only copy: every call here is a
//! no-op there.

use std::collections::HashSet;
use std::sync::Arc;

use super::{Cmdb, CmdbError};

impl Cmdb {
    /// Keeps a bundle's bytes in the shared store for the other appliances.
    pub async fn share_blob(&self, sha256: &str, bytes: Arc<Vec<u8>>) -> Result<(), CmdbError> {
        let sha = sha256.to_string();
        self.on_pg(move |pg| pg.put_blob(&sha, &bytes)).await.map(|_| ())
    }

    /// A bundle's bytes from the shared store (`None`: not shared, or not there).
    pub async fn shared_blob(&self, sha256: &str) -> Result<Option<Vec<u8>>, CmdbError> {
        let sha = sha256.to_string();
        Ok(self.on_pg(move |pg| pg.blob(&sha)).await?.flatten())
    }

    /// The hashes of the bundles in the shared store (`None` on the embedded store).
    pub async fn shared_blob_names(&self) -> Result<Option<HashSet<String>>, CmdbError> {
        Ok(self.on_pg(|pg| pg.blob_names()).await?.map(|v| v.into_iter().collect()))
    }

    /// Removes shared bytes no version names that are older than `secs`; how many.
    pub async fn sweep_shared_blobs(&self, secs: f64) -> Result<u64, CmdbError> {
        Ok(self.on_pg(move |pg| pg.sweep_blobs(secs)).await?.unwrap_or(0))
    }

    /// Removes the shared bytes of `sha256` unless a version names them.
    pub async fn unshare_blob(&self, sha256: &str) -> Result<(), CmdbError> {
        let sha = sha256.to_string();
        self.on_pg(move |pg| pg.delete_blob(&sha)).await.map(|_| ())
    }
}
