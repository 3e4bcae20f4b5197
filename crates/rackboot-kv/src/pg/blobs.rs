//! Plugin bundles kept in a shared store (`plugin_blobs`, by SHA-256), so an appliance can serve
//! a version that was uploaded through another.

use super::Pg;
use crate::CmdbError;

impl Pg {
    /// Keeps `bytes` under `sha256` (already there: nothing changes).
    pub fn put_blob(&self, sha256: &str, bytes: &[u8]) -> Result<(), CmdbError> {
        let client = self.client()?;
        self.block(client.execute(
            "INSERT INTO plugin_blobs (sha256, bytes) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING",
            &[&sha256, &bytes],
        ))
        .map(|_| ())
        .map_err(|e| self.error(e))
    }

    /// The bytes kept under `sha256`, if any.
    pub fn blob(&self, sha256: &str) -> Result<Option<Vec<u8>>, CmdbError> {
        let client = self.client()?;
        let row = self
            .block(client.query_opt("SELECT bytes FROM plugin_blobs WHERE sha256 = $1", &[&sha256]))
            .map_err(|e| self.error(e))?;
        Ok(row.map(|r| r.get(0)))
    }

    /// The hashes of every blob kept.
    pub fn blob_names(&self) -> Result<Vec<String>, CmdbError> {
        let client = self.client()?;
        let rows = self.block(client.query("SELECT sha256 FROM plugin_blobs", &[])).map_err(|e| self.error(e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Removes the bytes under `sha256` unless a stored version names them, in one statement
    /// (an upload of the same bytes through another appliance shares them again after its
    /// record, so the two cannot leave a version without its bytes).
    pub fn delete_blob(&self, sha256: &str) -> Result<(), CmdbError> {
        let client = self.client()?;
        self.block(client.execute(
            "DELETE FROM plugin_blobs WHERE sha256 = $1 AND NOT EXISTS (SELECT 1 FROM plugins WHERE v->>'sha256' = $1)",
            &[&sha256],
        ))
        .map(|_| ())
        .map_err(|e| self.error(e))
    }

    /// Removes bytes no stored version names that were added more than `secs` ago (an upload
    /// in progress elsewhere has its record written within that time); how many.
    pub fn sweep_blobs(&self, secs: f64) -> Result<u64, CmdbError> {
        let client = self.client()?;
        self.block(client.execute(
            "DELETE FROM plugin_blobs b WHERE added_at < now() - make_interval(secs => $1)
             AND NOT EXISTS (SELECT 1 FROM plugins WHERE v->>'sha256' = b.sha256)",
            &[&secs],
        ))
        .map_err(|e| self.error(e))
    }
}
