//! `[plugins]`: caps on uploaded vendor plugin bundles.

use serde::Deserialize;

use rackboot_model::plugins::StoreLimits;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WirePlugins {
    pub max_bundle_bytes: u64,
    pub max_files: usize,
    pub max_depth: usize,
    pub max_file_bytes: u64,
    pub max_unpacked_bytes: u64,
    pub trusted_keys: Vec<String>,
}

impl Default for WirePlugins {
    fn default() -> Self {
        let StoreLimits { max_bundle_bytes, unpack, .. } = StoreLimits::default();
        WirePlugins {
            max_bundle_bytes,
            max_files: unpack.max_entries,
            max_depth: unpack.max_depth,
            max_file_bytes: unpack.max_file_bytes,
            max_unpacked_bytes: unpack.max_total_bytes,
            trusted_keys: Vec::new(),
        }
    }
}

impl TryFrom<WirePlugins> for StoreLimits {
    type Error = anyhow::Error;

    fn try_from(w: WirePlugins) -> anyhow::Result<StoreLimits> {
        let WirePlugins { max_bundle_bytes, max_files, max_depth, max_file_bytes, max_unpacked_bytes, trusted_keys } =
            w;
        anyhow::ensure!(
            (1 << 10..=4 << 30).contains(&max_bundle_bytes),
            "plugins.max_bundle_bytes must be 1 KiB..=4 GiB"
        );
        anyhow::ensure!((2..=1_000_000).contains(&max_files), "plugins.max_files must be 2..=1000000");
        anyhow::ensure!((1..=64).contains(&max_depth), "plugins.max_depth must be 1..=64");
        anyhow::ensure!(max_file_bytes >= 1, "plugins.max_file_bytes must be at least 1");
        anyhow::ensure!(
            max_unpacked_bytes >= max_file_bytes,
            "plugins.max_unpacked_bytes must be at least plugins.max_file_bytes"
        );
        let unpack = rackboot_agent::bundle::Limits {
            max_entries: max_files,
            max_depth,
            max_file_bytes,
            max_total_bytes: max_unpacked_bytes,
        };
        anyhow::ensure!(trusted_keys.len() <= 256, "plugins.trusted_keys: at most 256 keys");
        let mut pinned_keys = Vec::new();
        for (i, key) in trusted_keys.iter().enumerate() {
            let parsed = rackboot_model::plugins::verify::parse_public_key(key)
                .map_err(|e| anyhow::anyhow!("plugins.trusted_keys[{i}]: {e}"))?;
            pinned_keys.push(parsed.public_key);
        }
        Ok(StoreLimits { max_bundle_bytes, unpack, pinned_keys })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bounds_refused() {
        assert_eq!(StoreLimits::try_from(WirePlugins::default()).unwrap(), StoreLimits::default());
        let w = WirePlugins { max_files: 1, ..Default::default() };
        assert!(StoreLimits::try_from(w).unwrap_err().to_string().contains("max_files"));
        let w = WirePlugins { max_unpacked_bytes: 1, ..Default::default() };
        assert!(StoreLimits::try_from(w).unwrap_err().to_string().contains("max_unpacked_bytes"));
    }
}
