//! Signed vendor hardware plugins: a `.tar.gz` with `manifest.toml`, signed with minisign by a
//! trusted vendor key, stored by content hash and delivered to BootOS agents by that hash.
//!
//! - [`manifest`]: the manifest's shape and rules, and which machines a plugin fits.
//! - [`params`]: the parameters' JSON Schema (a documented subset) and their validation.
//! - [`verify`]: minisign keys and signatures (checked before anything is unpacked).
//! - [`refs`]: a hardware profile's reference to a plugin, and a finished plugin job's event.
//!
//! Here are the records and their pure rules; the upload pipeline, the blob directory and the
//! resolving of references are the control layer's, and the store keeps the records.

pub mod manifest;
pub mod params;
pub mod refs;
pub mod verify;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use manifest::Manifest;
pub use rackboot_agent::bundle::FileEntry;

/// A vendor's minisign public key that rackboot trusts for that vendor's plugins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TrustedKey {
    /// The key id as `minisign` prints it (hex, in the `.pub` file's comment).
    pub key_id: String,
    /// The only vendor whose plugins this key may sign.
    pub vendor: String,
    /// The public key's base64 line.
    pub public_key: String,
    pub added_at: u64,
    pub added_by: String,
    /// Set once revoked: the key verifies nothing more and its plugins are disabled.
    #[serde(default)]
    pub revoked_at: Option<u64>,
}

/// One uploaded version of a plugin (immutable once stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PluginVersion {
    pub name: String,
    pub version: String,
    pub vendor: String,
    /// SHA-256 of the bundle as uploaded: its blob's name, and what agents check.
    pub sha256: String,
    pub size: u64,
    /// The trusted key that signed it.
    pub key_id: String,
    pub manifest: Manifest,
    /// Every file in the bundle with its hash.
    pub files: Vec<FileEntry>,
    pub uploaded_at: u64,
    pub uploaded_by: String,
    /// The detached minisign signature it was uploaded with, kept so that every appliance that
    /// serves it checks it again (empty: stored before signatures were kept).
    #[serde(default)]
    pub signature: String,
}

impl PluginVersion {
    /// The CMDB key: `name/version`.
    pub fn key(&self) -> String {
        version_key(&self.name, &self.version)
    }
}

/// The CMDB key of a plugin version.
pub fn version_key(name: &str, version: &str) -> String {
    format!("{name}/{version}")
}

/// The plugin store's limits and this appliance's own key pin (`[plugins]` in the config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreLimits {
    /// Largest bundle accepted, compressed bytes.
    pub max_bundle_bytes: u64,
    /// Caps on the bundle's contents.
    pub unpack: rackboot_agent::bundle::Limits,
    /// Public keys (base64 lines) this appliance accepts signatures of, whatever the CMDB's key
    /// list says; empty: the CMDB's unrevoked keys. A shared store's holder can then add a key
    /// to the list but not make this appliance serve what it signed.
    pub pinned_keys: Vec<String>,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            max_bundle_bytes: 128 << 20,
            unpack: rackboot_agent::bundle::Limits::default(),
            pinned_keys: Vec::new(),
        }
    }
}

/// What an upload did.
#[derive(Debug, Clone)]
pub struct Ingested {
    pub version: PluginVersion,
    /// False: this exact bundle was already stored (an upload is idempotent).
    pub created: bool,
    /// It became the active version.
    pub activated: bool,
}
